// Golden tests: IR text in, passes by name, expected IR text out.
//
// Every tests/golden/**/NAME.kir (but *.expected.kir) is one case:
//   # passes: fold-constants,dead-code-elimination   (optional; default none)
//   # error: <text>       the next line must fail with a message containing <text>
// Without an error line, the output of the passes must equal NAME.expected.kir
// (comment lines ignored), and both files must round-trip through the printer.
// KILN_UPDATE_GOLDEN=1 rewrites the expected files from the current output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/text.h"
#include "transform/pass.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string strip_comments(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '#') continue;
    if (first == std::string::npos && out.empty()) continue;
    out += line + "\n";
  }
  return out;
}

struct Case {
  fs::path path;
  std::vector<std::string> passes;
  std::string error;
  int error_line = 0;
};

Case read_case(const fs::path& p) {
  Case c{p, {}, {}, 0};
  std::istringstream in(read_file(p));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    auto take = [&](const std::string& key) -> std::optional<std::string> {
      size_t at = line.find(key);
      if (at == std::string::npos) return std::nullopt;
      std::string v = line.substr(at + key.size());
      while (!v.empty() && v[0] == ' ') v.erase(0, 1);
      return v;
    };
    if (auto v = take("# passes:")) {
      std::stringstream ss(*v);
      std::string name;
      while (std::getline(ss, name, ','))
        if (!name.empty()) c.passes.push_back(name);
    } else if (auto e = take("# error:")) {
      c.error = *e;
      c.error_line = n + 1;
    }
  }
  return c;
}

std::vector<fs::path> golden_files() {
  std::vector<fs::path> out;
  fs::path root = fs::path(KILN_SOURCE_DIR) / "tests" / "golden";
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() == ".kir" && name.find(".expected.") == std::string::npos &&
        e.path().string().find("/tir/") == std::string::npos)
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_round_trip(const Module& m, const std::string& what) {
  std::string text = print_module(m);
  Module again = parse_module(text, what + " (printed)");
  EXPECT_TRUE(structural_equal(m, again)) << what << ": printing then parsing changed the module";
  EXPECT_EQ(print_module(again), text) << what << ": printing is not stable";
}

class Golden : public ::testing::TestWithParam<fs::path> {};

TEST_P(Golden, Matches) {
  Case c = read_case(GetParam());
  if (!c.error.empty()) {
    try {
      Module m = load_module(c.path.string());
      run_passes(m, c.passes);
      ADD_FAILURE() << "expected an error containing: " << c.error;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << "got: " << e.what();
      if (e.loc().known()) {
        EXPECT_EQ(e.loc().line, c.error_line) << "error at the wrong line: " << e.what();
      }
    }
    return;
  }
  Module in = load_module(c.path.string());
  expect_round_trip(in, c.path.string());
  Module out = run_passes(in, c.passes);
  std::string got = print_module(out);
  fs::path expected = c.path;
  expected.replace_extension(".expected.kir");
  if (std::getenv("KILN_UPDATE_GOLDEN")) {
    std::ofstream(expected) << got;
    return;
  }
  ASSERT_TRUE(fs::exists(expected)) << "missing " << expected << " (KILN_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(strip_comments(got), strip_comments(read_file(expected))) << "for " << c.path;
  expect_round_trip(load_module(expected.string()), expected.string());
}

std::string case_name(const ::testing::TestParamInfo<fs::path>& info) {
  fs::path rel = fs::relative(info.param, fs::path(KILN_SOURCE_DIR) / "tests" / "golden");
  std::string s = rel.replace_extension("").string();
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Passes, Golden, ::testing::ValuesIn(golden_files()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Golden);

}  // namespace
}  // namespace kiln
