// Helpers of the lowering tests (lowering_test.cc, tile_schedule_test.cc):
// one op lowered as a kernel for a given CPU, and a kernel run against the
// op's reference kernel.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.h"
#include "lower/lower.h"
#include "op_test_util.h"
#include "tir/transform/passes.h"

namespace kiln::testing {

inline TensorDesc f32(Shape s) { return {std::move(s), DType::Float32}; }

// Values uniform in `range` (integers in it for integer dtypes).
inline Tensor random_input(const TensorDesc& d, std::pair<double, double> range, Lcg& r) {
  Tensor t = Tensor::empty(d.shape, d.dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = is_float(d.dtype) ? r.uniform(range.first, range.second)
                                 : double(r.integer(int64_t(range.first), int64_t(range.second)));
    t.set_from_double(i, v);
  }
  return t;
}

// The kernel `name` of the one op `op` on `in` (its outputs inferred),
// lowered for `cpu`.
inline std::optional<tir::PrimFunc> lower_op(const std::string& name, const std::string& op,
                                             const std::vector<TensorDesc>& in, const Attrs& attrs,
                                             const schedule::CpuTarget& cpu) {
  std::vector<TensorDesc> out = infer_op(op_named(op), in, attrs);
  return lower::lower_kernel(lower::single_op_kernel(name, op, in, out, attrs), nullptr, cpu);
}

// Kernel `f` (named `name`), JIT-compiled and run on `inputs`, matches the
// reference kernel of `op` element by element within `tolerance`.
inline void expect_matches_reference(const tir::PrimFunc& f, const std::string& name, const std::string& op,
                                     std::vector<Tensor> inputs, const Attrs& attrs, double tolerance) {
  auto jit = codegen::JitModule::create({tir::lower_for_build(f)});
  Tensor want = run1(op, inputs, attrs);
  Tensor got = Tensor::empty(want.shape(), want.dtype());
  std::vector<void*> args;
  for (Tensor& t : inputs) args.push_back(t.raw());
  args.push_back(got.raw());
  jit->run(name, args);
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), tolerance) << name << " element " << i;
}

}  // namespace kiln::testing
