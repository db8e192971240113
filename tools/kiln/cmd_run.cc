// kiln run MODEL [--input NAME=FILE.npy ...] [--random-inputs SEED] [--out DIR]
//          [--backend NAME ...] [--dispatch-log FILE] [--profile FILE.json] [--verify]
// kiln run FILE.kir --entry PRIM [--target llvm|hexagon-vNN] [--input ...] [--out DIR]
//
// A .kir/.onnx model goes through the model compile pipeline in memory
// (src/driver/compile_model.h: optimized, partitioned with --backend, host ops
// compiled to native kernels) and runs on the VM; --interpret runs it on the
// reference interpreter instead. A .kmod is loaded and run by the runtime
// alone. Inputs are named as the model names them (ONNX names, recorded on
// import: runtime/model_names.h) or by kiln's parameter names; outputs are
// printed and written by index and by the model's names. A prim function is
// compiled for
// --target and run: JIT-compiled on the host, or linked with kiln's Hexagon
// runtime and run under qemu-hexagon-static.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>

#include "byoc_flags.h"
#include "codegen/prim_runner.h"
#include "commands.h"
#include "frontend/load_model.h"
#include "interp/interpreter.h"
#include "ir/model_names.h"
#include "ir/text.h"
#include "kiln/runtime/npy.h"
#include "runtime/file_io.h"
#include "runtime/module_file.h"
#include "runtime/profile.h"
#include "validators.h"

