// kiln run --profile-summary's table (profile_summary in
// src/runtime/profile.cc): medians per dispatch over runs, slowest first,
// shares of the summed medians, the rows past `top` as one line, and runs
// that dispatch different nodes refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/profile.h"
#include "test_util.h"

namespace kiln {
namespace {

DispatchEvent event(const std::string& node, double start, double us) {
  DispatchEvent e;
  e.backend = "host";
  e.node = node;
  e.op = "kiln_" + node;
  e.engine = "CPU";
  e.start_us = start;
  e.duration_us = us;
  return e;
}

TEST(ProfileSummary, MediansSlowestFirstWithTheirShares) {
  // a: 10, 12, 11 (median 11); b: 5, 5, 50 (5, a slow outlier ignored); c: 1, 2, 3 (2).
  std::vector<std::vector<DispatchEvent>> runs;
  const double a[] = {10, 12, 11}, b[] = {5, 5, 50}, c[] = {1, 2, 3};
  for (int r = 0; r < 3; ++r)
    runs.push_back({event("c", 0, c[r]), event("a", 10, a[r]), event("b", 30, b[r])});
  const std::string all = profile_summary(runs, 0);
  const size_t ra = all.find("      11.0  61.1%  61.1%  a "), rb = all.find("       5.0  27.8%  88.9%  b "),
               rc = all.find("       2.0  11.1% 100.0%  c ");
  ASSERT_NE(ra, std::string::npos) << all;
  ASSERT_NE(rb, std::string::npos) << all;
  ASSERT_NE(rc, std::string::npos) << all;
  EXPECT_LT(ra, rb);
  EXPECT_LT(rb, rc);
  EXPECT_NE(all.find("kiln_a (host)"), std::string::npos) << all;
  // Spans 35, 35 and 80 us: the median 35.
  EXPECT_NE(all.find("3 dispatches per run over 3 runs: 18.0 us summed medians, 35.0 us median span"),
            std::string::npos)
      << all;
  const std::string top = profile_summary(runs, 1);
  EXPECT_EQ(top.find("  b "), std::string::npos) << top;
  EXPECT_NE(top.find("       7.0  38.9% 100.0%  (2 more dispatches)"), std::string::npos) << top;
}

TEST(ProfileSummary, RunsThatDispatchDifferentNodesAreRefused) {
  std::vector<std::vector<DispatchEvent>> runs = {{event("a", 0, 1), event("b", 1, 1)},
                                                  {event("a", 0, 1), event("x", 1, 1)}};
  EXPECT_NE(testing::error_of([&] { profile_summary(runs, 0); }).find("run dispatches differ at 1: b and x"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
