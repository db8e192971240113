// kiln run MODEL [--input NAME=FILE.npy ...] [--random-inputs SEED] [--out DIR]
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "commands.h"
#include "interp/interpreter.h"
#include "ir/text.h"
#include "kiln/runtime/npy.h"

namespace kiln::cli {
namespace {

struct RunOpts {
  std::string model;
  std::vector<std::string> inputs;
  std::optional<uint64_t> seed;
  std::string out_dir;
  std::string entry = "main";
  int64_t print_limit = 32;
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
    else if (d.dtype == DType::UInt8)
      v = static_cast<double>(r % 16);
    else
      v = static_cast<double>(r % 16) - 8.0;
    t.set_from_double(i, v);
  }
  return t;
}

std::map<std::string, std::string> parse_input_flags(const std::vector<std::string>& flags) {
  std::map<std::string, std::string> out;
  for (const auto& f : flags) {
    auto eq = f.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == f.size())
      throw Error("--input expects NAME=FILE.npy, got '" + f + "'");
    std::string name = f.substr(0, eq);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    if (!out.emplace(name, f.substr(eq + 1)).second) throw Error("--input " + name + " is given twice");
  }
  return out;
}

std::vector<Tensor> gather_inputs(const FunctionNode& fn, const RunOpts& o) {
  auto files = parse_input_flags(o.inputs);
  for (const auto& [name, file] : files) {
    bool known = false;
    for (const auto& p : fn.params) known |= p->name == name;
    if (!known) {
      std::string params;
      for (const auto& p : fn.params) params += (params.empty() ? "%" : ", %") + p->name;
      throw Error("--input " + name + ": @" + fn.name + " has no parameter of that name (parameters: " + params + ")");
    }
  }
  uint64_t state = o.seed.value_or(0);
  std::vector<Tensor> args;
  for (const auto& p : fn.params) {
    if (!p->type->is_tensor()) throw Error("parameter %" + p->name + " is a tuple; kiln run takes tensor inputs only");
    const TensorDesc& want = p->type->tensor;
    auto it = files.find(p->name);
    if (it == files.end()) {
      if (!o.seed)
        throw Error("no value for input %" + p->name + " " + type_str(p->type) + ": give --input " + p->name +
                    "=FILE.npy or --random-inputs SEED");
      args.push_back(random_tensor(want, state));
      continue;
    }
    Tensor t = read_npy(it->second);
    if (t.dtype() != want.dtype || t.shape() != want.shape)
      throw Error("input %" + p->name + " from " + it->second + " is " + shape_str(t.shape()) + " " +
                  std::string(dtype_name(t.dtype())) + ", but @" + fn.name + " expects " + type_str(p->type));
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

void run(const RunOpts& o) {
  Module m = load_module(o.model);
  const FunctionNode* fn = m.find(o.entry);
  if (!fn) throw Error(o.model + ": no function @" + o.entry + " to run (use --entry NAME)");
  std::vector<Tensor> args = gather_inputs(*fn, o);
  std::vector<Tensor> outs = interpret(m, o.entry, args);
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) throw Error("cannot create output folder " + o.out_dir + ": " + ec.message());
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string name = "output_" + std::to_string(i);
    std::cout << name << ": " << tensor_summary(outs[i]) << "\n";
    if (outs[i].numel() <= o.print_limit) print_values(outs[i]);
    if (!o.out_dir.empty()) write_npy(o.out_dir + "/" + name + ".npy", outs[i]);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a model on the reference interpreter");
  auto o = std::make_shared<RunOpts>();
  cmd->add_option("model", o->model, "Model file (.kir)")->required();
  cmd->add_option("--input,-i", o->inputs, "NAME=FILE.npy for a parameter of the entry function");
  cmd->add_option("--random-inputs", o->seed, "Fill inputs not given with random values from SEED");
  cmd->add_option("--out,-o", o->out_dir, "Write DIR/output_0.npy, output_1.npy, ... (tuples flattened)");
  cmd->add_option("--entry", o->entry, "Function to run")->capture_default_str();
  cmd->add_option("--print-limit", o->print_limit, "Print the values of outputs with at most N elements")
      ->capture_default_str();
  cmd->callback([o] { run(*o); });
}

}  // namespace kiln::cli
