#include "codegen/prim_runner.h"

#include <unistd.h>

#include <filesystem>
#include <set>

#include "codegen/codegen.h"
#include "codegen/hexagon.h"
#include "kiln/runtime/npy.h"
#include "runtime/vtcm_pool.h"
#include "tir/mutator.h"
#include "tir/transform/passes.h"

namespace kiln::codegen {

namespace {

// Which data variables the body loads from, stores to, or passes to extern calls.
class BufferUse : public tir::Visitor {
 public:
  std::set<const tir::VarNode*> read, written;

 protected:
  void visit_BufferLoad(const tir::BufferLoadNode& n) override {
    read.insert(n.buffer->data.get());
    tir::Visitor::visit_BufferLoad(n);
  }
  void visit_BufferStore(const tir::BufferStoreNode& n) override {
    written.insert(n.buffer->data.get());
    tir::Visitor::visit_BufferStore(n);
  }
  void visit_Call(const tir::CallNode& n) override {
    if (n.call_kind == tir::CallKind::Extern)
      for (const tir::Expr& a : n.args)
        if (auto* v = tir::as<tir::VarNode>(a)) {
          read.insert(v);
          written.insert(v);
        }
    tir::Visitor::visit_Call(n);
  }
};

DType tensor_dtype(tir::DataType t, const std::string& param, const std::string& fn) {
  using Code = tir::DataType::Code;
  if (t.lanes == 1) {
    if (t.code == Code::Int && t.bits == 8) return DType::Int8;
    if (t.code == Code::UInt && t.bits == 8) return DType::UInt8;
    if (t.code == Code::Int && t.bits == 16) return DType::Int16;
    if (t.code == Code::UInt && t.bits == 16) return DType::UInt16;
    if (t.code == Code::Int && t.bits == 32) return DType::Int32;
    if (t.code == Code::UInt && t.bits == 32) return DType::UInt32;
    if (t.code == Code::Int && t.bits == 64) return DType::Int64;
    if (t.code == Code::UInt && t.bits == 64) return DType::UInt64;
    if (t.code == Code::Float && t.bits == 32) return DType::Float32;
    if (t.code == Code::Float && t.bits == 16) return DType::Float16;
    if (t.code == Code::Float && t.bits == 64) return DType::Float64;
    if (t.code == Code::Bool) return DType::Bool;
  }
  throw Error("parameter %" + param + " of @" + fn + " has element type " + tir::dtype_str(t) +
              ", which kiln cannot read or write as a tensor (kiln's tensors hold scalar int8..int64, "
              "uint8..uint64, float16, float32, float64, bfloat16 and bool); call the kernel from your own "
              "program instead");
}

std::string temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-hexagon-XXXXXX").string();
  KILN_CHECK(mkdtemp(pattern.data()) != nullptr, "cannot create a temporary folder in ",
             std::filesystem::temp_directory_path().string());
  return pattern;
}

// The host: the JIT, with a VTCM pool of the given capacity bound while the kernel runs.
PrimRunResult run_on_host(const tir::PrimFunc& lowered, std::vector<Tensor>& args,
                          const std::vector<PrimParamInfo>& params, const PrimRunOptions& options,
                          uint64_t capacity) {
  CodegenOptions cg;
  cg.link_libs = options.link_libs;
  auto jit = JitModule::create({lowered}, cg);
  std::vector<void*> ptrs;
  for (Tensor& t : args) ptrs.push_back(t.raw());
  VtcmPool pool(capacity);
  {
    ScopedVtcmPool bind(pool);
    jit->run(lowered->name, ptrs);
  }
  PrimRunResult r;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].written) r.outputs.push_back({params[i].name, args[i]});
  r.vtcm_pool = pool.stats().str();
  return r;
}

