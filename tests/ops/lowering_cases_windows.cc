// Case generators of the window ops for lowering_test.cc: 2-D convs (NCHW
// and channel-blocked), the 2-D pools, and the 3-D convs, transposed convs
// and pools.
#include "lowering_cases.h"

namespace kiln::testing {
namespace {

std::vector<Case> conv2d_cases(Lcg& r) {
  std::vector<Case> cases;
  struct C {
    int64_t n, c, h, w, o, k, s, p, d, g;
  };
  std::vector<C> shapes = {{1, 3, 9, 9, 4, 3, 1, 1, 1, 1},
                           {2, 4, 8, 7, 6, 3, 2, 1, 1, 2},
                           {1, 8, 7, 7, 8, 3, 1, 1, 1, 8},
                           {1, 5, 6, 6, 3, 1, 1, 0, 1, 1},
                           {1, 2, 11, 10, 3, 3, 1, 2, 2, 1},
                           {1, 6, 9, 9, 6, 5, 2, 2, 1, 6},
                           // Pointwise over rows of several column tiles (runs of
                           // them per row tile); rows of 40 and 56 columns (blocks
                           // of more than one vector, the last partial).
                           {1, 16, 3, 320, 32, 1, 1, 0, 1, 1},
                           {1, 24, 2, 40, 24, 1, 1, 0, 1, 1},
                           {1, 16, 4, 56, 16, 3, 1, 1, 1, 16},
                           // One output channel: output rows blocked by 6.
                           {1, 4, 6, 32, 1, 3, 1, 1, 1, 1}};
  for (const C& s : shapes) {
    Attrs a{{"strides", std::vector<int64_t>{s.s, s.s}},
            {"padding", std::vector<int64_t>{s.p, s.p, s.p + (r.integer(0, 1)), s.p}},
            {"dilation", std::vector<int64_t>{s.d, s.d}},
            {"groups", s.g}};
    cases.push_back({{f32({s.n, s.c, s.h, s.w}), f32({s.o, s.c / s.g, s.k, s.k})}, a, {}, 1e-5});
  }
  Attrs a{{"padding", std::vector<int64_t>{1, 1}}};
  cases.push_back(
      {{typed({1, 4, 6, 6}, DType::Int8), typed({5, 4, 3, 3}, DType::Int8)}, a, {{-128, 127}, {-128, 127}}});
  return cases;
}

// Channel-blocked convs (NCHWc): blocks of 4, 8 and 16 channels, one group
// or depthwise, padded, strided and dilated, and one on NCHW data.
std::vector<Case> conv2d_blocked_cases(Lcg&) {
  struct C {
    Shape x, w;
    int64_t s, p, d, g;
  };
  std::vector<C> shapes = {{{1, 2, 9, 9, 8}, {2, 2, 3, 3, 8, 8}, 1, 1, 1, 1},
                           {{1, 1, 7, 10, 16}, {3, 1, 1, 1, 16, 16}, 1, 0, 1, 1},
                           {{2, 1, 9, 11, 4}, {3, 1, 3, 3, 4, 4}, 2, 1, 1, 1},
                           {{1, 1, 8, 8, 8}, {1, 1, 3, 3, 8, 8}, 1, 2, 2, 1},
                           {{1, 2, 8, 7, 16}, {2, 1, 3, 3, 1, 16}, 2, 1, 1, 32},
                           {{1, 3, 6, 20, 8}, {3, 1, 5, 5, 1, 8}, 1, 2, 1, 24},
                           // NCHW data, read as blocks of one channel.
                           {{1, 3, 9, 9}, {2, 3, 3, 3, 1, 8}, 2, 1, 1, 1}};
  std::vector<Case> cases;
  for (const C& c : shapes)
    cases.push_back({{f32(c.x), f32(c.w)},
                     Attrs{{"strides", std::vector<int64_t>{c.s, c.s}},
                           {"padding", std::vector<int64_t>{c.p, c.p}},
                           {"dilation", std::vector<int64_t>{c.d, c.d}},
                           {"groups", c.g}},
                     {},
                     1e-5});
  return cases;
}

std::vector<Case> pool_cases(Lcg& r, bool avg) {
  std::vector<Case> cases;
  for (int i = 0; i < 4; ++i) {
    int64_t k = r.integer(2, 3), s = r.integer(1, 2), p = r.integer(0, k - 1);
    Attrs a{{"pool_size", std::vector<int64_t>{k, k}},
            {"strides", std::vector<int64_t>{s, s}},
            {"padding", std::vector<int64_t>{p, p, p, r.integer(0, k - 1)}},
            {"ceil_mode", int64_t(i % 2)}};
    if (avg) a.set("count_include_pad", int64_t(i / 2));
    cases.push_back({{f32({1, r.integer(1, 3), r.integer(5, 9), r.integer(5, 9)})}, a});
  }
  if (!avg)
    cases.push_back(
        {{typed({1, 2, 6, 6}, DType::Int8)},
         Attrs{{"pool_size", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}},
         {{-128, 127}}});
  return cases;
}

// 3-D windows (NCDHW): convs strided, dilated, grouped and depthwise, with
// asymmetric padding, and an int8 one accumulating in int32; pools with and
// without ceil_mode, padding and count_include_pad, and an int8 max.
std::vector<Case> conv3d_cases(Lcg&) {
  struct C {
    int64_t c, d, h, w, o, k, s, p, dil, g;
  };
  const C shapes[] = {{3, 5, 6, 7, 4, 3, 1, 1, 1, 1},
                      {4, 6, 7, 9, 6, 3, 2, 1, 1, 2},
                      {8, 4, 5, 18, 8, 3, 1, 1, 1, 8},
                      {5, 3, 4, 20, 16, 1, 1, 0, 1, 1},
                      {2, 7, 7, 7, 3, 2, 1, 2, 2, 1}};
  std::vector<Case> cases;
  for (const C& s : shapes) {
    Attrs a{{"strides", std::vector<int64_t>{s.s, s.s, s.s}},
            {"padding", std::vector<int64_t>{s.p, s.p, s.p, s.p, s.p + 1, s.p}},
            {"dilation", std::vector<int64_t>{s.dil, s.dil, s.dil}},
            {"groups", s.g}};
    cases.push_back({{f32({1, s.c, s.d, s.h, s.w}), f32({s.o, s.c / s.g, s.k, s.k, s.k})}, a, {}, 1e-5});
  }
  cases.push_back({{typed({1, 3, 4, 5, 6}, DType::Int8), typed({4, 3, 3, 3, 3}, DType::Int8)},
                   Attrs{{"padding", std::vector<int64_t>{1, 1, 1}}},
                   {{-128, 127}, {-128, 127}}});
  return cases;
}

// Transposed: strides 1 and 2 (an upsampling 2x2x2 / 2 among them),
// padding, output_padding, dilation, groups; an int8 one.
std::vector<Case> conv3d_transpose_cases(Lcg&) {
  struct C {
    int64_t c, d, h, w, o, k, s, p, op, dil, g;
  };
  const C shapes[] = {{4, 3, 4, 5, 3, 3, 1, 1, 0, 1, 1},
                      {4, 3, 4, 9, 6, 2, 2, 0, 0, 1, 1},
                      {6, 2, 3, 4, 4, 3, 2, 1, 1, 1, 2},
                      {2, 3, 3, 3, 2, 2, 1, 0, 0, 2, 1}};
  std::vector<Case> cases;
  for (const C& s : shapes) {
    Attrs a{{"strides", std::vector<int64_t>{s.s, s.s, s.s}},
            {"padding", std::vector<int64_t>{s.p, s.p, s.p}},
            {"output_padding", std::vector<int64_t>{s.op, s.op, s.op}},
            {"dilation", std::vector<int64_t>{s.dil, s.dil, s.dil}},
            {"groups", s.g}};
    cases.push_back({{f32({1, s.c, s.d, s.h, s.w}), f32({s.c, s.o / s.g, s.k, s.k, s.k})}, a, {}, 1e-5});
  }
  cases.push_back({{typed({1, 3, 2, 3, 4}, DType::Int8), typed({3, 2, 2, 2, 2}, DType::Int8)},
                   Attrs{{"strides", std::vector<int64_t>{2, 2, 2}}},
                   {{-128, 127}, {-128, 127}}});
  return cases;
}

std::vector<Case> pool3d_cases(Lcg& r, bool avg) {
  std::vector<Case> cases;
  for (int i = 0; i < 4; ++i) {
    const int64_t k = r.integer(2, 3), s = r.integer(1, 2), p = r.integer(0, k - 1);
    Attrs a{{"pool_size", std::vector<int64_t>{k, k, 2}},
            {"strides", std::vector<int64_t>{s, s, 1}},
            {"padding", std::vector<int64_t>{p, 0, p, r.integer(0, k - 1), p, 1}},
            {"ceil_mode", int64_t(i % 2)}};
    if (avg) a.set("count_include_pad", int64_t(i / 2));
    cases.push_back({{f32({1, r.integer(1, 3), r.integer(4, 7), r.integer(5, 8), r.integer(5, 20)})}, a});
  }
  if (!avg)
    cases.push_back(
        {{typed({1, 2, 4, 6, 6}, DType::Int8)},
         Attrs{{"pool_size", std::vector<int64_t>{2, 2, 2}}, {"strides", std::vector<int64_t>{2, 2, 2}}},
         {{-128, 127}}});
  return cases;
}

// Max pools with indices, 2-D and 3-D, both storage orders, ceil_mode and
// padding (ties and NaN: CheckedLowering.MaxPoolIndicesMatchTheReference).
std::vector<Case> pool_indices_cases(Lcg& r) {
  std::vector<Case> cases;
  for (int i = 0; i < 4; ++i) {
    const int64_t k = r.integer(2, 3), s = r.integer(1, 2), p = r.integer(0, k - 1);
    Attrs a2{{"pool_size", std::vector<int64_t>{k, k}},
             {"strides", std::vector<int64_t>{s, s}},
             {"padding", std::vector<int64_t>{p, 0, r.integer(0, k - 1), p}},
             {"ceil_mode", int64_t(i % 2)},
             {"storage_order", int64_t(i / 2)}};
    cases.push_back({{f32({2, r.integer(1, 3), r.integer(5, 9), r.integer(5, 19)})}, a2});
    Attrs a3{{"pool_size", std::vector<int64_t>{2, k, k}},
             {"strides", std::vector<int64_t>{1, s, s}},
             {"padding", std::vector<int64_t>{0, p, p}},
             {"ceil_mode", int64_t(i % 2)},
             {"storage_order", int64_t(i / 2)}};
    cases.push_back({{f32({1, 2, r.integer(2, 4), r.integer(5, 8), r.integer(5, 12)})}, a3});
  }
  return cases;
}

}  // namespace

std::map<std::string, CaseGen> window_generators() {
  return {
      {"nn.conv2d", conv2d_cases},
      {"nn.conv2d_blocked", conv2d_blocked_cases},
      {"nn.max_pool2d", [](Lcg& r) { return pool_cases(r, false); }},
      {"nn.avg_pool2d", [](Lcg& r) { return pool_cases(r, true); }},
      {"nn.conv3d", conv3d_cases},
      {"nn.conv3d_transpose", conv3d_transpose_cases},
      {"nn.max_pool3d", [](Lcg& r) { return pool3d_cases(r, false); }},
      {"nn.avg_pool3d", [](Lcg& r) { return pool3d_cases(r, true); }},
      {"nn.max_pool_with_indices", pool_indices_cases},
  };
}

}  // namespace kiln::testing
