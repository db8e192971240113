// Fuzz target for the .kmod loader (runtime/module_file.h decode_kmod).
//
// Any byte string must either load or throw kiln::Error: a crash, a sanitizer
// report, a hang or another exception is a bug. The trailing checksum would
// turn away nearly every mutation before the header is read, so the target
// writes the right checksum over the last 8 bytes first; the fuzzer then
// reaches the lengths, the header's JSON, the host program and the constant
// table. (The checksum check itself has unit tests.) What loads must also
// round-trip: encode, load again, and encode to the same bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/module_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.size() >= 8) {
    uint64_t sum = kiln::kmod_checksum(bytes.data(), bytes.size() - 8);
    std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  }
  kiln::Executable exe;
  try {
    exe = kiln::decode_kmod(bytes, "fuzz.kmod");
  } catch (const kiln::Error&) {
    return 0;  // the expected outcome for most inputs
  }
  std::string encoded = kiln::encode_kmod(exe);
  try {
    std::string again = kiln::encode_kmod(kiln::decode_kmod(encoded, "encoded.kmod"));
    if (again != encoded) {
      std::fprintf(stderr, "a loaded .kmod encodes differently after a second load\n");
      std::abort();
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "a loaded .kmod, encoded again, does not load: %s\n", e.what());
    std::abort();
  }
  return 0;
}