namespace kiln::cli {
namespace {

struct RunOpts {
  std::string model;
  std::vector<std::string> inputs;
  std::optional<uint64_t> seed;
  std::string out_dir;
  std::string entry = "main";
  int64_t print_limit = 32;
  BackendFlags flags;
  CompileFlags compile;
  bool interpret = false;
  int64_t repeat = 0;
  std::string dispatch_log;
  std::string profile;
  int64_t profile_summary = -1;  // rows of the per-dispatch table; -1: none
  bool verify = false;
  double atol = 1e-5, rtol = 1e-4;
  // Prim functions.
  std::string target;
  std::vector<std::string> link_libs;
  std::optional<uint64_t> vtcm_capacity;
  bool static_scratchpad_plan = false;
};

// A parameter of the entry: what inputs are checked and generated against.
struct Param {
  std::string name;
  TensorDesc desc;
};

// splitmix64: a small, fully specified generator, so the same seed gives the
// same inputs on every machine and standard library.
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Floats uniform in [-1, 1); integers uniform in [-8, 8) (unsigned: [0, 16)).
Tensor random_tensor(const TensorDesc& d, uint64_t& state) {
  Tensor t = Tensor::empty(d.shape, d.dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t r = next_random(state);
    double v;
    if (is_float(d.dtype))
      v = static_cast<double>(r >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    else if (d.dtype == DType::Bool)
      v = static_cast<double>(r & 1);
    else if (is_unsigned(d.dtype))
      v = static_cast<double>(r % 16);
    else
      v = static_cast<double>(r % 16) - 8.0;
    t.set_from_double(i, v);
  }
  return t;
}

// NAME=FILE.npy flags by NAME. A name may hold '=' itself (ONNX names are
// free text): the flag splits at the first '=' whose left side is a name
// `is_input` knows, else at the first '='.
std::map<std::string, std::string> parse_input_flags(
    const std::vector<std::string>& flags, const std::function<bool(const std::string&)>& is_input) {
  std::map<std::string, std::string> out;
  for (const auto& f : flags) {
    auto eq = f.find('=');
    for (auto at = eq; at != std::string::npos; at = f.find('=', at + 1))
      if (is_input(f.substr(0, at))) {
        eq = at;
        break;
      }
    if (eq == std::string::npos || eq == 0 || eq + 1 == f.size())
      throw Error("--input expects NAME=FILE.npy, got '" + f + "'");
    std::string name = f.substr(0, eq);
    if (!out.emplace(name, f.substr(eq + 1)).second) throw Error("--input " + name + " is given twice");
  }
  return out;
}

std::vector<Param> params_of(const FunctionNode& fn) {
  std::vector<Param> out;
  for (const auto& p : fn.params) {
    if (!p->type->is_tensor())
      throw Error("parameter %" + p->name + " is a tuple; kiln run takes tensor inputs only");
    out.push_back({p->name, p->type->tensor});
  }
  return out;
}

// The --input flags by the index of the parameter they name (a model's name
// or kiln's %name): (flag name, file) each.
std::map<size_t, std::pair<std::string, std::string>> input_files(const std::string& fn_name,
                                                                  const std::vector<std::string>& kiln_names,
                                                                  const ModelNames& names, const RunOpts& o) {
  auto files = parse_input_flags(
      o.inputs, [&](const std::string& n) { return find_input(kiln_names, names, n).has_value(); });
  std::map<size_t, std::pair<std::string, std::string>> given;  // param index -> (flag name, file)
  for (const auto& [name, file] : files) {
    std::optional<size_t> i = find_input(kiln_names, names, name);
    if (!i)
      throw Error("--input " + name + ": @" + fn_name + " has no input of that name (inputs: " +
                  input_list(kiln_names, names) + "); name an input as the model does or as %NAME");
    auto [it, fresh] = given.emplace(*i, std::make_pair(name, file));
    if (!fresh)
      throw Error("--input " + name + " and --input " + it->second.first + " name the same input " +
                  input_label(kiln_names[*i], names) + "; give it once");
  }
  return given;
}

std::vector<std::string> param_names(const FunctionNode& fn) {
  std::vector<std::string> out;
  for (const auto& p : fn.params) out.push_back(p->name);
  return out;
}

// An --input file; "-" is a .npy on standard input.
Tensor read_input_npy(const std::string& file) {
  if (file != "-") return read_npy(file);
  return decode_npy(read_input("-", ".npy input"), "standard input");
}

// Standard input holds one thing: the model or one --input.
void check_standard_input_once(const RunOpts& o) {
  int readers = o.model == "-";
  for (const std::string& flag : o.inputs)
    if (flag.size() >= 2 && flag.compare(flag.size() - 2, 2, "=-") == 0) ++readers;
  if (readers > 1)
    throw Error("standard input can hold the model or one --input NAME=-, not " + std::to_string(readers) +
                " of them; write the others to files");
}

// The inputs by --input and --random-inputs.
std::vector<Tensor> gather_inputs(const std::string& fn_name, const std::vector<Param>& params,
                                  const ModelNames& names, const RunOpts& o) {
  std::vector<std::string> kiln_names;
  for (const auto& p : params) kiln_names.push_back(p.name);
  auto given = input_files(fn_name, kiln_names, names, o);
  uint64_t state = o.seed.value_or(0);
  std::vector<Tensor> args;
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    const TensorDesc& want = p.desc;
    std::string label = input_label(p.name, names);
    auto it = given.find(i);
    if (it == given.end()) {
      auto model_name = names.inputs.find(p.name);
      std::string flag = model_name != names.inputs.end() ? model_name->second : p.name;
      if (!o.seed)
        throw Error("no value for input " + label + " " + type_str(tensor_type(want)) + ": give --input " +
                    flag + "=FILE.npy or --random-inputs SEED");
      checked_tensor_bytes(want.shape, want.dtype, "input " + label);
      args.push_back(random_tensor(want, state));
      continue;
    }
    const std::string& file = it->second.second;
    Tensor t = read_input_npy(file);
    if (t.dtype() != want.dtype || t.shape() != want.shape)
      throw Error("input " + label + " from " + file + " is " + shape_str(t.shape()) + " " +
                  std::string(dtype_name(t.dtype())) + ", but @" + fn_name + " expects " +
                  type_str(tensor_type(want)));
    args.push_back(std::move(t));
  }
  return args;
}

void print_values(const Tensor& t) {
  std::cout << "  [";
  for (int64_t i = 0; i < t.numel(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", t.get_as_double(i));
    std::cout << (i ? ", " : "") << buf;
  }
  std::cout << "]\n";
}

// Median and minimum of `repeat` timed runs after one warm-up run.
void time_runs(const VirtualMachine& vm, const std::vector<Tensor>& args, int64_t repeat) {
  std::vector<double> ms;
  vm.run(args);
  for (int64_t i = 0; i < repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    vm.run(args);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  char buf[160];
  std::snprintf(buf, sizeof buf, "latency: median %.3f ms, min %.3f ms over %lld runs (after 1 warm-up run)",
                median, ms.front(), static_cast<long long>(repeat));
  std::cout << buf << "\n";
}

// "host kernel K" or "@f (backend), first divergent node n": one check in a message.
std::string check_name(const RegionCheck& c) {
  if (c.host_kernel) return "host kernel " + c.symbol;
  std::string s = "@" + c.symbol + " (" + c.backend + ")";
  if (!c.first_divergent_node.empty()) s += ", first divergent node " + c.first_divergent_node;
  return s;
}

// "" when every check matched; otherwise the error `kiln run` ends with.
std::string verify_failure(const std::vector<RegionCheck>& checks, const RunOpts& o) {
  const RegionCheck* first = nullptr;
  int failed = 0;
  for (const auto& c : checks) {
    if (c.ok) continue;
    ++failed;
    if (!first) first = &c;
  }
  if (!first) return "";
  char tol[96];
  std::snprintf(tol, sizeof tol, "max abs %.3g over atol %.3g + rtol %.3g", first->max_abs, o.atol, o.rtol);
  return "--verify failed: " + std::to_string(failed) + " of " + std::to_string(checks.size()) +
         " checks mismatch the reference kernels; first: " + check_name(*first) + " (" + tol + ")";
}

// Runs on the VM: the executable's host program and its backends. A failed
// --verify check is left in *failure, for after the outputs are written.
std::vector<Tensor> run_on_vm(Executable exe, const RunOpts& o, std::string* failure) {
  std::vector<Param> params;
  for (const auto& in : exe.host.inputs) params.push_back({in.name, in.desc});
  std::vector<Tensor> args = gather_inputs(exe.host.name, params, exe.names, o);
  VirtualMachine vm(std::move(exe));
  VirtualMachine::RunOptions ro;
  ro.record_events = !o.dispatch_log.empty() || !o.profile.empty();
  ro.verify = o.verify;
  ro.tolerance = {o.atol, o.rtol};
  RunResult run = vm.run(args, ro);
  if (!o.dispatch_log.empty()) write_output(o.dispatch_log, dispatch_log(run.events));
  if (!o.profile.empty()) write_output(o.profile, chrome_trace(run.events));
  int kernels = 0, kernels_ok = 0;
  std::string first_divergent;
  for (const auto& c : run.checks) {
    if (!c.host_kernel) {
      std::cout << c.str() << "\n";
      continue;
    }
    ++kernels;
    kernels_ok += c.ok;
    if (!c.ok && first_divergent.empty()) {
      first_divergent = c.symbol;
      std::cout << c.str() << "\n";
    }
  }
  if (kernels)
    std::cout << "verify: " << kernels_ok << " of " << kernels
              << " host kernel calls match the reference kernels"
              << (first_divergent.empty() ? "" : "; first divergent kernel: " + first_divergent) << "\n";
  if (o.verify && run.checks.empty()) std::cout << "verify: nothing was offloaded or compiled\n";
  *failure = verify_failure(run.checks, o);
  if (o.repeat > 0) {
    time_runs(vm, args, o.repeat);
    // The trace of a warm run (the first one also pays for page faults and
    // cold caches): one more run after the timed ones.
    if (!o.profile.empty()) {
      VirtualMachine::RunOptions warm;
      warm.record_events = true;
      write_output(o.profile, chrome_trace(vm.run(args, warm).events));
    }
    // Where the time goes: as many runs again, recorded, after the timed
    // ones (recording costs a little; the latency above is without it).
    if (o.profile_summary >= 0) {
      VirtualMachine::RunOptions recorded;
      recorded.record_events = true;
      std::vector<std::vector<DispatchEvent>> runs;
      for (int64_t i = 0; i < o.repeat; ++i) runs.push_back(vm.run(args, recorded).events);
      std::cout << profile_summary(runs, size_t(o.profile_summary));
    }
  }
  return std::move(run.outputs);
}

void check_vm_flags(const RunOpts& o, bool on_vm) {
  if (on_vm) return;
  if (!o.flags.options.empty() || o.flags.strict || o.flags.lift_constants)
    throw Error("--option, --strict and --lift-constants need --backend");
}

// Creates the --output folder; false when nothing is to be written: no
// --output, or a device such as /dev/null (the outputs are printed only).
bool make_output_folder(const std::string& dir) {
  if (dir.empty()) return false;
  if (dir == "-")
    throw Error(
        "kiln run --output names a folder for the output .npy files; '-' (standard output) is not one");
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(dir, ec);
  if (!ec && std::filesystem::is_character_file(st)) return false;
  if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
    throw Error("kiln run --output " + dir +
                ": not a folder; the outputs are written as DIR/output_0.npy, ...");
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create output folder " + dir + ": " + ec.message());
  return true;
}

// A prim function: inputs for the buffers it reads (files, or random with a
// seed), compiled for the target and run; the buffers it writes are the outputs.
void run_prim(const tir::PrimFunc& f, const RunOpts& o) {
  if (!o.flags.backends.empty() || o.verify || !o.dispatch_log.empty() || !o.profile.empty())
    throw Error("@" + f->name +
                " is a prim function; --backend, --verify, --dispatch-log and --profile are "
                "for graph functions");
  auto files = parse_input_flags(o.inputs, [](const std::string&) { return false; });
  std::map<std::string, Tensor> inputs;
  uint64_t state = o.seed.value_or(0);
  for (const codegen::PrimParamInfo& p : codegen::prim_param_info(*f)) {
    auto it = files.find(p.name);
    if (it == files.end()) it = files.find("%" + p.name);
    if (it != files.end()) {
      inputs[p.name] = read_input_npy(it->second);
      files.erase(it);
    } else if (p.needs_input() && o.seed) {
      inputs[p.name] = random_tensor(TensorDesc{p.shape, p.dtype}, state);
    }
  }
  for (const auto& [name, file] : files)  // unknown names: run_prim_function says so
    inputs[name[0] == '%' ? name.substr(1) : name] = read_input_npy(file);
  codegen::PrimRunOptions ro;
  ro.target = codegen::parse_target(o.target.empty() ? "llvm" : o.target);
  ro.link_libs = o.link_libs;
  ro.vtcm_capacity = o.vtcm_capacity;
  ro.static_scratchpad_plan = o.static_scratchpad_plan;
  ro.check_bounds = o.compile.check_bounds;
  codegen::PrimRunResult r = codegen::run_prim_function(f, inputs, ro);
  std::cout << "@" << f->name << " on " << ro.target.name << "\n";
  std::cout << "VTCM pool (" << (ro.target.is_hexagon() ? "Hexagon runtime" : "host runtime")
            << "): " << r.vtcm_pool << "\n";
  bool write = make_output_folder(o.out_dir);
  for (const auto& [name, t] : r.outputs) {
    std::cout << name << ": " << tensor_summary(t) << "\n";
    if (t.numel() <= o.print_limit) print_values(t);
    if (write) write_npy(o.out_dir + "/" + name + ".npy", t);
  }
}

// The prim function --entry names; with the default entry, a module whose only
// functions are one prim function runs that one.
tir::PrimFunc find_prim_entry(const Module& m, const std::string& entry) {
  for (const auto& f : m.prim_functions)
    if (f->name == entry) return f;
  if (entry == "main" && !m.find("main") && m.prim_functions.size() == 1) return m.prim_functions[0];
  return nullptr;
}

// Prints the outputs by index and model name; with --out, writes each as
// output_<i>.npy and <file_stem(name)>.npy, and outputs.json listing them.
void write_outputs(const std::vector<Tensor>& outs, const ModelNames& names, const RunOpts& o) {
  bool write = make_output_folder(o.out_dir);
  std::vector<OutputFiles> files = output_files(names, outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string name = "output_" + std::to_string(i);
    if (i < names.outputs.size() && names.outputs[i] != name) name += " " + quote_string(names.outputs[i]);
    std::cout << name << ": " << tensor_summary(outs[i]) << "\n";
    if (outs[i].numel() <= o.print_limit) print_values(outs[i]);
    if (!write) continue;
    write_npy(o.out_dir + "/" + files[i].index_file, outs[i]);
    if (!files[i].named_file.empty()) write_npy(o.out_dir + "/" + files[i].named_file, outs[i]);
  }
  if (write) write_file(o.out_dir + "/outputs.json", outputs_json(names, files, outs));
}

void run(const RunOpts& o) {
  std::vector<Tensor> outs;
  ModelNames names;
  std::string failure;  // of --verify
  bool vm_flags = !o.dispatch_log.empty() || !o.profile.empty() || o.verify;
  if (o.profile_summary >= 0 && o.repeat == 0)
    throw Error("--profile-summary summarizes the runs of --repeat N: add --repeat (e.g. --repeat 50)");
  check_standard_input_once(o);
  // "-" and pipes are read once, whole, and told apart by their content.
  std::optional<std::string> streamed;
  if (is_stream_path(o.model)) streamed = read_input(o.model, "model");
  std::string what = o.model == "-" ? "standard input" : o.model;
  if (streamed ? is_kmod_bytes(*streamed) : is_kmod_file(o.model)) {
    if (!o.target.empty())
      throw Error(what + " is compiled already; --target is for prim functions in .kir files");
    if (!o.flags.backends.empty())
      throw Error(what + " is compiled already; its backends were chosen by `kiln compile` (drop --backend)");
    if (!o.flags.input_shapes.empty())
      throw Error(what +
                  " is compiled already; its input shapes were fixed by `kiln compile` (drop --input-shape)");
    if (!o.flags.options.empty())
      throw Error(what +
                  " is compiled already; its backend options were fixed by `kiln compile` (drop --option)");
    Executable exe = streamed ? decode_kmod(*streamed, what) : read_kmod(o.model);
    if (!exe.offload_summary.empty()) std::cout << "offload: " << exe.offload_summary << "\n";
    names = exe.names;
    outs = run_on_vm(std::move(exe), o, &failure);
  } else {
    Module m = streamed ? load_model_bytes(*streamed, what, o.flags.import_options())
                        : load_model(o.model, o.flags.import_options());
    if (tir::PrimFunc prim = find_prim_entry(m, o.entry)) return run_prim(prim, o);
    const FunctionNode* fn = m.find(o.entry);
    if (!fn) throw Error(what + ": no function @" + o.entry + " to run (use --entry NAME)");
    check_vm_flags(o, !o.flags.backends.empty());
    if (o.interpret) {
      if (!o.flags.backends.empty() || vm_flags || o.repeat > 0)
        throw Error(
            "--interpret runs the reference interpreter alone; drop --backend, --verify, --profile, "
            "--dispatch-log and --repeat (or --interpret)");
      if (o.entry == "main") names = model_names(m);
      std::vector<Tensor> args = gather_inputs(fn->name, params_of(*fn), names, o);
      outs = interpret(m, o.entry, args);
    } else {
      // --input names are checked before the (longer) compile.
      input_files(fn->name, param_names(*fn), o.entry == "main" ? model_names(m) : ModelNames{}, o);
      driver::CompileSummary summary;
      CompileFlags compile = o.compile;
      compile.target = o.target;
      Executable exe = driver::compile_model(m, compile.options(o.flags, o.entry), &summary);
      if (summary.offloaded) std::cout << offload_line(summary.report, !o.flags.no_merge) << "\n";
      std::cout << compile_line(summary) << "\n";
      names = exe.names;
      outs = run_on_vm(std::move(exe), o, &failure);
    }
  }
  write_outputs(outs, names, o);
  if (!failure.empty()) throw Error(failure);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("run", "Run a model on the reference interpreter, or on backends through the VM");
  auto o = std::make_shared<RunOpts>();
  cmd->add_option("model", o->model,
                  "Model file (.kir, .onnx or a compiled .kmod; - reads it from standard input)")
      ->required();
  cmd->add_option("--input,-i", o->inputs,
                  "NAME=FILE.npy for an input of the entry function: the model's own (ONNX) name or kiln's "
                  "%NAME; FILE - reads the .npy from standard input");
  cmd->add_option("--random-inputs", o->seed, "Fill inputs not given with random values from SEED")
      ->check(kUnsigned64);
  cmd->add_option("-o,--output,--out", o->out_dir,
                  "Write DIR/output_0.npy, output_1.npy, ... (tuples flattened), each also under its model "
                  "(ONNX) name, and DIR/outputs.json listing them");
  cmd->add_option("--entry", o->entry, "Function to run")->capture_default_str();
  cmd->add_option("--print-limit", o->print_limit, "Print the values of outputs with at most N elements")
      ->capture_default_str()
      ->check(kNonNegative);
  o->flags.add_to(cmd);
  o->compile.add_to(cmd, false);
  cmd->add_flag("--interpret", o->interpret, "Run on the reference interpreter instead of compiling");
  cmd->add_option("--repeat", o->repeat,
                  "After the run, time N more runs (after a warm-up) and print the median and "
                  "minimum latency")
      ->check(kNonNegative);
  cmd->add_option("--dispatch-log", o->dispatch_log,
                  "Write one JSON line per backend dispatch (- for standard output)");
  cmd->add_option(
      "--profile", o->profile,
      "Write a Chrome trace (Perfetto) with host and backend tracks (with --repeat: of a warm run; - for "
      "standard output)");
  cmd->add_option(
         "--profile-summary", o->profile_summary,
         "With --repeat N: after the timed runs, N more recorded ones, and a table of each dispatch's "
         "median time and share, the slowest ROWS first (0: all)")
      ->check(kNonNegative)
      ->type_name("ROWS");
  cmd->add_flag("--verify", o->verify,
                "Also run every offloaded function on the reference kernels and compare");
  cmd->add_option("--atol", o->atol, "--verify: absolute tolerance")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--rtol", o->rtol, "--verify: tolerance relative to the largest reference value")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option(
      "--target", o->target,
      "llvm (this machine's CPU, the default), llvm -mcpu=NAME (another x86-64 CPU: the host code of a "
      "model), or, for prim functions, hexagon-v66|v68|v69|v73 (under qemu-hexagon-static)");
  cmd->add_option("--link-lib", o->link_libs,
                  "prim functions: a library that may provide imports (repeatable)");
  cmd->add_option("--vtcm-capacity", o->vtcm_capacity, "prim functions: VTCM bytes (default: the target's)")
      ->check(kUnsigned64);
  cmd->add_flag("--static-scratchpad-plan", o->static_scratchpad_plan,
                "prim functions: one VTCM allocation per function");
  cmd->callback([o] { run(*o); });
}

}  // namespace kiln::cli