PrimRunResult run_on_hexagon(const tir::PrimFunc& lowered, std::vector<Tensor>& args,
                             const std::vector<PrimParamInfo>& params, const PrimRunOptions& options,
                             uint64_t capacity) {
  const bool own_dir = options.work_dir.empty();
  const std::string dir = own_dir ? temp_dir() : options.work_dir;
  struct Cleanup {
    std::string dir;
    bool active;
    ~Cleanup() {
      std::error_code ec;
      if (active) std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir, own_dir};
  std::filesystem::create_directories(dir);

  CodegenOptions cg;
  cg.target = options.target;
  cg.target.vtcm_capacity = capacity;
  cg.link_libs = options.link_libs;
  const std::string exe = dir + "/" + lowered->name + ".elf";
  emit_to_file({lowered}, EmitKind::Executable, exe, cg);

  // The harness sees the lowered (flattened) parameters: files go in and
  // come out in that shape.
  std::vector<PrimParamInfo> flat = prim_param_info(*lowered);
  std::vector<std::string> argv = {lowered->name};
  std::vector<std::string> outputs(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const PrimParamInfo& p = params[i];
    std::string in = dir + "/in." + std::to_string(i) + "." + p.name + ".npy";
    if (!p.is_buffer) {
      write_npy(in, args[i]);
      argv.push_back(in);
      continue;
    }
    if (p.read) {
      write_npy(in, args[i].reshape(flat[i].shape));
      argv.push_back(in);
    } else {
      argv.push_back("-");
    }
    if (p.written) outputs[i] = dir + "/out." + std::to_string(i) + "." + p.name + ".npy";
    argv.push_back(p.written ? outputs[i] : "-");
  }
  ProcessResult run = run_hexagon_executable(exe, argv, options.timeout_seconds);
  PrimRunResult r;
  r.log = run.out + run.err;
  const std::string prefix = "kiln-hexagon: VTCM pool: ";
  if (size_t at = run.out.find(prefix); at != std::string::npos) {
    size_t end = run.out.find('\n', at);
    r.vtcm_pool =
        run.out.substr(at + prefix.size(), end == std::string::npos ? end : end - at - prefix.size());
  }
  if (run.exit_code != 0) {
    std::string why = run.err.empty() ? run.out : run.err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    throw Error("@" + lowered->name + " failed on " + options.target.name + " (qemu-hexagon-static, exit " +
                std::to_string(run.exit_code) + "): " + why);
  }
  for (size_t i = 0; i < params.size(); ++i)
    // The harness writes the flattened buffer; the caller gets the parameter's shape.
    if (params[i].written)
      r.outputs.push_back({params[i].name, read_npy(outputs[i]).reshape(params[i].shape)});
  return r;
}

}  // namespace

std::vector<PrimParamInfo> prim_param_info(const tir::PrimFuncNode& f) {
  BufferUse use;
  use.visit(f.body);
  std::vector<PrimParamInfo> out;
  for (const tir::PrimParam& p : f.params) {
    PrimParamInfo info;
    info.is_buffer = p.buffer != nullptr;
    info.name = p.buffer ? p.buffer->name : p.var->name;
    if (!p.buffer) {
      info.dtype = tensor_dtype(p.var->dtype, info.name, f.name);
      info.read = true;
      out.push_back(info);
      continue;
    }
    info.dtype = tensor_dtype(p.buffer->dtype, info.name, f.name);
    for (const tir::Expr& e : p.buffer->shape) {
      auto* imm = tir::as<tir::IntImmNode>(e);
      if (!imm)
        throw Error("parameter %" + info.name + " of @" + f.name +
                    " has a symbolic shape; kiln run needs constant shapes");
      info.shape.push_back(imm->value);
    }
    info.read = use.read.count(p.var.get()) != 0;
    info.written = use.written.count(p.var.get()) != 0;
    out.push_back(info);
  }
  return out;
}

PrimRunResult run_prim_function(const tir::PrimFunc& f, const std::map<std::string, Tensor>& inputs,
                                const PrimRunOptions& options) {
  std::vector<PrimParamInfo> params = prim_param_info(*f);
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const PrimParamInfo& p : params) known = known || p.name == name;
    if (known) continue;
    std::string names;
    for (const PrimParamInfo& p : params) names += (names.empty() ? "%" : ", %") + p.name;
    throw Error("@" + f->name + " has no parameter %" + name + " (its parameters: " + names + ")");
  }
  std::vector<Tensor> args;
  for (const PrimParamInfo& p : params) {
    auto it = inputs.find(p.name);
    if (it == inputs.end()) {
      if (p.needs_input())
        throw Error("parameter %" + p.name + " of @" + f->name +
                    " is read by the kernel; give it with --input " + p.name + "=FILE.npy (" +
                    std::string(dtype_name(p.dtype)) + shape_str(p.shape) + ")");
      args.push_back(Tensor::zeros(p.shape, p.dtype));
      continue;
    }
    const Tensor& t = it->second;
    if (t.dtype() != p.dtype || t.shape() != p.shape)
      throw Error("input %" + p.name + " of @" + f->name + " is " + std::string(dtype_name(t.dtype())) +
                  shape_str(t.shape()) + "; the parameter is " + std::string(dtype_name(p.dtype)) +
                  shape_str(p.shape));
    args.push_back(t.clone());  // outputs are written in place; the caller's tensors stay as they were
  }

  const uint64_t capacity = options.vtcm_capacity.value_or(options.target.vtcm_capacity);
  codegen::Target target = options.target;
  if (!target.is_hexagon()) target.vector_bytes = host_target().vector_bytes;
  tir::TirPassOptions pass_options = tir_pass_options(target);
  pass_options.scratchpad_capacity = capacity;
  pass_options.static_scratchpad_plan = options.static_scratchpad_plan;
  pass_options.check_bounds = options.check_bounds;
  // kiln's Hexagon runtime runs a parallel loop as one task; the host's
  // thread pool runs its tasks at once.
  if (options.target.is_hexagon()) pass_options.parallel_tasks = 1;
  tir::PrimFunc lowered = tir::lower_for_build(f, pass_options);
  if (options.target.is_hexagon()) return run_on_hexagon(lowered, args, params, options, capacity);
  return run_on_host(lowered, args, params, options, capacity);
}

}  // namespace kiln::codegen
