// Fuzz target for the ONNX importer (frontend/onnx/importer.h).
//
// Any byte string must either import or throw kiln::Error: a crash, a
// sanitizer report, a hang or another exception is a bug. What imports must
// print as .kir text that kiln's own parser reads back (what `kiln import`
// writes), and that text must print again unchanged.
//
// External data is looked up in a folder that does not exist, so the fuzzer
// never reads files of the machine it runs on.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "frontend/onnx/importer.h"
#include "ir/text.h"
#include "ir/visitor.h"

namespace {

class CollectNamedConstants : public kiln::ExprVisitor {
 public:
  kiln::ConstantStore named;

 protected:
  void visit_Constant(const kiln::ConstantNode& n) override {
    if (!n.name.empty()) named.emplace(n.name, n.value);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::ImportOptions opts;
  // The opset converter's notes ("converted from opset 2 to 7") are not findings.
  static std::ostringstream notes;
  notes.str({});
  opts.log = &notes;
  kiln::Module m;
  try {
    m = kiln::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx", opts,
                                "/nonexistent-kiln-fuzz-dir");
  } catch (const kiln::Error&) {
    return 0;  // the expected outcome for most inputs
  }
  std::string printed = kiln::print_module(m);
  CollectNamedConstants named;
  for (const auto& f : m.functions) named.visit_function(*f);
  try {
    kiln::Module again = kiln::parse_module(printed, "imported.kir", &named.named);
    if (kiln::print_module(again) != printed) {
      std::fprintf(stderr, "the imported module prints differently after a parse:\n%s\n", printed.c_str());
      std::abort();
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln's parser rejects the imported module: %s\n%s\n", e.what(), printed.c_str());
    std::abort();
  }
  return 0;
}
