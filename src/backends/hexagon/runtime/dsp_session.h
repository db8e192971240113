// The host end of a DSP session (protocol: src/runtime/hexagon/session.h).
//
// One session is one `qemu-hexagon-static -cpu v67 EXE --serve` process,
// started when a module is loaded and stopped when it is unloaded; requests
// go over a socket pair on the process's stdin and stdout. Every wait has a
// time limit, and an emulator that exits, crashes or stops answering is an
// error naming the request and what the process said on stderr, never a
// hang. Requests are serialized (one DSP); run() may be called from several
// threads.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/runtime/backend.h"

namespace kiln::hexagon {

struct SessionSlot {
  uint64_t bytes = 0;
  const void* data = nullptr;  // constants: their bytes, sent with LOAD
};

struct SessionStep {
  std::string kernel;  // the harness entry
  std::vector<uint32_t> args;
};

struct SessionRegion {
  std::vector<uint32_t> inputs, outputs;
  std::vector<SessionStep> steps;
};

struct VtcmFigures {
  uint64_t capacity = 0, high_water = 0, allocations = 0, failed = 0, used = 0;
};

class DspSession {
 public:
  DspSession() = default;
  ~DspSession();
  DspSession(const DspSession&) = delete;
  DspSession& operator=(const DspSession&) = delete;

  // Starts the emulator on `executable` (a path) and sends LOAD.
  Status start(const std::string& executable, const std::vector<SessionSlot>& slots,
               const std::vector<SessionRegion>& regions, int timeout_seconds);
  // Runs region `r`: `inputs` and `outputs` are the region's input and output
  // slots' memory, in order, of the slots' sizes. `what` names the region in errors.
  Status run(uint32_t r, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
             const std::string& what, VtcmFigures* vtcm);
  // The emulator's process id (0 when not running), for tests.
  int pid() const { return pid_; }

 private:
  Status request(const std::string& what, const std::vector<std::pair<const void*, uint64_t>>& send,
                 const std::vector<std::pair<void*, uint64_t>>& receive, VtcmFigures* vtcm);
  Status send_all(const void* p, uint64_t n, const std::string& what);
  Status receive_all(void* p, uint64_t n, const std::string& what);
  Status broken(const std::string& what, const std::string& why);
  void stop();
  void drain_stderr(int wait_ms);

  std::mutex mutex_;
  int pid_ = 0;
  int sock_ = -1;  // our end of the session
  int err_ = -1;   // the emulator's stderr
  std::string stderr_text_;
  std::string dead_;  // why the session ended, once it has
  int timeout_ms_ = 300000;
  std::vector<SessionRegion> regions_;
  std::vector<uint64_t> slot_bytes_;
};

}  // namespace kiln::hexagon
