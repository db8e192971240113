// Fuzz target for the kiln.graph JSON loader (runtime/graph.h
// graph_from_json), which reads every backend's serialized graph and the host
// program of a .kmod.
//
// Any byte string must either load or throw kiln::Error: a crash, a sanitizer
// report, a hang or another exception is a bug. What loads must round-trip:
// write, load again, and write the same text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  kiln::Graph g;
  try {
    g = kiln::graph_from_json(text, "fuzz.json");
  } catch (const kiln::Error&) {
    return 0;  // the expected outcome for most inputs
  }
  std::string written = kiln::graph_to_json(g);
  try {
    if (kiln::graph_to_json(kiln::graph_from_json(written, "written.json")) != written) {
      std::fprintf(stderr, "round trip changed the graph:\n%s\n", written.c_str());
      std::abort();
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "a loaded graph, written again, does not load: %s\n%s\n", e.what(), written.c_str());
    std::abort();
  }
  return 0;
}
