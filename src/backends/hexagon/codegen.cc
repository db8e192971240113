// The hexagon backend's codegen (see codegen.h).
#include "backends/hexagon/codegen.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/graph_codegen.h"
#include "backends/hexagon/runtime/region_program.h"
#include "codegen/codegen.h"
#include "driver/kernels.h"
#include "runtime/file_io.h"
#include "tir/transform/passes.h"

namespace kiln::hexagon {
namespace {

const char* kExecutable = "hexagon.executable";

// A scratch folder removed when it goes out of scope.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    path = (std::filesystem::temp_directory_path() / "kiln-hexagon-build-XXXXXX").string();
    KILN_CHECK(mkdtemp(path.data()) != nullptr, "hexagon codegen: cannot create a temporary folder in ",
               std::filesystem::temp_directory_path().string());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

tir::PrimFunc renamed(const tir::PrimFunc& f, const std::string& name) {
  auto copy = std::make_shared<tir::PrimFuncNode>(*f);
  copy->name = name;
  return copy;
}

// The ops of a kernel, for profiles: "nn.conv2d+add+nn.relu".
std::string ops_of(const HostKernel& k) {
  std::string s;
  for (const auto& n : k.ops.nodes) s += (s.empty() ? "" : "+") + n.op;
  return s;
}

// One region: its kernels (appended to `kernels`, named after the region)
// and the program that calls them.
RegionProgram compile_region(const Graph& g, const codegen::Target& target, bool hvx,
                             std::vector<tir::PrimFunc>& kernels, std::vector<HostKernel>& kernel_ops) {
  driver::KernelPlan plan = driver::plan_kernels(g);
  for (const auto& [op, e] : plan.reference_ops)
    throw Error("hexagon codegen: region " + g.name + ": " + op + " cannot be compiled for " + target.name +
                ": " + e.second + "; only regions partitioned for hexagon can be compiled");
  schedule::CpuTarget dsp = codegen::schedule_target(target);
  dsp.vector_compute = hvx;
  driver::LoweredKernels lowered = driver::lower_planned_kernels(g, plan, dsp);

  RegionProgram p;
  p.target = target.name;
  p.executable = kExecutable;
  std::map<std::string, uint32_t> slot_of;
  auto add_slot = [&](const std::string& name, RegionSlot::Kind kind, const TensorDesc& d) {
    slot_of[name] = uint32_t(p.slots.size());
    p.slots.push_back({name, kind, d});
  };
  for (const auto& v : g.inputs) {
    add_slot(v.name, RegionSlot::Kind::Input, v.desc);
    p.inputs.push_back(slot_of[v.name]);
  }
  for (const auto& v : g.constants) add_slot(v.name, RegionSlot::Kind::Constant, v.desc);

  std::map<std::string, std::string> new_name;  // kernel symbol -> this region's
  for (size_t k = 0; k < lowered.funcs.size(); ++k) {
    std::string name = g.name + "_" + lowered.funcs[k]->name;
    new_name[lowered.funcs[k]->name] = name;
    kernels.push_back(renamed(lowered.funcs[k], name));
    kernel_ops.push_back(lowered.kernels[k]);
  }
  std::map<std::string, const HostKernel*> kernel_of;
  for (const auto& k : lowered.kernels) kernel_of[k.symbol] = &k;
  for (const auto& n : lowered.host.nodes) {
    if (n.kernel.empty())
      throw Error("hexagon codegen: region " + g.name + ": node " + n.name + " (" +
                  (n.op.empty() ? "a call of @" + n.callee : n.op) + ") is not a compiled kernel");
    RegionStep step;
    step.kernel = new_name.at(n.kernel);
    step.ops = ops_of(*kernel_of.at(n.kernel));
    for (const auto& in : n.inputs) {
      auto it = slot_of.find(in);
      KILN_CHECK(it != slot_of.end(), "hexagon codegen: ", g.name, ": value ", in, " has no slot");
      step.args.push_back(it->second);
    }
    for (const auto& o : n.outputs) {
      add_slot(o.name, RegionSlot::Kind::Temp, o.desc);
      step.args.push_back(slot_of[o.name]);
    }
    p.steps.push_back(std::move(step));
  }
  for (const auto& o : g.outputs) {
    auto it = slot_of.find(o);
    KILN_CHECK(it != slot_of.end(), "hexagon codegen: ", g.name, ": output ", o, " has no slot");
    RegionSlot& s = p.slots[it->second];
    if (s.kind != RegionSlot::Kind::Temp)
      throw Error("hexagon codegen: region " + g.name + " returns its " +
                  (s.kind == RegionSlot::Kind::Input ? "input" : "constant") + " " + o +
                  " unchanged; nothing to run on the DSP");
    s.kind = RegionSlot::Kind::Output;
    p.outputs.push_back(it->second);
  }
  return p;
}

std::string kib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024.0);
  return buf;
}

