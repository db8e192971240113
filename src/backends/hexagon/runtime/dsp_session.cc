// The host end of a DSP session.
#include "backends/hexagon/runtime/dsp_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "runtime/hexagon/session.h"

namespace kiln::hexagon {
namespace {

const char* kEmulator = "qemu-hexagon-static";

using Clock = std::chrono::steady_clock;

std::string exit_description(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

void put_u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }

}  // namespace

DspSession::~DspSession() { stop(); }

void DspSession::stop() {
  if (pid_ > 0) {
    if (dead_.empty() && sock_ >= 0) {
      // QUIT, then give the emulator a moment to exit by itself.
      std::string quit;
      put_u32(quit, KILN_HX_SESSION_MAGIC);
      put_u32(quit, KILN_HX_SESSION_VERSION);
      put_u32(quit, KILN_HX_QUIT);
      (void)send(sock_, quit.data(), quit.size(), MSG_NOSIGNAL);
      shutdown(sock_, SHUT_WR);
      for (int i = 0; i < 50; ++i) {
        int status;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = 0;
          break;
        }
        usleep(10000);
      }
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status;
      waitpid(pid_, &status, 0);
    }
    pid_ = 0;
  }
  if (sock_ >= 0) close(sock_);
  if (err_ >= 0) close(err_);
  sock_ = err_ = -1;
}

void DspSession::drain_stderr(int wait_ms) {
  if (err_ < 0) return;
  auto deadline = Clock::now() + std::chrono::milliseconds(wait_ms);
  char buf[4096];
  for (;;) {
    pollfd p{err_, POLLIN, 0};
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (poll(&p, 1, left > 0 ? left : 0) <= 0) return;
    ssize_t n = read(err_, buf, sizeof buf);
    if (n <= 0) return;
    if (stderr_text_.size() < (64u << 10)) stderr_text_.append(buf, size_t(n));
  }
}

Status DspSession::broken(const std::string& what, const std::string& why) {
  drain_stderr(200);
  std::string state;
  if (pid_ > 0) {
    int status;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == 0) {
      usleep(100000);
      r = waitpid(pid_, &status, WNOHANG);
    }
    if (r == pid_) {
      state = "; the emulator " + exit_description(status);
      pid_ = 0;
    }
  }
  std::string text = stderr_text_;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  dead_ = "hexagon: " + what + ": " + why + state + (text.empty() ? "" : "; it said: " + text);
  stop();
  return Status::error(dead_);
}

