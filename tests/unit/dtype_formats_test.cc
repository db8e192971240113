// The element types float64, int16, uint16, uint32, uint64 and bfloat16 in the
// file formats and the compiled path: .npy round trips (bfloat16 is refused),
// .kir text round trips of constants, and a compiled model per type checked
// bit for bit against the reference interpreter (compiled code but for
// bfloat16's, which runs on reference kernels).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "driver/compile_model.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "kiln/runtime/npy.h"
#include "random_args.h"
#include "runtime/vm.h"
#include "test_util.h"

namespace kiln {
namespace {

const DType kNewTypes[] = {DType::Float64, DType::Int16,  DType::UInt16,
                           DType::UInt32,  DType::UInt64, DType::BFloat16};

Tensor sample(DType t) {
  Tensor x = Tensor::empty({2, 3}, t);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set_from_double(i, is_unsigned(t) ? double(i * 1000) : double(i) - 2.75);
  return x;
}

TEST(DTypeFormats, NpyRoundTripsEveryNumpyType) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    if (t == DType::BFloat16) continue;
    SCOPED_TRACE(std::string(dtype_name(t)));
    Tensor x = sample(t);
    Tensor y = decode_npy(encode_npy(x), "test.npy");
    EXPECT_TRUE(y.bitwise_equal(x));
  }
  std::string bytes = encode_npy(sample(DType::Float64));
  EXPECT_NE(bytes.find("'descr': '<f8'"), std::string::npos);
  EXPECT_NE(encode_npy(sample(DType::UInt32)).find("'descr': '<u4'"), std::string::npos);
  EXPECT_NE(encode_npy(sample(DType::Int16)).find("'descr': '<i2'"), std::string::npos);
  EXPECT_NE(testing::error_of([] {
              encode_npy(sample(DType::BFloat16));
            }).find("npy: bfloat16 has no numpy dtype; convert the tensor to float32"),
            std::string::npos);
}

// One function returning a constant: the printed values and a second round trip.
std::string const_function(const std::string& type, const std::string& values) {
  return "def @main() -> Tensor[(2,), " + type + "] {\n  return const(Tensor[(2,), " + type + "], [" +
         values + "])\n}\n";
}

TEST(DTypeFormats, KirConstantsOfTheNewTypesReadBack) {
  struct Case {
    const char* type;
    const char* values;
    double first, second;
  };
  const Case cases[] = {
      {"float64", "0.1, 1e-300", 0.1, 1e-300},
      {"int16", "-32768, 32767", -32768, 32767},
      {"uint16", "65535, 1", 65535, 1},
      {"uint32", "0, 4294967295", 0, 4294967295.0},
      {"uint64", "9223372036854775807, 3", 9223372036854775807.0, 3},
      {"bfloat16", "1.5, -3.140625", 1.5, -3.140625},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type);
    Module m = parse_module(const_function(c.type, c.values), "test.kir");
    std::string printed = print_module(m);
    EXPECT_NE(printed.find(std::string("Tensor[(2,), ") + c.type + "], [" + c.values + "]"),
              std::string::npos)
        << printed;
    EXPECT_EQ(print_module(parse_module(printed, "printed.kir")), printed);
    std::vector<Tensor> out = interpret(m, "main", {});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(dtype_name(out[0].dtype()), c.type);
    EXPECT_EQ(out[0].get_as_double(0), c.first);
    EXPECT_EQ(out[0].get_as_double(1), c.second);
  }
  // Out-of-range values are errors at their place in the text.
  for (const char* bad_case : {"int16|40000", "uint16|-1", "uint32|4294967296", "bfloat16|1e39"}) {
    std::string spec = bad_case;
    std::string type = spec.substr(0, spec.find('|')), value = spec.substr(spec.find('|') + 1);
    std::string bad =
        testing::error_of([&] { parse_module(const_function(type, value + ", 0"), "bad.kir"); });
    EXPECT_NE(bad.find("value " + value + " is out of range for " + type), std::string::npos) << bad;
  }
}

std::string binary_model(DType t) {
  std::string ty = std::string(dtype_name(t));
  return "def @main(%x: Tensor[(3, 4), " + ty + "], %y: Tensor[(4,), " + ty + "]) -> Tensor[(3, 4), " + ty +
         "] {\n  %a = add(%x, %y)\n  %m = maximum(%a, %x)\n  %s = multiply(%m, %y)\n  return %s\n}\n";
}

TEST(DTypeFormats, CompiledModelsOfTheNewTypesMatchTheInterpreter) {
  for (DType t : kNewTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Module m = parse_module(binary_model(t), "test.kir");
    driver::CompileSummary summary;
    Executable exe = driver::compile_model(m, {}, &summary);
    std::vector<Tensor> args = testing::random_args(*m.find("main"), 7, 0.0, 100.0);
    VirtualMachine vm(exe);
    std::vector<Tensor> got = vm.run(args);
    std::vector<Tensor> want = interpret(m, "main", args);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(got[0].bitwise_equal(want[0]));
    // The ops are compiled (lower::Dtypes::Any), but bfloat16's stay on
    // their reference kernels, and the summary says why.
    if (t != DType::BFloat16) {
      EXPECT_TRUE(summary.reference_ops.empty()) << summary.str();
      continue;
    }
    ASSERT_EQ(summary.reference_ops.count("add"), 1u) << summary.str();
    EXPECT_NE(
        summary.reference_ops.at("add").second.find(std::string(dtype_name(t)) + " tensors are not lowered"),
        std::string::npos)
        << summary.str();
  }
}

}  // namespace
}  // namespace kiln