// "hexagon_main_0 on hexagon-v66: 5 kernels, VTCM peak 36.0 KiB of 256.0 KiB
// (static plan per kernel: nn.conv2d+add+nn.relu 36.0 KiB, ...)"
std::string plan_note(const std::string& symbol, const RegionProgram& p, const codegen::Target& target) {
  uint64_t peak = 0;
  std::string per_kernel;
  for (const auto& st : p.steps) {
    peak = std::max(peak, st.vtcm_bytes);
    per_kernel += (per_kernel.empty() ? "" : ", ") + st.ops + " " + kib(st.vtcm_bytes);
  }
  return symbol + " on " + target.name + ": " + std::to_string(p.steps.size()) + " kernel" +
         (p.steps.size() == 1 ? "" : "s") + ", VTCM peak " + kib(peak) + " of " + kib(target.vtcm_capacity) +
         " (static plan per kernel: " + per_kernel + ")";
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  KILN_CHECK(in.good() || in.eof(), "hexagon codegen: cannot read ", path);
  return os.str();
}

}  // namespace

bool hvx_from_options(const CodegenOptions& options) {
  auto it = options.find("hvx");
  if (it == options.end() || it->second == "off") return false;
  if (it->second == "on") return true;
  throw Error("hexagon: option hvx=" + it->second + " must be on or off");
}

bool check_bounds_from_options(const CodegenOptions& options) {
  auto it = options.find("check_bounds");
  if (it == options.end() || it->second == "off") return false;
  if (it->second == "on") return true;
  throw Error("hexagon: option check_bounds=" + it->second + " must be on or off");
}

codegen::Target target_from_options(const CodegenOptions& options) {
  for (const auto& [k, v] : options)
    if (k != "target" && k != "timeout" && k != "asm" && k != "hvx" && k != "check_bounds")
      throw Error("hexagon: unknown option '" + k +
                  "' (hexagon takes target=hexagon-v66|v68|v69|v73, hvx=on|off, check_bounds=on|off, "
                  "timeout=SECONDS, asm=FILE)");
  hvx_from_options(options);
  check_bounds_from_options(options);
  auto it = options.find("target");
  std::string name = it == options.end() ? "hexagon-v68" : it->second;
  if (name.rfind("hexagon-", 0) != 0) name = "hexagon-" + name;
  codegen::Target t = codegen::parse_target(name);
  if (!t.is_hexagon()) throw Error("hexagon: option target=" + it->second + " is not a Hexagon DSP");
  return t;
}

BackendArtifacts codegen(const Module& m, const std::vector<Function>& functions,
                         const CodegenOptions& options) {
  codegen::Target target = target_from_options(options);
  BackendArtifacts out;
  GraphLowering state;
  std::vector<tir::PrimFunc> kernels;
  std::vector<HostKernel> kernel_ops;
  std::vector<std::pair<std::string, RegionProgram>> programs;
  for (const auto& f : functions) {
    std::string symbol = f->attrs.get_string("global_symbol");
    Graph g = lower_to_graph(m, *f, symbol, state);
    programs.push_back({symbol, compile_region(g, target, hvx_from_options(options), kernels, kernel_ops)});
  }
  tir::TirPassOptions passes = codegen::tir_pass_options(target);
  // HVX vectors for the integer copies into and out of VTCM (and with
  // hvx=on for integer compute; float loops stay scalar). hvx is off by
  // default: the clamped reads of a padded window become gathers, and under
  // QEMU the int8 small_cnn ran 10.3 ms with them against 4.4 ms scalar.
  passes.vector_bytes = target.vector_bytes;
  passes.vector_float = false;
  passes.drop_vector_hints = true;
  passes.dot_lanes = 32;
  passes.check_bounds = check_bounds_from_options(options);
  std::map<std::string, uint64_t> vtcm_of;
  for (auto& k : kernels) {
    vtcm_of[k->name] = tir::scratchpad_peak_bytes(*k);
    for (const std::string& pass : tir::tir_build_passes()) k = tir::run_tir_pass(pass, k, passes);
  }
  for (auto& [symbol, p] : programs) {
    for (auto& st : p.steps) st.vtcm_bytes = vtcm_of[st.kernel];
    out.notes.push_back(plan_note(symbol, p, target));
  }

  ScratchDir dir;
  codegen::CodegenOptions cg;
  cg.target = target;
  cg.loop_vectorize = false;
  const std::string exe = dir.path + "/regions.elf";
  codegen::emit_to_file(kernels, codegen::EmitKind::Executable, exe, cg);
  // --option hexagon.asm=FILE: the regions' kernels as Hexagon assembly, to read.
  if (auto it = options.find("asm"); it != options.end())
    write_file(it->second, codegen::emit_text(kernels, codegen::EmitKind::Assembly, cg));
  std::string bytes = read_bytes(exe);
  Tensor t = Tensor::empty({int64_t(bytes.size())}, DType::UInt8);
  std::copy(bytes.begin(), bytes.end(), static_cast<char*>(t.raw()));
  out.constants = std::move(state.constants);
  out.constants[kExecutable] = t;
  for (auto& [symbol, p] : programs) out.artifacts[symbol] = region_to_json(p);
  return out;
}

}  // namespace kiln::hexagon
