// A libFuzzer target without libFuzzer: the normal build links each fuzz
// target (tests/fuzz/*_fuzz.cc) with this driver, so that `make test` replays
// the kept corpus (tests/fuzz/corpus/<target>/) through the same entry points
// kiln's commands use, and then runs deterministic mutations of it for a few
// seconds. The instrumented libFuzzer build (`make fuzz`, scripts/fuzz.sh) is
// where the real fuzzing happens; this driver keeps every input that once
// crashed kiln a test, and catches the shallow regressions quickly.
//
//   parse_fuzz_replay [--seconds N] [--seed S] PATH...
//
// A PATH may be a file or a folder (every regular file in it). An input that
// crashes, or throws anything but kiln::Error, ends the program the way it
// would under libFuzzer (the target aborts); the driver first writes that
// input to ./replay-crash-input, so the failure can be reproduced and kept.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>
#include <csignal>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

struct Input {
  std::string name;
  std::string bytes;
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The input being run, for the crash handler.
const std::string* g_current = nullptr;

extern "C" void save_crash_input(int sig) {
  if (g_current) {
    int fd = ::open("replay-crash-input", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, g_current->data(), g_current->size());
      (void)ignored;
      ::close(fd);
    }
    const char msg[] = "fuzz replay: crashed; the input is in ./replay-crash-input\n";
    ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    (void)ignored;
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void run_one(const std::string& bytes) {
  g_current = &bytes;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  g_current = nullptr;
}

uint64_t next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// Byte strings that often sit on a boundary of a parser's checks.
const char* const kInteresting[] = {"-9223372036854775808",
                                    "9223372036854775807",
                                    "18446744073709551616",
                                    "-1",
                                    "0",
                                    "4294967296",
                                    "1e39",
                                    "nan",
                                    "\xff\xfe",
                                    "\"",
                                    "{",
                                    "[",
                                    "]"};

std::string mutate(std::string b, const std::vector<Input>& inputs, uint64_t& s) {
  int rounds = 1 + static_cast<int>(next(s) % 4);
  for (int r = 0; r < rounds; ++r) {
    if (b.empty()) b.push_back(static_cast<char>(next(s)));
    size_t at = next(s) % b.size();
    switch (next(s) % 7) {
      case 0:  // flip a bit
        b[at] = static_cast<char>(b[at] ^ (1 << (next(s) % 8)));
        break;
      case 1:  // truncate
        b.resize(at);
        break;
      case 2:  // duplicate a piece
        b.insert(at, b.substr(at, 1 + next(s) % 32));
        break;
      case 3:  // a random byte
        b[at] = static_cast<char>(next(s));
        break;
      case 4:  // erase a piece
        b.erase(at, 1 + next(s) % 16);
        break;
      case 5:  // an interesting token
        b.insert(at, kInteresting[next(s) % std::size(kInteresting)]);
        break;
      case 6: {  // splice in a piece of another input
        const std::string& other = inputs[next(s) % inputs.size()].bytes;
        if (other.empty()) break;
        size_t from = next(s) % other.size();
        b.insert(at, other.substr(from, 1 + next(s) % 64));
        break;
      }
    }
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  std::vector<Input> inputs;
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, save_crash_input);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
      continue;
    }
    if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 0);
      continue;
    }
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(a))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) inputs.push_back({f.string(), read_all(f)});
    } else if (fs::is_regular_file(a, ec)) {
      inputs.push_back({a, read_all(a)});
    } else {
      std::fprintf(stderr, "error: no such input file or folder: %s\n", a.c_str());
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "error: no inputs (give corpus files or folders)\n");
    return 2;
  }
  for (const auto& in : inputs) {
    std::fprintf(stderr, "replay %s\n", in.name.c_str());
    run_one(in.bytes);
  }
  long mutations = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (seconds > 0 && std::chrono::steady_clock::now() < end) {
    // A batch between clock reads; the seed and count reproduce a failure.
    for (int k = 0; k < 16; ++k, ++mutations) {
      const Input& base = inputs[next(seed) % inputs.size()];
      std::string m = mutate(base.bytes, inputs, seed);
      run_one(m);
    }
  }
  std::printf("%zu corpus inputs replayed, %ld mutations run, no crash\n", inputs.size(), mutations);
  return 0;
}
