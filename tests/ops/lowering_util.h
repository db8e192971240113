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

// The CPUs a case is scheduled for: this one and, on an AVX-512 machine,
// also AVX2 (16 registers of 8 float32 lanes: other tiles, blocks and
// tails), so both schedules are checked wherever the test runs.
inline std::vector<schedule::CpuTarget> schedule_targets() {
  std::vector<schedule::CpuTarget> targets = {schedule::host_cpu_target()};
  if (targets[0].vector_bytes > 32) targets.push_back({32, 16});
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

}  // namespace kiln::testing
