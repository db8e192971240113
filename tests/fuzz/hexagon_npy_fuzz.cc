// The Hexagon harness's .npy reader and writer (src/runtime/hexagon/npy.c),
// built for the host with ASan and UBSan over an in-memory file system, fed
// mutated files: every input must be read or rejected with a message naming
// the file and parameter, never read out of bounds or overflow. It also
// checks that files the harness writes are what the host's .npy reader reads.
//
//   hexagon_npy_fuzz [ITERATIONS]   (ctest: hexagon_npy_fuzz)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/runtime/npy.h"

#include "runtime/hexagon/npy.h"

extern "C" {
// One file at a time: reads come from g_file, writes go to g_written.
static std::string g_file, g_written;
static size_t g_pos;

int kiln_sys_open(const char* path, int for_writing) {
  if (std::strcmp(path, "missing.npy") == 0) return -2;
  g_pos = 0;
  if (for_writing) g_written.clear();
  return 3;
}
long kiln_sys_read(int, void* buf, size_t n) {
  size_t k = std::min(n, g_file.size() - g_pos);
  std::memcpy(buf, g_file.data() + g_pos, k);
  g_pos += k;
  return long(k);
}
long kiln_sys_write(int, const void* buf, size_t n) {
  g_written.append(static_cast<const char*>(buf), n);
  return long(n);
}
int kiln_sys_close(int) { return 0; }
}

namespace {

uint64_t g_state = 0x2545F4914F6CDD1DULL;
uint64_t next() {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return g_state;
}

struct Case {
  kiln_hx_param param;
  kiln::Tensor tensor;
};

int failures = 0;
void fail(const std::string& what) {
  if (++failures <= 10) std::fprintf(stderr, "FAIL: %s\n", what.c_str());
}

// Reads g_file against the case's parameter: 0 or -1 with a message.
void read_one(const Case& c, const char* path = "in.npy") {
  std::vector<uint8_t> data(c.tensor.nbytes() + 1, 0xab);
  char message[512];
  kiln_text err;
  kiln_text_init(&err, message, sizeof message);
  int rc = kiln_npy_read(path, &c.param, data.data(), c.tensor.nbytes(), &err);
  if (rc != 0 && rc != -1) fail("return code " + std::to_string(rc));
  if (rc == -1 && std::strncmp(message, path, std::strlen(path)) != 0)
    fail(std::string("message does not name the file: ") + message);
  if (data.back() != 0xab) fail("wrote past the buffer");
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 20000;
  static const int64_t shape_a[] = {2048}, shape_b[] = {3, 5}, shape_c[] = {2, 1, 4};
  std::vector<Case> cases = {
      {{"A", 0, 8, 1, 1, shape_a}, kiln::Tensor::zeros({2048}, kiln::DType::Int8)},
      {{"B", 2, 32, 1, 2, shape_b}, kiln::Tensor::zeros({3, 5}, kiln::DType::Float32)},
      {{"C", 0, 32, 1, 3, shape_c}, kiln::Tensor::zeros({2, 1, 4}, kiln::DType::Int32)},
      {{"s", 0, 64, 0, 0, nullptr}, kiln::Tensor::zeros({}, kiln::DType::Int64)},
  };
  for (Case& c : cases)
    for (int64_t i = 0; i < c.tensor.numel(); ++i) c.tensor.set_from_double(i, double(i % 7) - 3.0);

  // Round trip: the harness writes, the host reads; the host writes, the harness reads.
  for (const Case& c : cases) {
    char message[512];
    kiln_text err;
    kiln_text_init(&err, message, sizeof message);
    if (kiln_npy_write("out.npy", &c.param, c.tensor.raw(), c.tensor.nbytes(), &err) != 0) fail(message);
    kiln::Tensor back = kiln::decode_npy(g_written, "harness output");
    if (!back.bitwise_equal(c.tensor)) fail(std::string("harness output of %") + c.param.name + " differs");
    g_file = kiln::encode_npy(c.tensor);
    std::vector<uint8_t> data(c.tensor.nbytes());
    kiln_text_init(&err, message, sizeof message);
    if (kiln_npy_read("in.npy", &c.param, data.data(), data.size(), &err) != 0) fail(message);
    if (std::memcmp(data.data(), c.tensor.raw(), data.size()) != 0) fail("harness read different values");
  }
  g_file.clear();
  read_one(cases[0], "missing.npy");

  const char* fragments[] = {"'descr'", "'shape'", "'fortran_order'",         ":",     ",",     "(", ")", "'",
                             "\"",      "True",    "99999999999999999999999", "'<i4'", "'|i1'", "{", "}", " ",
                             "\n",      "\0"};
  for (int it = 0; it < iterations; ++it) {
    const Case& c = cases[next() % cases.size()];
    std::string f = kiln::encode_npy(c.tensor);
    size_t header_end = std::min<size_t>(f.size(), 128);
    switch (next() % 5) {
      case 0:  // flip bytes, mostly in the header
        for (int k = 1 + int(next() % 8); k > 0; --k) f[next() % header_end] ^= char(1 << (next() % 8));
        break;
      case 1:  // truncate
        f.resize(next() % (f.size() + 1));
        break;
      case 2: {  // splice a fragment into the header
        const char* frag = fragments[next() % (sizeof fragments / sizeof *fragments)];
        f.insert(10 + next() % (header_end - 10), frag, std::max<size_t>(1, std::strlen(frag)));
        break;
      }
      case 3:  // a random header length
        f[8] = char(next());
        f[9] = char(next());
        break;
      default:  // random bytes anywhere
        for (int k = 1 + int(next() % 16); k > 0; --k) f[next() % f.size()] = char(next());
    }
    g_file = f;
    read_one(c);
  }
  std::printf("hexagon_npy_fuzz: %d mutated files, %d failures\n", iterations, failures);
  return failures == 0 ? 0 : 1;
}
