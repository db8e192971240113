// Bounded reads and atomic writes of whole files (POSIX).
#include "runtime/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kiln/runtime/error.h"

namespace kiln {
namespace {

constexpr uint64_t kDefaultMaxFileBytes = uint64_t{16} << 30;

std::string errno_str() { return std::strerror(errno); }

// Closes the descriptor when the scope ends (unless released).
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// /dev/null, a pipe, a terminal: nothing to rename over, so written as it is.
void write_in_place(const std::string& path, std::string_view bytes) {
  Fd f{::open(path.c_str(), O_WRONLY | O_CLOEXEC)};
  if (f.fd < 0) throw Error("cannot write '" + path + "': " + errno_str());
  if (!write_all(f.fd, bytes)) throw Error("cannot write '" + path + "': " + errno_str());
}

std::string folder_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

uint64_t byte_limit_from_env(const char* name, uint64_t fallback, bool allow_zero) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  auto bad = [&] {
    return Error(std::string(name) + "='" + v + "': expected a " + (allow_zero ? "" : "positive ") +
                 "byte count, optionally with a K, M, G or T suffix (e.g. 16G)");
  };
  uint64_t n = 0;
  const char* p = v;
  for (; *p >= '0' && *p <= '9'; ++p)
    if (__builtin_mul_overflow(n, uint64_t{10}, &n) || __builtin_add_overflow(n, uint64_t(*p - '0'), &n))
      throw bad();
  if (p == v) throw bad();
  int shift = 0;
  switch (*p) {
    case 'K':
    case 'k':
      shift = 10;
      break;
    case 'M':
    case 'm':
      shift = 20;
      break;
    case 'G':
    case 'g':
      shift = 30;
      break;
    case 'T':
    case 't':
      shift = 40;
      break;
    case '\0':
      break;
    default:
      throw bad();
  }
  if (shift && *++p) throw bad();
  if ((n == 0 && !allow_zero) || n > (UINT64_MAX >> shift)) throw bad();
  return n << shift;
}

std::string bytes_str(uint64_t bytes) {
  std::string s = std::to_string(bytes) + " bytes";
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = -1;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  if (unit < 0) return s;
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%.4g %s)", v, kUnits[unit]);
  return s + buf;
}

uint64_t max_file_bytes() { return byte_limit_from_env("KILN_MAX_FILE_BYTES", kDefaultMaxFileBytes); }

namespace {

// Reads `fd` to its end, refusing more than `limit` bytes.
std::string read_bounded(int fd, const std::string& path, const std::string& what, uint64_t limit,
                         uint64_t size_hint) {
  std::string out;
  out.reserve(static_cast<size_t>(size_hint));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read " + what + ": " + errno_str());
    if (n == 0) break;
    // A pipe, or a file that grew since the stat: still bounded.
    if (out.size() + static_cast<size_t>(n) > limit)
      throw Error(path + ": more than " + bytes_str(limit) + ", larger than the limit of " +
                  bytes_str(limit) + " (set KILN_MAX_FILE_BYTES to raise it)");
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

void check_file_size(const std::string& path, std::string_view kind) {
  std::string what = (kind.empty() ? "" : std::string(kind) + " ") + "'" + path + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot open " + what + ": " + errno_str());
  if (S_ISDIR(st.st_mode)) throw Error(path + ": is a folder, not a file");
  // A device (/dev/zero, /dev/random, a terminal) may never end.
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw Error(path + ": not a regular file (a device or socket); give a file");
  uint64_t limit = max_file_bytes();
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > limit)
    throw Error(path + ": " + bytes_str(static_cast<uint64_t>(st.st_size)) + ", larger than the limit of " +
                bytes_str(limit) + " (set KILN_MAX_FILE_BYTES to raise it)");
}

std::string read_file(const std::string& path, std::string_view kind) {
  std::string what = (kind.empty() ? "" : std::string(kind) + " ") + "'" + path + "'";
  check_file_size(path, kind);
  struct stat st {};
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw Error("cannot open " + what + ": " + errno_str());
  uint64_t hint = ::fstat(f.fd, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  return read_bounded(f.fd, path, what, max_file_bytes(), hint);
}

FileBytes map_file(const std::string& path, std::string_view kind) {
  std::string what = (kind.empty() ? "" : std::string(kind) + " ") + "'" + path + "'";
  check_file_size(path, kind);
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw Error("cannot open " + what + ": " + errno_str());
  struct stat st {};
  auto read = [&](uint64_t hint) {
    auto text = std::make_shared<const std::string>(read_bounded(f.fd, path, what, max_file_bytes(), hint));
    return FileBytes{text, *text};
  };
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
    return read(S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0);
  const size_t size = static_cast<size_t>(st.st_size);
  if (static_cast<uint64_t>(size) > max_file_bytes())  // changed since the check
    throw Error(path + ": " + bytes_str(size) + ", larger than the limit of " + bytes_str(max_file_bytes()) +
                " (set KILN_MAX_FILE_BYTES to raise it)");
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd, 0);
  if (p == MAP_FAILED) return read(size);  // a file system that cannot map files
  ::madvise(p, size, MADV_WILLNEED);
  std::shared_ptr<const void> owner(p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
  return {owner, std::string_view(static_cast<const char*>(p), size)};
}

std::string read_input(const std::string& path, std::string_view kind) {
  if (path != "-") return read_file(path, kind);
  if (::isatty(0))
    throw Error(
        "'-' reads " + (kind.empty() ? std::string("the input") : std::string(kind)) +
        " from standard input, which is a terminal; pipe a file in (kiln ... - < FILE) or name the file");
  return read_bounded(0, "standard input", "standard input", max_file_bytes(), 0);
}

void write_output(const std::string& path, std::string_view bytes) {
  if (path != "-") return write_file(path, bytes);
  std::fflush(stdout);  // what the program printed before comes first
  if (!write_all(1, bytes)) throw Error("cannot write to standard output: " + errno_str());
}

void write_file(const std::string& path, std::string_view bytes, bool executable) {
  if (path.empty()) throw Error("cannot write a file with an empty name");
  struct stat st {};
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    throw Error("cannot write '" + path + "': it is a folder; give a file name");
  if (exists && !S_ISREG(st.st_mode)) return write_in_place(path, bytes);
  // A symbolic link keeps pointing where it did: the file it names is replaced.
  std::string target = path;
  if (exists) {
    char real[PATH_MAX];
    if (::realpath(path.c_str(), real)) target = real;
  }
  static std::atomic<uint64_t> counter{0};
  std::string dir = folder_of(target);
  std::string base = target.substr(target.rfind('/') == std::string::npos ? 0 : target.rfind('/') + 1);
  std::string tmp;
  Fd f;
  for (int attempt = 0; f.fd < 0; ++attempt) {
    tmp = (dir == "/" ? "" : dir) + "/." + base + ".tmp-" + std::to_string(::getpid()) + "-" +
          std::to_string(counter++);
    f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, executable ? 0777 : 0666);
    if (f.fd < 0 && (errno != EEXIST || attempt > 100))
      throw Error("cannot write '" + path + "': cannot create a file in " + dir + ": " + errno_str());
  }
  auto fail = [&](const std::string& why) {
    ::unlink(tmp.c_str());
    return Error("cannot write '" + path + "': " + why);
  };
  if (exists) ::fchmod(f.fd, st.st_mode & 07777);
  if (!write_all(f.fd, bytes)) throw fail(errno_str());
  int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) throw fail(errno_str());
  if (::rename(tmp.c_str(), target.c_str()) != 0) throw fail(errno_str());
}

}  // namespace kiln
