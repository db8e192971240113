// The hexagon backend's runtime (see hexagon_runtime.h).
#include "backends/hexagon/runtime/hexagon_runtime.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "backends/hexagon/runtime/dsp_session.h"
#include "backends/hexagon/runtime/region_program.h"
#include "kiln/runtime/error.h"
#include "runtime/file_io.h"

namespace kiln::hexagon {
namespace {

struct Region {
  std::string symbol;
  uint32_t index = 0;
  RegionProgram program;
};

int timeout_from(const std::map<std::string, std::string>& options) {
  auto it = options.find("timeout");
  if (it == options.end()) return 300;
  char* end = nullptr;
  long v = std::strtol(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end || v <= 0 || v > 86400)
    throw Error("hexagon: option timeout=" + it->second + " must be a number of seconds (1 to 86400)");
  return int(v);
}

// The executable in a private file; removed once the emulator has opened it.
std::string write_executable(const Tensor& exe) {
  std::string path = (std::filesystem::temp_directory_path() / "kiln-hexagon-XXXXXX").string();
  int fd = mkstemp(path.data());
  if (fd < 0)
    throw Error("hexagon: cannot create a temporary file for the DSP executable in " +
                std::filesystem::temp_directory_path().string());
  const char* p = static_cast<const char*>(exe.raw());
  size_t left = exe.nbytes();
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w <= 0) {
      close(fd);
      unlink(path.c_str());
      throw Error("hexagon: cannot write the DSP executable to " + path);
    }
    p += w;
    left -= size_t(w);
  }
  fchmod(fd, 0700);
  close(fd);
  return path;
}

class HexagonRuntime : public BackendRuntime {
 public:
  std::string name() const override { return "hexagon"; }

  Status init(const std::vector<BackendFunction>& functions, const std::map<std::string, Tensor>& constants,
              const std::map<std::string, std::string>& options) override {
    try {
      int timeout = timeout_from(options);
      std::vector<SessionSlot> slots;
      std::vector<SessionRegion> session_regions;
      std::map<std::string, uint32_t> constant_slot;  // shared by the regions that read them
      std::string executable;
      for (const auto& f : functions) {
        Region r;
        r.symbol = f.symbol;
        r.index = uint32_t(regions_.size());
        r.program = region_from_json(f.artifact, "hexagon region " + f.symbol);
        if (executable.empty()) executable = r.program.executable;
        if (r.program.executable != executable)
          return Status::error("hexagon: region " + f.symbol + " names another executable");
        // This module's slot ids for the region's slots.
        std::vector<uint32_t> ids;
        for (const auto& s : r.program.slots) {
          if (s.kind == RegionSlot::Kind::Constant) {
            auto it = constants.find(s.name);
            if (it == constants.end())
              return Status::error("hexagon: region " + f.symbol + " needs constant '" + s.name +
                                   "', which the module does not hold");
            if (it->second.shape() != s.desc.shape || it->second.dtype() != s.desc.dtype)
              return Status::error(
                  "hexagon: constant '" + s.name + "' is " + std::string(dtype_name(it->second.dtype())) +
                  shape_str(it->second.shape()) + "; region " + f.symbol + " expects " + desc_str(s.desc));
            auto [c, fresh] = constant_slot.emplace(s.name, uint32_t(slots.size()));
            if (fresh) slots.push_back({uint64_t(it->second.nbytes()), it->second.raw()});
            ids.push_back(c->second);
            continue;
          }
          ids.push_back(uint32_t(slots.size()));
          slots.push_back({uint64_t(shape_numel(s.desc.shape)) * dtype_bytes(s.desc.dtype), nullptr});
        }
        SessionRegion sr;
        for (uint32_t i : r.program.inputs) sr.inputs.push_back(ids[i]);
        for (uint32_t i : r.program.outputs) sr.outputs.push_back(ids[i]);
        for (const auto& st : r.program.steps) {
          SessionStep step{st.kernel, {}};
          for (uint32_t a : st.args) step.args.push_back(ids[a]);
          sr.steps.push_back(std::move(step));
        }
        session_regions.push_back(std::move(sr));
        by_symbol_[f.symbol] = regions_.size();
        regions_.push_back(std::move(r));
      }
      if (regions_.empty()) return Status::success();
      auto exe = constants.find(executable);
      if (exe == constants.end())
        return Status::error("hexagon: the module holds no DSP executable ('" + executable +
                             "'); compile the model again");
      std::string path = write_executable(exe->second);
      Status s = session_.start(path, slots, session_regions, timeout);
      unlink(path.c_str());
      return s;
    } catch (const Error& e) {
      return Status::error(e.message());
    }
  }

  Status run(const std::string& symbol, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
             std::vector<DispatchEvent>* events, const NodeObserver& observer) override {
    auto it = by_symbol_.find(symbol);
    if (it == by_symbol_.end()) return Status::error("hexagon: no region '" + symbol + "' was initialised");
    const Region& r = regions_[it->second];
    const RegionProgram& p = r.program;
    if (inputs.size() != p.inputs.size() || outputs.size() != p.outputs.size())
      return Status::error("hexagon: " + symbol + " takes " + std::to_string(p.inputs.size()) +
                           " inputs and " + std::to_string(p.outputs.size()) + " outputs");
    std::vector<const void*> in;
    std::vector<void*> out;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const RegionSlot& s = p.slots[p.inputs[i]];
      if (inputs[i].shape() != s.desc.shape || inputs[i].dtype() != s.desc.dtype)
        return Status::error("hexagon: " + symbol + ": input '" + s.name + "' must be " + desc_str(s.desc));
      in.push_back(inputs[i].raw());
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const RegionSlot& s = p.slots[p.outputs[i]];
      if (outputs[i].shape() != s.desc.shape || outputs[i].dtype() != s.desc.dtype)
        return Status::error("hexagon: " + symbol + ": output '" + s.name + "' must be " + desc_str(s.desc));
      out.push_back(outputs[i].raw());
    }
    auto start = std::chrono::steady_clock::now();
    VtcmFigures vtcm;
    Status st = session_.run(r.index, in, out, "region " + symbol, &vtcm);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!st.ok()) return st;
    if (observer)
      for (size_t i = 0; i < outputs.size(); ++i) observer(p.slots[p.outputs[i]].name, outputs[i]);
    if (events) {
      DispatchEvent e;
      e.backend = "hexagon";
      e.function = symbol;
      e.node = p.slots[p.outputs.empty() ? 0 : p.outputs.back()].name;
      for (const auto& step : p.steps) e.op += (e.op.empty() ? "" : ",") + step.ops;
      e.engine = p.target;
      e.tiles = int64_t(p.steps.size());
      e.fused = p.steps.size() > 1;
      e.counters = {{"vtcm_high_water_bytes", int64_t(vtcm.high_water)},
                    {"vtcm_capacity_bytes", int64_t(vtcm.capacity)},
                    {"vtcm_allocations", int64_t(vtcm.allocations)},
                    {"vtcm_failed_allocations", int64_t(vtcm.failed)},
                    {"vtcm_used_bytes", int64_t(vtcm.used)}};
      e.duration_us = us;
      events->push_back(std::move(e));
    }
    return Status::success();
  }

 private:
  std::vector<Region> regions_;
  std::map<std::string, size_t> by_symbol_;
  DspSession session_;
};

}  // namespace

std::unique_ptr<BackendRuntime> make_runtime() { return std::make_unique<HexagonRuntime>(); }

}  // namespace kiln::hexagon
