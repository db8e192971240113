// The VM: runs a compiled module (an Executable) with the runtime alone.
//
// The host program is a kiln.graph whose kernel nodes call compiled host
// kernels (HostCode, loaded once), whose op nodes run on the reference
// kernels (ops the compiler did not lower) and whose callee nodes dispatch,
// by global symbol, to the backend runtime that owns the symbol. Backend
// runtimes are created and initialised once, when the VM is made; run() may
// be called many times, from several threads at once: everything a run
// mutates (its events, its --verify checks, the arena of its intermediate
// values) belongs to that run, and the VM is only read. The VM never includes
// the compiler (src/ir).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/runtime/backend.h"
#include "runtime/graph.h"
#include "runtime/host_code.h"
#include "runtime/model_names.h"

namespace kiln {

struct BackendPart {
  std::string backend;
  std::string version;                         // the backend's, when compiled (a plugin's declared version)
  std::map<std::string, std::string> options;  // codegen options, given to init
  std::vector<BackendFunction> functions;
  // Module constants the codegen added besides those its graphs read (a
  // DSP executable), given to init too.
  std::vector<std::string> constants = {};
};

// Where intermediate values live: offsets into one arena, planned at compile
// time from the values' lifetimes (driver/plan_memory.cc). Values not listed
// (program outputs, results of reference kernels) get their own allocation.
struct MemoryPlan {
  int64_t arena_bytes = 0;
  int64_t intermediate_bytes = 0;  // the planned values' sizes added up, for comparison
  std::map<std::string, int64_t> offsets;
};

// What a .kmod file holds.
struct Executable {
  Graph host;  // the host program ("main")
  std::vector<BackendPart> backends;
  std::map<std::string, Tensor> constants;  // host and backend constants, by name
  HostCode host_code;  // the compiled host kernels (empty: every host op on its reference kernel)
  MemoryPlan memory;   // the arena of intermediate values
  // The partitioner's one-line summary, so running a .kmod still says what
  // was offloaded ("" when no backend was used).
  std::string offload_summary;
  // The model's names of the host program's inputs (by input name) and
  // outputs, when they differ from kiln's (an imported ONNX model).
  ModelNames names;
};

struct VerifyOptions {
  double atol = 1e-5;
  double rtol = 1e-4;
};

// --verify: one offloaded function's outputs against the reference kernels.
struct RegionCheck {
  std::string symbol;
  std::string backend;
  double max_abs = 0;
  double max_rel = 0;
  bool ok = true;
  std::string first_divergent_node;  // when !ok and the backend reported node values
  bool host_kernel = false;          // a compiled host kernel (symbol is the kernel)
  double node_max_abs = 0;
  std::string str() const;  // one line for `kiln run --verify`
};

// What one run produced.
struct RunResult {
  std::vector<Tensor> outputs;
  std::vector<DispatchEvent> events;  // with RunOptions::record_events
  std::vector<RegionCheck> checks;    // with RunOptions::verify
};

class VirtualMachine {
 public:
  // Creates and initialises every backend runtime; throws kiln::Error naming
  // the backend when none is registered or its init fails.
  explicit VirtualMachine(Executable exe);
  ~VirtualMachine();

  struct RunOptions {
    bool record_events = false;
    bool verify = false;
    VerifyOptions tolerance;
  };
  // Safe to call concurrently on one VM (backend runtimes must allow it too:
  // kiln/runtime/backend.h).
  RunResult run(const std::vector<Tensor>& inputs, const RunOptions& opts) const;
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const {
    return run(inputs, RunOptions{}).outputs;
  }

  const Executable& executable() const { return exe_; }

 private:
  void dispatch(const GraphNode& node, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                const RunOptions& opts, RunResult& result) const;

  // The host program with its values numbered once, when the VM is made:
  // run() walks the steps, reading and writing values by slot, so that a
  // dispatch looks nothing up by name and copies no tensor (a compiled
  // kernel gets its operands' addresses).
  struct Step {
    enum class Kind { Kernel, Callee, Op } kind;
    const GraphNode* node = nullptr;
    LoadedHostCode::KernelFn fn = nullptr;  // Kernel
    const HostKernel* kernel = nullptr;     // Kernel
    const OpDef* op = nullptr;              // Op
    std::vector<size_t> inputs, outputs;    // slots
  };
  struct HostPlan {
    std::vector<std::pair<size_t, const Tensor*>> constants;  // slot, value
    std::vector<size_t> inputs, outputs;                      // the program's, by slot
    std::vector<const GraphValue*> values;                    // by slot: a node output's type, else null
    std::vector<int64_t> arena_offsets;                       // by slot: planned in the arena, else -1
    std::vector<Step> steps;
    size_t max_args = 0;  // operands of the largest kernel call
  };
  // An arena and a tensor for each value planned in it (by slot).
  struct Arena {
    Tensor storage;
    std::vector<Tensor> values;
  };
  void plan_host_program();
  // A kernel step: its operands' addresses in `args`, then the call.
  void run_kernel(const Step& step, const std::vector<const Tensor*>& values, std::vector<void*>& args,
                  const RunOptions& opts, double start_us, RunResult& result) const;
  Arena new_arena() const;
  // An arena for one run: a free one, or a new one when every arena is in use
  // by a concurrent run; given back when the run ends.
  Arena acquire_arena() const;
  void release_arena(Arena arena) const;

  Executable exe_;
  HostPlan plan_;
  std::map<std::string, std::unique_ptr<BackendRuntime>> runtimes_;  // by backend
  std::map<std::string, std::pair<std::string, Graph>> symbols_;  // symbol -> (backend, graph for --verify)
  std::unique_ptr<LoadedHostCode> host_code_;
  std::map<std::string, std::pair<LoadedHostCode::KernelFn, const HostKernel*>> kernels_;
  // Arenas (exe_.memory.arena_bytes each) not in use by a run: as many as
  // runs have overlapped, one when runs are sequential.
  mutable std::mutex arena_mu_;
  mutable std::vector<Arena> free_arenas_;
};

}  // namespace kiln
