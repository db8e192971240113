// Golden tests for tensor-IR passes: tests/golden/tir/*.kir.
//
// A file holds a prim function, the passes to run (by name) and either the
// exact expected output or the expected error:
//
//   # PASSES: lower-scratchpad-alloc, simplify
//   # CAPACITY: 262144          (optional: the target's scratchpad bytes)
//   # STACK-LIMIT: 1024         (optional: lower-workspace-alloc's limit in bytes)
//   # VECTOR-BYTES: 32          (optional: vectorize-loops' vector width)
//   # VECTOR-REGISTERS: 16      (optional: interleave-accumulators' registers)
//   # CHECK-BOUNDS: on          (optional: check-bounds' run-time checks)
//   prim @f(...) { ... }
//   # EXPECTED OUTPUT
//   prim @f(...) { ... }
//
// or, instead of the output, `# EXPECTED ERROR` followed by the message
// lines. The expected output must also parse back and print identically.
// KILN_UPDATE_GOLDEN=1 rewrites expected outputs (review the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::tir {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

// "# KEY: value" header value, or "".
std::string header(const std::string& text, const std::string& key) {
  std::string tag = "# " + key + ":";
  size_t p = text.find(tag);
  if (p == std::string::npos) return "";
  size_t e = text.find('\n', p);
  return trim(text.substr(p + tag.size(), e - p - tag.size()));
}

// "# " removed from each line of an expected-error block.
std::string uncomment(const std::string& block) {
  std::stringstream in(block), out;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0)
      line = line.substr(2);
    else if (line == "#")
      line = "";
    out << (first ? "" : "\n") << line;
    first = false;
  }
  return trim(out.str());
}

std::vector<fs::path> golden_files() {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "tests/golden/tir"))
    if (e.path().extension() == ".kir") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class TirGolden : public ::testing::TestWithParam<fs::path> {};

TEST_P(TirGolden, PassesGiveTheExpectedText) {
  const fs::path path = GetParam();
  std::string text = read_file(path);
  const std::string out_tag = "# EXPECTED OUTPUT\n", err_tag = "# EXPECTED ERROR\n";
  size_t out_at = text.find(out_tag), err_at = text.find(err_tag);
  ASSERT_TRUE(out_at != std::string::npos || err_at != std::string::npos)
      << path << " has neither # EXPECTED OUTPUT nor # EXPECTED ERROR";
  size_t split = std::min(out_at, err_at);
  std::string input = text.substr(0, split);

  TirPassOptions options;
  if (std::string cap = header(input, "CAPACITY"); !cap.empty())
    options.scratchpad_capacity = std::stoull(cap);
  if (header(input, "STATIC-PLAN") == "on") options.static_scratchpad_plan = true;
  if (std::string limit = header(input, "STACK-LIMIT"); !limit.empty())
    options.stack_limit_bytes = std::stoull(limit);
  if (std::string bytes = header(input, "VECTOR-BYTES"); !bytes.empty())
    options.vector_bytes = std::stoll(bytes);
  if (std::string registers = header(input, "VECTOR-REGISTERS"); !registers.empty())
    options.vector_registers = std::stoll(registers);
  // "on": Hexagon's 32 lanes; a number: that many (x86's VNNI: 16 or 8).
  const std::string dots = header(input, "DOT-PRODUCTS");
  if (dots == "on")
    options.dot_lanes = 32;
  else if (!dots.empty())
    options.dot_lanes = std::stoi(dots);
  // int16 pairs (x86's vpmaddwd: 8 or 16 lanes).
  if (std::string pairs = header(input, "PAIR-DOT-PRODUCTS"); !pairs.empty())
    options.dot16_lanes = std::stoi(pairs);
  if (header(input, "CHECK-BOUNDS") == "on") options.check_bounds = true;
  std::vector<std::string> passes;
  std::stringstream names(header(input, "PASSES"));
  for (std::string name; std::getline(names, name, ',');) passes.push_back(trim(name));
  ASSERT_FALSE(passes.empty()) << path << " names no passes";

  auto funcs = parse_prim_functions(input, path.filename().string());
  ASSERT_EQ(funcs.size(), 1u);
  PrimFunc f = funcs[0];
  verify_prim_func(*f);
  if (err_at != std::string::npos) {
    std::string expected = uncomment(text.substr(err_at + err_tag.size()));
    try {
      for (const auto& p : passes) f = run_tir_pass(p, f, options);
      FAIL() << path << ": expected an error, got\n" << print_prim_func(*f);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), expected) << path;
    }
    return;
  }
  for (const auto& p : passes) f = run_tir_pass(p, f, options);
  std::string expected = text.substr(out_at + out_tag.size());
  std::string got = print_prim_func(*f);
  if (std::getenv("KILN_UPDATE_GOLDEN")) {
    // Rewrites the expected text; review the diff before committing it.
    std::ofstream(path) << input << out_tag << got;
    return;
  }
  EXPECT_EQ(got, expected) << path;
  auto again = parse_prim_functions(expected, "expected");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(print_prim_func(*again[0]), expected) << path << ": expected text does not round-trip";
}

INSTANTIATE_TEST_SUITE_P(Files, TirGolden, ::testing::ValuesIn(golden_files()),
                         [](const ::testing::TestParamInfo<fs::path>& info) {
                           std::string n = info.param.stem().string();
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(TirPasses, UnknownPassNameListsTheKnownOnes) {
  auto f = make_prim_func("f", {}, return_stmt(int_imm(0)));
  try {
    run_tir_pass("lower-vtcm", f);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "unknown tensor-IR pass 'lower-vtcm' (known: check-bounds, flatten-buffers, simplify, "
                 "verify-scratchpad-capacity, lower-scratchpad-alloc, vectorize-loops, "
                 "form-dot-products, unroll-loops, partition-loops, promote-accumulators, "
                 "interleave-accumulators, share-common-subexpressions, "
                 "lower-workspace-alloc)");
  }
}

}  // namespace
}  // namespace kiln::tir
