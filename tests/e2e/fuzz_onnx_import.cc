// Fuzz target for the ONNX importer: any byte string must either import or
// fail with a kiln::Error; never crash, hang, or throw anything else.
//
// With clang and -fsanitize=fuzzer (cmake -DKILN_FUZZ_ONNX=ON) this is a libFuzzer
// target:  kiln_fuzz_onnx_import CORPUS_DIR
// Otherwise it builds as a self-contained driver that mutates seed models
// (byte flips, truncation, duplication, random varints) deterministically:
//   kiln_fuzz_onnx_import --iterations N SEED.onnx...
// The ctest `onnx_import_fuzz_smoke` runs the driver on a few ONNX node tests.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/onnx/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::ImportOptions opts;
  opts.input_shapes.clear();
  try {
    kiln::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx", opts);
  } catch (const kiln::Error&) {
    // The expected outcome for most inputs.
  }
  return 0;
}

#ifndef KILN_LIBFUZZER
namespace {

uint64_t next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

std::string mutate(std::string b, uint64_t& s) {
  int rounds = 1 + static_cast<int>(next(s) % 4);
  for (int r = 0; r < rounds && !b.empty(); ++r) {
    size_t at = next(s) % b.size();
    switch (next(s) % 5) {
      case 0:
        b[at] = static_cast<char>(b[at] ^ (1 << (next(s) % 8)));
        break;  // bit flip
      case 1:
        b.resize(at);
        break;  // truncate
      case 2:
        b.insert(at, b.substr(at, next(s) % 16));
        break;  // duplicate
      case 3:
        b[at] = static_cast<char>(next(s));
        break;  // random byte
      case 4:
        b.insert(at, std::string(1 + next(s) % 4, static_cast<char>(0x80 | (next(s) & 0x7f))));
        break;
    }
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 1000;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      iterations = std::atol(argv[++i]);
      continue;
    }
    std::ifstream in(a, std::ios::binary);
    if (!in) {
      std::cerr << "cannot open seed " << a << "\n";
      return 2;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    seeds.push_back(ss.str());
  }
  if (seeds.empty()) {
    std::cerr << "usage: kiln_fuzz_onnx_import [--iterations N] SEED.onnx...\n";
    return 2;
  }
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  long imported = 0;
  for (long i = 0; i < iterations; ++i) {
    std::string input = mutate(seeds[static_cast<size_t>(i) % seeds.size()], state);
    try {
      kiln::import_onnx_bytes(input, "fuzz.onnx");
      ++imported;
    } catch (const kiln::Error&) {
    } catch (const std::exception& e) {
      // Anything but kiln::Error is a bug: report the input for reproduction.
      std::ofstream("fuzz-crash.onnx", std::ios::binary) << input;
      std::cerr << "iteration " << i << ": non-kiln exception: " << e.what()
                << " (input in fuzz-crash.onnx)\n";
      return 1;
    }
  }
  std::printf("%ld mutated models: %ld imported, %ld rejected with kiln::Error\n", iterations, imported,
              iterations - imported);
  return 0;
}
#endif
