// Helpers of the lowering tests (lowering_test.cc, lowering_dtypes_test.cc, tile_schedule_test.cc):
// one op lowered as a kernel for a given CPU, and a kernel run against the
// op's reference kernel.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/codegen.h"
#include "lower/lower.h"
#include "op_test_util.h"
#include "runtime/host_code.h"
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

// The CPUs a case is scheduled for: this one and, on an AVX-512 machine,
// also AVX2 (16 registers of 8 float32 lanes: other tiles, blocks and
// tails), so both schedules are checked wherever the test runs.
inline std::vector<schedule::CpuTarget> schedule_targets() {
  std::vector<schedule::CpuTarget> targets = {schedule::host_cpu_target()};
  if (targets[0].vector_bytes > 32) {
    targets.push_back({32, 16});
    targets.back().float16_conversions = true;  // as x86-64-v3 (F16C)
  }
  return targets;
}

// Kernel `f` (named `name`) of the one-output op `op`, JIT-compiled and run
// on `inputs`, and the reference kernel on them: {compiled, reference}.
inline std::pair<Tensor, Tensor> compiled_and_reference(const tir::PrimFunc& f, const std::string& name,
                                                        const std::string& op, std::vector<Tensor> inputs,
                                                        const Attrs& attrs) {
  auto jit = codegen::JitModule::create({tir::lower_for_build(f)});
  Tensor want = run1(op, inputs, attrs);
  Tensor got = Tensor::empty(want.shape(), want.dtype());
  std::vector<void*> args;
  for (Tensor& t : inputs) args.push_back(t.raw());
  args.push_back(got.raw());
  jit->run(name, args);
  return {got, want};
}

// The same for `op` lowered for `cpu` on the inputs' types and shapes;
// a kiln::Error when it is not lowered.
inline std::pair<Tensor, Tensor> compiled_and_reference(
    const std::string& name, const std::string& op, std::vector<Tensor> inputs, const Attrs& attrs,
    const schedule::CpuTarget& cpu = schedule::host_cpu_target()) {
  std::vector<TensorDesc> in;
  for (const Tensor& t : inputs) in.push_back({t.shape(), t.dtype()});
  auto f = lower_op(name, op, in, attrs, cpu);
  if (!f) throw Error(op + " (" + name + ") was not lowered");
  return compiled_and_reference(*f, name, op, std::move(inputs), attrs);
}

// Kernel `f` (named `name`), JIT-compiled and run on `inputs`, matches the
// reference kernel of `op` element by element within `tolerance`.
inline void expect_matches_reference(const tir::PrimFunc& f, const std::string& name, const std::string& op,
                                     std::vector<Tensor> inputs, const Attrs& attrs, double tolerance) {
  auto [got, want] = compiled_and_reference(f, name, op, std::move(inputs), attrs);
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), tolerance) << name << " element " << i;
}

// Kernel `f` through the tensor-IR build passes for `cpu` (its vector width
// and registers), as a model's kernels go.
inline tir::PrimFunc built_for(const tir::PrimFunc& f, const schedule::CpuTarget& cpu) {
  tir::TirPassOptions options;
  options.vector_bytes = cpu.vector_bytes;
  options.vector_registers = cpu.vector_registers;
  return tir::lower_for_build(f, options);
}

// `funcs` linked into one host shared object and loaded, as a model's kernels are.
inline std::unique_ptr<LoadedHostCode> load_kernels(const std::vector<tir::PrimFunc>& funcs,
                                                    const std::string& what) {
  codegen::HostObject obj = codegen::emit_host_shared_object(funcs);
  HostCode code;
  code.cpu_features = obj.cpu_features;
  code.imports = obj.imports;
  code.shared_object = obj.bytes;
  for (const auto& f : funcs) code.kernels.push_back({f->name, {}});
  return LoadedHostCode::load(code, what);
}

// Kernel `symbol` of `code` run on `inputs` into outputs of `out`, filled
// with garbage (77) first so an element the kernel never writes shows; its
// status in `status`.
inline std::vector<Tensor> run_kernel(const LoadedHostCode& code, const std::string& symbol,
                                      std::vector<Tensor>& inputs, const std::vector<TensorDesc>& out,
                                      int32_t& status) {
  std::vector<Tensor> got;
  std::vector<void*> args;
  for (auto& t : inputs) args.push_back(t.raw());
  for (const auto& d : out) {
    got.push_back(Tensor::empty(d.shape, d.dtype));
    for (int64_t i = 0; i < got.back().numel(); ++i) got.back().set_from_double(i, 77);
  }
  for (auto& t : got) args.push_back(t.raw());
  status = code.find(symbol)(args.data());
  return got;
}

// The largest magnitude of `t`'s elements (tolerances scale with it).
inline double largest_magnitude(const Tensor& t) {
  double scale = 0;
  for (int64_t i = 0; i < t.numel(); ++i) scale = std::max(scale, std::fabs(t.get_as_double(i)));
  return scale;
}

}  // namespace kiln::testing
