// libFuzzer target for the .kir parser.
//
// Any byte sequence must either parse or throw kiln::Error: a crash, a
// sanitizer report, a hang or any other exception is a bug. What parses must
// also round-trip: print, parse again, and print the same text. (Structure
// is compared by the unit tests: a NaN attribute is never equal to itself.)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ir/text.h"

namespace {

const kiln::ConstantStore& side_store() {
  // A few named constants so that references into a side file get exercised.
  static const kiln::ConstantStore store = {
      {"w", kiln::Tensor::from_floats({2}, {1.0f, -2.0f})},
      {"conv1.weight", kiln::Tensor::from_floats({2, 1, 1, 1}, {0.5f, 0.25f})},
      {"ids", kiln::Tensor::from_ints({3}, {1, 2, 3}, kiln::DType::Int64)},
  };
  return store;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::Module m;
  try {
    m = kiln::parse_module(text, "fuzz.kir", &side_store());
  } catch (const kiln::Error&) {
    return 0;  // a clean error is the expected outcome for most inputs
  }
  std::string printed = kiln::print_module(m);
  try {
    kiln::Module again = kiln::parse_module(printed, "printed.kir", &side_store());
    if (kiln::print_module(again) != printed) {
      std::fprintf(stderr, "round trip changed the module:\n%s\n", printed.c_str());
      std::abort();
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "printed text does not parse: %s\n%s\n", e.what(), printed.c_str());
    std::abort();
  }
  return 0;
}