Status DspSession::start(const std::string& executable, const std::vector<SessionSlot>& slots,
                         const std::vector<SessionRegion>& regions, int timeout_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  timeout_ms_ = timeout_seconds * 1000;
  regions_ = regions;
  for (const auto& s : slots) slot_bytes_.push_back(s.bytes);
  // The session's socket pair, the emulator's stderr, and a pipe through
  // which the child reports a failed exec.
  int sv[2] = {-1, -1}, errp[2] = {-1, -1}, execp[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {sv[0], sv[1], errp[0], errp[1], execp[0], execp[1]})
      if (fd >= 0) close(fd);
  };
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(errp, O_CLOEXEC) != 0 ||
      pipe2(execp, O_CLOEXEC) != 0) {
    std::string why = strerror(errno);
    close_all();
    return Status::error("hexagon: cannot create the session's channels: " + why);
  }
  pid_t pid = fork();
  if (pid < 0) {
    std::string why = strerror(errno);
    close_all();
    return Status::error("hexagon: cannot start the emulator: " + why);
  }
  if (pid == 0) {
    dup2(sv[1], 0);
    dup2(sv[1], 1);
    dup2(errp[1], 2);
    const char* argv[] = {kEmulator, "-cpu", "v67", executable.c_str(), "--serve", nullptr};
    execvp(kEmulator, const_cast<char* const*>(argv));
    int e = errno;
    (void)!write(execp[1], &e, sizeof e);
    _exit(127);
  }
  close(sv[1]);
  close(errp[1]);
  close(execp[1]);
  pid_ = pid;
  sock_ = sv[0];
  err_ = errp[0];
  int exec_errno = 0;
  if (read(execp[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    close(execp[0]);
    int status;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    stop();
    return Status::error(
        std::string("hexagon: cannot run ") + kEmulator + ": " + strerror(exec_errno) +
        (exec_errno == ENOENT ? "; run scripts/setup.sh, which installs qemu-user-static" : ""));
  }
  close(execp[0]);

  std::string head;
  put_u32(head, KILN_HX_SESSION_MAGIC);
  put_u32(head, KILN_HX_SESSION_VERSION);
  put_u32(head, KILN_HX_LOAD);
  put_u32(head, uint32_t(slots.size()));
  for (const auto& s : slots) {
    put_u64(head, s.bytes);
    put_u32(head, s.data != nullptr);
  }
  put_u32(head, uint32_t(regions.size()));
  auto put_list = [&](const std::vector<uint32_t>& l) {
    put_u32(head, uint32_t(l.size()));
    for (uint32_t v : l) put_u32(head, v);
  };
  for (const auto& r : regions) {
    put_list(r.inputs);
    put_list(r.outputs);
    put_u32(head, uint32_t(r.steps.size()));
    for (const auto& st : r.steps) {
      put_u32(head, uint32_t(st.kernel.size()));
      head += st.kernel;
      put_list(st.args);
    }
  }
  std::vector<std::pair<const void*, uint64_t>> send = {{head.data(), head.size()}};
  for (const auto& s : slots)
    if (s.data) send.push_back({s.data, s.bytes});
  return request("loading the module's regions", send, {}, nullptr);
}

Status DspSession::send_all(const void* p, uint64_t n, const std::string& what) {
  const char* b = static_cast<const char*>(p);
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  while (n > 0) {
    pollfd fds[2] = {{sock_, POLLOUT, 0}, {err_, POLLIN, 0}};
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0)
      return broken(what, "the emulator took no input for " + std::to_string(timeout_ms_ / 1000) + " s");
    if (poll(fds, 2, left) < 0 && errno != EINTR) return broken(what, strerror(errno));
    if (fds[1].revents) drain_stderr(0);
    if (!(fds[0].revents & POLLOUT)) {
      if (fds[0].revents & (POLLHUP | POLLERR)) return broken(what, "the session closed");
      continue;
    }
    ssize_t w = ::send(sock_, b, size_t(std::min<uint64_t>(n, 1u << 20)), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (w <= 0) return broken(what, "the session closed while sending");
    b += w;
    n -= uint64_t(w);
  }
  return Status::success();
}

Status DspSession::receive_all(void* p, uint64_t n, const std::string& what) {
  char* b = static_cast<char*>(p);
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  while (n > 0) {
    pollfd fds[2] = {{sock_, POLLIN, 0}, {err_, POLLIN, 0}};
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0)
      return broken(what, "no answer within " + std::to_string(timeout_ms_ / 1000) +
                              " s (set the limit with --option hexagon.timeout=SECONDS)");
    if (poll(fds, 2, left) < 0 && errno != EINTR) return broken(what, strerror(errno));
    if (fds[1].revents) drain_stderr(0);
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t r = recv(sock_, b, size_t(std::min<uint64_t>(n, 1u << 20)), MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (r <= 0) return broken(what, "the emulator closed the session");
    b += r;
    n -= uint64_t(r);
  }
  return Status::success();
}

Status DspSession::request(const std::string& what, const std::vector<std::pair<const void*, uint64_t>>& send,
                           const std::vector<std::pair<void*, uint64_t>>& receive, VtcmFigures* vtcm) {
  if (!dead_.empty()) return Status::error(dead_ + " (the session has ended; load the module again)");
  for (const auto& [p, n] : send)
    if (Status s = send_all(p, n, what); !s.ok()) return s;
  uint32_t head[3];
  if (Status s = receive_all(head, sizeof head, what); !s.ok()) return s;
  if (head[0] != KILN_HX_SESSION_MAGIC) return broken(what, "the emulator's reply is not a session reply");
  std::string message(head[2], '\0');
  if (head[2] > (1u << 20)) return broken(what, "the emulator's reply is malformed");
  if (Status s = receive_all(message.data(), message.size(), what); !s.ok()) return s;
  if (head[1] == 0)
    for (const auto& [p, n] : receive)
      if (Status s = receive_all(p, n, what); !s.ok()) return s;
  uint64_t pool[5];
  if (Status s = receive_all(pool, sizeof pool, what); !s.ok()) return s;
  if (vtcm) *vtcm = {pool[0], pool[1], pool[2], pool[3], pool[4]};
  if (head[1] != 0) return Status::error("hexagon: " + what + ": " + message);
  return Status::success();
}

Status DspSession::run(uint32_t r, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                       const std::string& what, VtcmFigures* vtcm) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (r >= regions_.size())
    return Status::error("hexagon: no region " + std::to_string(r) + " in the session");
  const SessionRegion& region = regions_[r];
  if (inputs.size() != region.inputs.size() || outputs.size() != region.outputs.size())
    return Status::error("hexagon: " + what + ": wrong number of inputs or outputs");
  std::string head;
  put_u32(head, KILN_HX_SESSION_MAGIC);
  put_u32(head, KILN_HX_SESSION_VERSION);
  put_u32(head, KILN_HX_RUN);
  put_u32(head, r);
  std::vector<std::pair<const void*, uint64_t>> send = {{head.data(), head.size()}};
  for (size_t i = 0; i < inputs.size(); ++i) send.push_back({inputs[i], slot_bytes_[region.inputs[i]]});
  std::vector<std::pair<void*, uint64_t>> receive;
  for (size_t i = 0; i < outputs.size(); ++i) receive.push_back({outputs[i], slot_bytes_[region.outputs[i]]});
  return request(what, send, receive, vtcm);
}

}  // namespace kiln::hexagon
