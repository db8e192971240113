#include <gtest/gtest.h>

#include "kiln/runtime/error.h"
#include "kiln/runtime/tensor.h"

namespace kiln {
namespace {

TEST(Tensor, StorageIsAligned) {
  Tensor t = Tensor::zeros({3, 5}, DType::Float32);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kTensorAlignment, 0u);
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(t.nbytes(), 60u);
}

TEST(Tensor, ReshapeAndSliceAreViews) {
  Tensor t = Tensor::from_floats({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor r = t.reshape({3, 2});
  Tensor s = t.slice_outer(1, 2);
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_EQ(s.data<float>()[0], 3.0f);
  s.data<float>()[0] = 42.0f;
  EXPECT_EQ(t.data<float>()[3], 42.0f);
  EXPECT_THROW(t.reshape({4}), Error);
}

TEST(Tensor, HalfConversionRoundTrips) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f})
    EXPECT_EQ(half_to_float(float_to_half(f)), f) << f;
}

TEST(Tensor, SetFromDoubleSaturatesIntegers) {
  Tensor t = Tensor::zeros({2}, DType::Int8);
  t.set_from_double(0, 300.0);
  t.set_from_double(1, -300.0);
  EXPECT_EQ(t.data<int8_t>()[0], 127);
  EXPECT_EQ(t.data<int8_t>()[1], -128);
}

}  // namespace
}  // namespace kiln
