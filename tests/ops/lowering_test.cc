// Every op against its lowering: one program that walks the op registry.
//
// For each registered op there is either a case generator below or in
// lowering_cases_windows.cc (random shapes, attributes and dtypes) or an
// entry in not_lowered() saying why the op stays on its reference kernel. A
// new op without either fails EveryOpIsCoveredOrListed, so an op cannot be
// added without a lowering test or a recorded reason. Each case is lowered (lower_kernel), passed through
// the tensor-IR build passes, linked into one host shared object with every
// other case (the model path: emit_host_shared_object + LoadedHostCode) and
// run; outputs are compared with the reference kernel's on the same inputs:
// integers and bools exactly, floats within float32 rounding of the
// reference (which often computes in float64).
#include <gtest/gtest.h>

#include <limits>

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "codegen/codegen.h"
#include "lower/lower.h"
#include "lowering_cases.h"
#include "lowering_util.h"
#include "op_test_util.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

namespace kiln::testing {
namespace {

// ---------------------------------------------------------------- generators

CaseGen unary(std::vector<DType> dtypes, std::pair<double, double> range = {-3, 3}, Attrs attrs = {}) {
  return [=](Lcg& r) {
    std::vector<Case> cases;
    for (DType t : dtypes)
      for (size_t rank : {1u, 3u, 4u}) cases.push_back({{typed(random_shape(r, rank), t)}, attrs, {range}});
    return cases;
  };
}

CaseGen binary(std::vector<DType> dtypes, std::pair<double, double> ra = {-3, 3},
               std::pair<double, double> rb = {-3, 3}) {
  return [=](Lcg& r) {
    std::vector<Case> cases;
    for (DType t : dtypes) {
      Shape s = random_shape(r, 3, 2, 5);
      cases.push_back({{typed(s, t), typed(s, t)}, {}, {ra, rb}});
      cases.push_back({{typed(s, t), typed({s[2]}, t)}, {}, {ra, rb}});  // trailing broadcast
      cases.push_back({{typed({s[0], 1, s[2]}, t), typed({s[1], 1}, t)}, {}, {ra, rb}});  // both broadcast
      cases.push_back({{typed({}, t), typed(s, t)}, {}, {ra, rb}});                       // scalar
    }
    return cases;
  };
}

CaseGen logic_binary() {
  return [](Lcg& r) {
    Shape s = random_shape(r, 2, 2, 6);
    return std::vector<Case>{{{typed(s, DType::Bool), typed(s, DType::Bool)}, {}, {{0, 1}, {0, 1}}},
                             {{typed(s, DType::Bool), typed({s[1]}, DType::Bool)}, {}, {{0, 1}, {0, 1}}}};
  };
}

const std::vector<DType> kFloat = {DType::Float32};
const std::vector<DType> kNumeric = {DType::Float32, DType::Int32, DType::Int8};

std::vector<Case> reduce_cases(Lcg& r, std::vector<DType> dtypes) {
  std::vector<Case> cases;
  for (DType t : dtypes) {
    Shape s = random_shape(r, 3, 2, 6);
    cases.push_back({{typed(s, t)}, Attrs{{"axis", std::vector<int64_t>{2}}}});
    cases.push_back({{typed(s, t)}, Attrs{{"axis", std::vector<int64_t>{0, -1}}, {"keepdims", int64_t{1}}}});
    cases.push_back({{typed(s, t)}, Attrs{{"axis", std::vector<int64_t>{}}}});
    cases.push_back(
        {{typed({1, 32, 10, 10}, t)}, Attrs{{"axis", std::vector<int64_t>{2, 3}}, {"keepdims", int64_t{1}}}});
  }
  return cases;
}

std::vector<Case> resize_cases(Lcg&) {
  std::vector<Case> cases;
  for (const char* method : {"nearest", "linear"})
    for (const char* mode :
         {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn"})
      for (std::vector<int64_t> size : {std::vector<int64_t>{10, 12}, std::vector<int64_t>{3, 2}})
        cases.push_back({{f32({1, 2, 5, 6})},
                         Attrs{{"size", size},
                               {"method", std::string(method)},
                               {"coordinate_transformation_mode", std::string(mode)}}});
  // A crop reaching past the image on three sides: those outputs extrapolate.
  for (const char* method : {"nearest", "linear"})
    for (std::vector<int64_t> size : {std::vector<int64_t>{7, 6}, std::vector<int64_t>{1, 1}})
      cases.push_back({{f32({1, 2, 5, 6})},
                       Attrs{{"size", size},
                             {"method", std::string(method)},
                             {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                             {"roi", std::vector<double>{-0.2, 0.1, 1.3, 1.25}},
                             {"extrapolation_value", 7.5}}});
  // Cubic (Keys' kernel, its parameter, exclude_outside's renormalized
  // weights) and linear and cubic on 8-bit integers (rounded half to even,
  // saturated: cubic overshoots).
  for (int64_t exclude : {0, 1})
    for (const char* mode : {"half_pixel", "align_corners", "asymmetric"})
      cases.push_back({{f32({1, 2, 5, 6})},
                       Attrs{{"size", std::vector<int64_t>{9, 4}},
                             {"method", std::string("cubic")},
                             {"coordinate_transformation_mode", std::string(mode)},
                             {"cubic_alpha", exclude ? -0.5 : -0.75},
                             {"exclude_outside", exclude}}});
  for (const char* method : {"linear", "cubic"})
    for (DType t : {DType::Int8, DType::UInt8})
      cases.push_back({{typed({1, 2, 4, 5}, t)},
                       Attrs{{"size", std::vector<int64_t>{7, 9}}, {"method", std::string(method)}},
                       {{t == DType::Int8 ? -128.0 : 0.0, t == DType::Int8 ? 127.0 : 255.0}}});
  cases.push_back({{f32({1, 1, 4, 4})},
                   Attrs{{"size", std::vector<int64_t>{8, 8}},
                         {"method", std::string("nearest")},
                         {"coordinate_transformation_mode", std::string("asymmetric")},
                         {"rounding_method", std::string("floor")}}});
  // Asymmetric nearest resizing computes its source index in integers
  // (every rounding, integer and fractional ratios, sizes and an exact
  // integer scale; 8x and 2x upsampling rows wide enough for whole vectors).
  for (const char* rounding : {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"}) {
    for (std::vector<int64_t> size : {std::vector<int64_t>{24, 160}, std::vector<int64_t>{7, 9}})
      cases.push_back({{f32({1, 2, 3, 20})},
                       Attrs{{"size", size},
                             {"method", std::string("nearest")},
                             {"coordinate_transformation_mode", std::string("asymmetric")},
                             {"rounding_method", std::string(rounding)}}});
    cases.push_back({{f32({1, 3, 5, 40})},
                     Attrs{{"size", std::vector<int64_t>{10, 80}},
                           {"scale", std::vector<double>{2.0, 2.0}},
                           {"method", std::string("nearest")},
                           {"coordinate_transformation_mode", std::string("asymmetric")},
                           {"rounding_method", std::string(rounding)}}});
  }
  cases.push_back({{typed({1, 1, 3, 3}, DType::UInt8)},
                   Attrs{{"size", std::vector<int64_t>{6, 5}}, {"method", std::string("nearest")}},
                   {{0, 255}}});
  return cases;
}

std::vector<Case> remainder_cases(Lcg&) {
  return std::vector<Case>{
      {{typed({4, 9}, DType::Int32), typed({4, 9}, DType::Int32)}, {}, {{-50, 50}, {1, 7}}},
      {{typed({4, 9}, DType::Int32), typed({4, 9}, DType::Int32)}, {}, {{-50, 50}, {-7, -1}}},
      {{typed({3, 40}, DType::Int8), typed({40}, DType::Int8)}, {}, {{-128, 127}, {-128, -1}}},
      {{typed({2, 33}, DType::UInt8), typed({1}, DType::UInt8)}, {}, {{0, 255}, {1, 9}}},
      {{typed({5, 6}, DType::Int64), typed({5, 6}, DType::Int64)}, {}, {{-1000, 1000}, {3, 30}}},
      {{f32({3, 37}), f32({3, 37})}, {}, {{-50, 50}, {-7, 7}}},
      {{f32({2, 40}), f32({40})}, {}, {{-1e6, 1e6}, {0.1, 3}}}};
}

// Ties (values from a few integers) pick the first or, with
// select_last_index, the last (NaNs and extremes:
// ArgMaxAndArgMinPickAsTheReference).
std::vector<Case> arg_cases(Lcg& r) {
  std::vector<Case> cases;
  for (int64_t last : {0, 1})
    for (int64_t keepdims : {0, 1}) {
      Attrs a{{"axis", int64_t{1}}, {"keepdims", keepdims}, {"select_last_index", last}};
      cases.push_back({{f32({2, 7, 5})}, a, {{-3, 3}}});
      cases.push_back({{typed({3, 9}, DType::Int8)}, a, {{-128, 127}}});
      cases.push_back({{typed({2, 17}, DType::UInt8)}, a, {{0, 255}}});
      cases.push_back({{typed({3, 40}, DType::Int32)}, a, {{-3, 3}}});
    }
  cases.push_back({{f32(random_shape(r, 3, 2, 40))}, Attrs{{"axis", int64_t{-1}}}});
  cases.push_back({{typed({4, 6}, DType::Int64)}, Attrs{{"axis", int64_t{0}}}, {{-2, 2}}});
  return cases;
}

// Every combination of exclusive and reverse, along the first, a middle
// and the last axis (inner axes vectorized, or none); integers wrap
// (int8 sums past 127, int32 past 2^31: as the reference).
std::vector<Case> cumsum_cases(Lcg&) {
  std::vector<Case> cases;
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1}) {
      Attrs a{{"axis", int64_t{1}}, {"exclusive", exclusive}, {"reverse", reverse}};
      cases.push_back({{f32({2, 9, 19})}, a, {{-3, 3}}});
      cases.push_back({{f32({37})}, Attrs{{"exclusive", exclusive}, {"reverse", reverse}}, {{-3, 3}}});
    }
  cases.push_back({{f32({3, 40})}, Attrs{{"axis", int64_t{-1}}}});
  cases.push_back({{f32({6, 33})}, Attrs{{"axis", int64_t{0}}}});
  cases.push_back({{typed({50}, DType::Int8)}, {}, {{-128, 127}}});
  cases.push_back({{typed({4, 9}, DType::Int32)}, Attrs{{"axis", int64_t{1}}}, {{-2000000000, 2000000000}}});
  cases.push_back(
      {{typed({3, 17}, DType::Int64)}, Attrs{{"axis", int64_t{0}}, {"reverse", int64_t{1}}}, {{-9, 9}}});
  return cases;
}

// Values from a few integers (ties, which go by index), largest and
// smallest, along the last and a middle axis, k of 1, some and all.
std::vector<Case> topk_cases(Lcg&) {
  std::vector<Case> cases;
  for (int64_t largest : {0, 1}) {
    for (int64_t k : {1, 5, 37})
      cases.push_back({{f32({3, 37})}, Attrs{{"k", k}, {"largest", largest}}, {{-4, 4}}});
    cases.push_back({{f32({2, 9, 5})}, Attrs{{"k", int64_t{4}}, {"axis", int64_t{1}}, {"largest", largest}}});
    cases.push_back(
        {{typed({4, 50}, DType::Int32)}, Attrs{{"k", int64_t{7}}, {"largest", largest}}, {{-3, 3}}});
    cases.push_back(
        {{typed({60}, DType::Int64)}, Attrs{{"k", int64_t{10}}, {"largest", largest}}, {{-1000, 1000}}});
  }
  return cases;
}

// Indices over the whole range, so duplicates (the last written wins, or
// all combine) and negative ones (which wrap); every reduction.
std::vector<Case> scatter_elements_cases(Lcg&) {
  std::vector<Case> cases;
  for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
    const Attrs a{{"axis", int64_t{1}}, {"reduction", std::string(reduction)}};
    cases.push_back(
        {{f32({4, 6}), typed({3, 9}, DType::Int64), f32({3, 9})}, a, {{-2, 2}, {-6, 5}, {-2, 2}}});
    cases.push_back(
        {{typed({5, 3, 4}, DType::Int32), typed({2, 3, 4}, DType::Int32), typed({2, 3, 4}, DType::Int32)},
         Attrs{{"reduction", std::string(reduction)}},
         {{-100, 100}, {-5, 4}, {-100, 100}}});
  }
  cases.push_back({{f32({2, 40}), typed({2, 40}, DType::Int64), f32({2, 40})},
                   Attrs{{"axis", int64_t{-1}}},
                   {{-2, 2}, {-40, 39}, {-2, 2}}});
  return cases;
}

// Each reduction, with and without class weights, int32 and int64
// targets over every class, an ignore_index among the classes and one
// outside them (-1, which the targets then also take).
std::vector<Case> nll_loss_cases(Lcg&) {
  std::vector<Case> cases;
  for (const char* reduction : {"none", "sum", "mean"}) {
    const Attrs a{{"reduction", std::string(reduction)}};
    cases.push_back({{f32({5, 4}), typed({5}, DType::Int64)}, a, {{-4, 0}, {0, 3}}});
    cases.push_back({{f32({2, 3, 4, 5}), typed({2, 4, 5}, DType::Int32), f32({3})},
                     Attrs{{"reduction", std::string(reduction)}, {"ignore_index", int64_t{1}}},
                     {{-4, 0}, {0, 2}, {0.5, 2}}});
    cases.push_back({{f32({3, 7, 6}), typed({3, 6}, DType::Int64), f32({7})},
                     Attrs{{"reduction", std::string(reduction)}, {"ignore_index", int64_t{-1}}},
                     {{-4, 0}, {-1, 6}, {0.5, 2}}});
  }
  return cases;
}

// Regions inside, across and outside the image's edges (and some of
// negative size), each mode and coordinate mode, fixed grids of 1 and 2.
std::vector<Case> roi_align_cases(Lcg&) {
  std::vector<Case> cases;
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {1, 2})
        cases.push_back({{f32({2, 3, 8, 9}), f32({5, 4}), typed({5}, DType::Int64)},
                         Attrs{{"mode", std::string(mode)},
                               {"coordinate_transformation_mode", std::string(ctm)},
                               {"sampling_ratio", ratio},
                               {"output_height", int64_t{3}},
                               {"output_width", int64_t{2}},
                               {"spatial_scale", 0.75}},
                         {{-2, 2}, {-3, 13}, {0, 1}}});
  return cases;
}

// Every mode, padding and corner alignment, positions a little past the
// image's edges (zeros, clamped or mirrored there), a batch of two.
std::vector<Case> grid_sample_cases(Lcg&) {
  std::vector<Case> cases;
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* padding : {"zeros", "border", "reflection"})
      for (int64_t align : {0, 1})
        cases.push_back({{f32({2, 3, 5, 7}), f32({2, 4, 6, 2})},
                         Attrs{{"mode", std::string(mode)},
                               {"padding_mode", std::string(padding)},
                               {"align_corners", align}},
                         {{-2, 2}, {-1.4, 1.4}}});
  return cases;
}

// Tuples of one and two indices (whole rows, single elements), the
// reductions; the ranges fit the smallest axis the tuples select along.
std::vector<Case> scatter_nd_cases(Lcg&) {
  std::vector<Case> cases;
  for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
    const Attrs a{{"reduction", std::string(reduction)}};
    cases.push_back(
        {{f32({4, 5, 6}), typed({3, 2}, DType::Int64), f32({3, 6})}, a, {{-2, 2}, {-4, 3}, {-2, 2}}});
    cases.push_back(
        {{f32({6, 7}), typed({2, 2, 1}, DType::Int32), f32({2, 2, 7})}, a, {{-2, 2}, {-6, 5}, {-2, 2}}});
  }
  cases.push_back({{typed({8}, DType::Int64), typed({5, 1}, DType::Int64), typed({5}, DType::Int64)},
                   Attrs{{"reduction", std::string("mul")}},
                   {{-9, 9}, {-8, 7}, {-9, 9}}});
  cases.push_back({{f32({3, 4}), typed({4, 2}, DType::Int64), f32({4})}, {}, {{-2, 2}, {-3, 2}, {-2, 2}}});
  return cases;
}

const std::map<std::string, CaseGen>& other_generators();

const std::map<std::string, CaseGen>& generators() {
  static const std::map<std::string, CaseGen> g = [] {
    std::map<std::string, CaseGen> all = window_generators();
    all.insert(other_generators().begin(), other_generators().end());
    return all;
  }();
  return g;
}

const std::map<std::string, CaseGen>& other_generators() {
  static const std::map<std::string, CaseGen> g = {
      {"add", binary(kNumeric)},
      {"subtract", binary(kNumeric)},
      {"multiply", binary(kNumeric)},
      // Integer divisors of both signs (never 0: the reference fails).
      {"divide",
       [](Lcg& r) {
         std::vector<Case> c = binary(kFloat, {-3, 3}, {0.5, 3})(r);
         for (Case& k : binary({DType::Int32, DType::Int8}, {-100, 100}, {1, 9})(r)) c.push_back(k);
         for (Case& k : binary({DType::Int64}, {-1000, 1000}, {-9, -1})(r)) c.push_back(k);
         return c;
       }},
      // Integers: exponents past the width (products wrap), negative ones
      // on bases other than 0 (0 fails: IntegerPowerOfZeroToANegative...).
      {"power",
       [](Lcg& r) {
         std::vector<Case> cases = binary(kFloat, {0.2, 3}, {-2, 2})(r);
         const DType i32 = DType::Int32;
         cases.push_back({{typed({4, 9}, i32), typed({4, 9}, i32)}, {}, {{-5, 5}, {0, 40}}});
         cases.push_back({{typed({4, 9}, i32), typed({9}, i32)}, {}, {{1, 3}, {-5, 3}}});
         cases.push_back({{typed({4, 9}, i32), typed({4, 9}, i32)}, {}, {{-3, -1}, {-5, 3}}});
         cases.push_back({{typed({3, 10}, DType::Int64), typed({10}, DType::Int64)}, {}, {{-7, 7}, {0, 70}}});
         cases.push_back(
             {{typed({2, 17}, DType::Int8), typed({2, 17}, DType::Int8)}, {}, {{-128, 127}, {0, 127}}});
         cases.push_back({{typed({2, 9}, DType::UInt8), typed({9}, DType::UInt8)}, {}, {{0, 255}, {0, 255}}});
         return cases;
       }},
      {"maximum", binary(kNumeric)},
      {"minimum", binary(kNumeric)},
      {"nn.relu", unary(kNumeric)},
      {"clip",
       [](Lcg& r) {
         auto c = unary(kNumeric)(r);
         for (auto& x : c) x.attrs = Attrs{{"a_min", -1.5}, {"a_max", 2.0}};
         return c;
       }},
      {"sigmoid", unary(kFloat, {-8, 8})},
      {"tanh", unary(kFloat)},
      {"nn.gelu",
       [](Lcg& r) {
         auto c = unary(kFloat)(r);
         auto t = unary(kFloat, {-3, 3}, Attrs{{"approximate", std::string("tanh")}})(r);
         c.insert(c.end(), t.begin(), t.end());
         return c;
       }},
      {"sqrt", unary(kFloat, {0, 9})},
      {"exp", unary(kFloat, {-5, 5})},
      {"negative", unary(kNumeric)},
      {"abs", unary(kNumeric)},
      {"erf", unary(kFloat)},
      {"log", unary(kFloat, {0.01, 9})},
      {"nn.leaky_relu", unary(kFloat, {-3, 3}, Attrs{{"alpha", 0.1}})},
      {"nn.hard_sigmoid", unary(kFloat, {-4, 4}, Attrs{{"alpha", 0.25}, {"beta", 0.4}})},
      {"nn.hard_swish", unary(kFloat, {-5, 5})},
      {"nn.silu", unary(kFloat, {-12, 12})},
      {"floor", unary(kFloat)},
      {"ceil", unary(kFloat)},
      {"round",
       [](Lcg& r) {
         auto c = unary(kFloat, {-4, 4})(r);
         c.push_back({{f32({6})}, {}, {{0, 0}}});  // all 0: the ties are checked below too
         return c;
       }},
      {"sign", unary(kNumeric)},
      {"sin", unary(kFloat)},
      {"cos", unary(kFloat)},
      // The C library's functions in double, rounded once: as the reference.
      {"tan", unary(kFloat, {-1.5, 1.5})},
      {"asin", unary(kFloat, {-1, 1})},
      {"acos", unary(kFloat, {-1, 1})},
      {"atan", unary(kFloat, {-20, 20})},
      {"sinh", unary(kFloat, {-5, 5})},
      {"cosh", unary(kFloat, {-5, 5})},
      {"asinh", unary(kFloat, {-20, 20})},
      {"acosh", unary(kFloat, {1, 20})},
      {"atanh", unary(kFloat, {-1, 1})},
      {"astype",
       [](Lcg& r) {
         std::vector<Case> c;
         for (const char* to : {"int8", "uint8", "int32", "int64", "bool", "float32"})
           c.push_back({{f32(random_shape(r, 2))}, Attrs{{"dtype", std::string(to)}}, {{-300, 300}}});
         c.push_back({{typed(random_shape(r, 2), DType::Int32)}, Attrs{{"dtype", std::string("float32")}}});
         c.push_back({{typed(random_shape(r, 2), DType::Int32)},
                      Attrs{{"dtype", std::string("int8")}},
                      {{-300, 300}}});
         c.push_back(
             {{typed(random_shape(r, 2), DType::Bool)}, Attrs{{"dtype", std::string("float32")}}, {{0, 1}}});
         return c;
       }},
      {"equal", binary({DType::Float32, DType::Int32}, {-2, 2}, {-2, 2})},
      {"not_equal", binary({DType::Int32}, {-2, 2}, {-2, 2})},
      {"less", binary(kNumeric)},
      {"less_equal", binary({DType::Int32}, {-2, 2}, {-2, 2})},
      {"greater", binary(kNumeric)},
      {"greater_equal", binary(kFloat)},
      {"logical_and", logic_binary()},
      {"logical_or", logic_binary()},
      {"logical_xor", logic_binary()},
      {"logical_not", unary({DType::Bool}, {0, 1})},
      {"where",
       [](Lcg& r) {
         Shape s = random_shape(r, 3, 2, 5);
         return std::vector<Case>{
             {{typed(s, DType::Bool), f32(s), f32({s[2]})}, {}, {{0, 1}, {-3, 3}, {-3, 3}}},
             {{typed({s[1], 1}, DType::Bool), f32(s), f32(s)}, {}, {{0, 1}, {-3, 3}, {-3, 3}}}};
       }},
      {"nn.conv2d_transpose",
       [](Lcg&) {
         std::vector<Case> c;
         c.push_back(
             {{f32({1, 4, 5, 5}), f32({4, 3, 2, 2})}, Attrs{{"strides", std::vector<int64_t>{2, 2}}}});
         c.push_back({{f32({2, 4, 4, 5}), f32({4, 2, 3, 3})},
                      Attrs{{"strides", std::vector<int64_t>{2, 1}},
                            {"padding", std::vector<int64_t>{1, 0, 1, 1}},
                            {"output_padding", std::vector<int64_t>{1, 0}},
                            {"groups", int64_t{2}}}});
         c.push_back(
             {{f32({1, 2, 4, 4}), f32({2, 2, 3, 3})}, Attrs{{"dilation", std::vector<int64_t>{2, 2}}}});
         // One output channel, rows of 32: output rows blocked for more accumulators.
         c.push_back(
             {{f32({1, 24, 8, 16}), f32({24, 1, 2, 2})}, Attrs{{"strides", std::vector<int64_t>{2, 2}}}});
         return c;
       }},
      {"nn.block_channels",
       [](Lcg&) {
         return std::vector<Case>{{{f32({2, 8, 3, 5})}, Attrs{{"block", int64_t{4}}}},
                                  {{f32({1, 32, 2, 7})}, Attrs{{"block", int64_t{16}}}}};
       }},
      {"nn.unblock_channels",
       [](Lcg&) {
         return std::vector<Case>{{{f32({2, 2, 3, 5, 4})}}, {{f32({1, 2, 2, 7, 16})}}};
       }},
      {"nn.block_conv_weight",
       [](Lcg&) {
         return std::vector<Case>{
             {{f32({8, 4, 3, 3})}, Attrs{{"in_block", int64_t{4}}, {"out_block", int64_t{8}}}},
             {{f32({32, 1, 3, 3})}, Attrs{{"in_block", int64_t{1}}, {"out_block", int64_t{16}}}}};
       }},
      // Small Winograd convs (WinogradRowsConvMatchesTheReference has the
      // large ones): F(2, 3) and F(4, 3), padded and not, two images.
      {"nn.conv2d_winograd",
       [](Lcg&) {
         auto attrs = [](int64_t m, std::vector<int64_t> padding) {
           return Attrs{{"tile_rows", m}, {"padding", std::move(padding)}};
         };
         return std::vector<Case>{{{f32({1, 3, 9, 10}), f32({4, 3, 4, 3})}, attrs(2, {1, 1, 1, 1})},
                                  {{f32({2, 2, 11, 7}), f32({3, 2, 6, 3})}, attrs(4, {0, 1, 2, 1})},
                                  {{f32({1, 4, 5, 18}), f32({2, 4, 6, 3})}, attrs(4, {0, 0, 0, 0})},
                                  // In channel blocks of 4 and 8.
                                  {{f32({1, 3, 9, 10, 4}), f32({2, 3, 4, 3, 4, 4})}, attrs(2, {1, 1, 1, 1})},
                                  {{f32({2, 2, 11, 7, 8}), f32({1, 2, 6, 3, 8, 8})}, attrs(4, {0, 1, 2, 1})}};
       }},
      {"nn.dense",
       [](Lcg& r) {
         int64_t k = r.integer(3, 40), n = r.integer(1, 20);
         return std::vector<Case>{
             {{f32({r.integer(1, 5), k}), f32({n, k})}, {}},
             {{f32({2, 3, k}), f32({n, k})}, {}},
             {{typed({3, k}, DType::Int8), typed({n, k}, DType::Int8)}, {}, {{-128, 127}, {-128, 127}}},
             // 53 columns: padded to whole tiles, the extra columns never stored.
             {{f32({6, k}), f32({53, k})}, {}},
             // x beyond half of L2: panels of several column tiles.
             {{f32({150, 500}), f32({128, 500})}, {}}};
       }},
      {"nn.pack_matmul_weight",
       [](Lcg& r) {
         int64_t k = r.integer(1, 30);
         return std::vector<Case>{
             {{f32({k, 21})}, Attrs{{"columns", int64_t{8}}}},
             {{f32({16, k})}, Attrs{{"columns", int64_t{16}}, {"transpose", int64_t{1}}}},
             {{f32({k, 5})}, Attrs{{"columns", int64_t{5}}}},
             // int8 in groups of four rows, K of whole groups or not.
             {{typed({k, 21}, DType::Int8)}, Attrs{{"columns", int64_t{8}}}, {{-128, 127}}},
             {{typed({16, k}, DType::Int8)},
              Attrs{{"columns", int64_t{16}}, {"transpose", int64_t{1}}},
              {{-128, 127}}}};
       }},
      {"nn.matmul_packed",
       [](Lcg& r) {
         int64_t m = r.integer(1, 9), k = r.integer(1, 30);
         auto units = [](int64_t n) { return Attrs{{"units", n}}; };
         return std::vector<Case>{{{f32({m, k}), f32({3, k, 8})}, units(20)},
                                  {{f32({2, m, k}), f32({2, k, 16})}, units(32)},
                                  {{f32({k}), f32({5, k, 8})}, units(37)},
                                  // rec's head in small: 40 rows in whole tiles and a few.
                                  {{f32({40, 24}), f32({7, 24, 32})}, units(200)},
                                  // x beyond half of L2: panels of several column tiles.
                                  {{f32({150, 500}), f32({8, 500, 16})}, units(128)},
                                  // uint8 by int8 in groups of four rows: int32.
                                  {{typed({m, k}, DType::UInt8), typed({3, (k + 3) / 4, 8, 4}, DType::Int8)},
                                   units(20),
                                   {{0, 255}, {-128, 127}}},
                                  {{typed({2, 40, 24}, DType::UInt8), typed({4, 6, 16, 4}, DType::Int8)},
                                   units(60),
                                   {{0, 255}, {-128, 127}}}};
       }},
      {"matmul",
       [](Lcg& r) {
         int64_t m = r.integer(1, 9), k = r.integer(1, 30), n = r.integer(1, 17);
         return std::vector<Case>{{{f32({m, k}), f32({k, n})}, {}},
                                  {{f32({2, m, k}), f32({k, n})}, {}},
                                  {{f32({3, 1, m, k}), f32({2, k, n})}, {}},
                                  {{f32({k}), f32({k, n})}, {}},
                                  {{f32({m, k}), f32({k})}, {}},
                                  // Columns padded to whole tiles: 53, 1-D a with 37.
                                  {{f32({5, k}), f32({k, 53})}, {}},
                                  {{f32({2, 3, k}), f32({2, k, 41})}, {}},
                                  {{f32({k}), f32({k, 37})}, {}},
                                  // a beyond half of L2 (rows padded to whole tiles too):
                                  // panels of several column tiles.
                                  {{f32({2, 161, 450}), f32({2, 450, 128})}, {}}};
       }},
      {"nn.adaptive_avg_pool2d",
       [](Lcg&) {
         // Global pooling (sums of columns, then of those): a small image, and
         // one large enough to run in parallel with rows of whole vectors and a tail.
         return std::vector<Case>{
             {{f32({1, 3, 7, 9})}, Attrs{{"output_size", std::vector<int64_t>{1, 1}}}},
             {{f32({2, 40, 37, 70})}, Attrs{{"output_size", std::vector<int64_t>{1, 1}}}},
             {{f32({2, 2, 7, 9})}, Attrs{{"output_size", std::vector<int64_t>{3, 4}}}},
             {{f32({1, 2, 5, 5})}, Attrs{{"output_size", std::vector<int64_t>{5, 2}}}}};
       }},
      {"nn.batch_norm",
       [](Lcg& r) {
         int64_t c = r.integer(1, 6);
         Shape s{2, c, r.integer(1, 5), r.integer(1, 5)};
         std::vector<std::pair<double, double>> ranges = {{-3, 3}, {-2, 2}, {-2, 2}, {-1, 1}, {0.1, 2}};
         return std::vector<Case>{{{f32(s), f32({c}), f32({c}), f32({c}), f32({c})}, {}, ranges},
                                  {{f32({3, c}), f32({c}), f32({c}), f32({c}), f32({c})},
                                   Attrs{{"axis", int64_t{-1}}, {"epsilon", 1e-3}},
                                   ranges}};
       }},
      {"nn.pad",
       [](Lcg& r) {
         std::vector<Case> c;
         for (const char* mode : {"constant", "edge", "reflect"})
           c.push_back({{f32({2, 4, 5})},
                        Attrs{{"pad_width", std::vector<int64_t>{0, 1, 2, 1, 3, 2}},
                              {"mode", std::string(mode)},
                              {"pad_value", 1.5}}});
         c.push_back({{typed({3, 4}, DType::Int32)},
                      Attrs{{"pad_width", std::vector<int64_t>{1, -1, 2, 0}}, {"pad_value", 7.0}}});
         (void)r;
         return c;
       }},
      {"sum",
       [](Lcg& r) {
         return reduce_cases(r, {DType::Float32, DType::Int32, DType::Int64});
       }},
      // Integer means on values from few integers: exact halves, both signs.
      {"mean",
       [](Lcg& r) {
         std::vector<Case> cases = reduce_cases(r, {DType::Float32, DType::Int32});
         for (int64_t n : {2, 4})
           cases.push_back(
               {{typed({16, n}, DType::Int32)}, Attrs{{"axis", std::vector<int64_t>{1}}}, {{-3, 3}}});
         cases.push_back({{typed({6, 7}, DType::Int32)},
                          Attrs{{"axis", std::vector<int64_t>{1}}},
                          {{-1000000000, 1000000000}}});
         return cases;
       }},
      {"max",
       [](Lcg& r) {
         return reduce_cases(r, {DType::Float32, DType::Int32, DType::Int8});
       }},
      {"min",
       [](Lcg& r) {
         return reduce_cases(r, {DType::Float32, DType::Int32, DType::Int8});
       }},
      {"prod",
       [](Lcg& r) {
         return reduce_cases(r, {DType::Float32, DType::Int32, DType::Int64});
       }},
      {"nn.softmax",
       [](Lcg& r) {
         Shape s = random_shape(r, 3, 2, 7);
         // A long last axis (partial maxima and sums, with a tail): 2 x 101,
         // and with large values, where subtracting the maximum matters;
         // rows of 40 and 33 (8 partials, the last step partly past the end).
         return std::vector<Case>{{{f32(s)}, {}, {{-10, 10}}},
                                  {{f32(s)}, Attrs{{"axis", int64_t{1}}}, {{-10, 10}}},
                                  {{f32({2, 101})}, {}, {{-10, 10}}},
                                  {{f32({3, 64})}, Attrs{{"axis", int64_t{-1}}}, {{-80, 90}}},
                                  {{f32({2, 3, 40})}, {}, {{-10, 10}}},
                                  {{f32({5, 33})}, {}, {{-80, 90}}}};
       }},
      {"nn.log_softmax",
       [](Lcg& r) {
         Shape s = random_shape(r, 3, 2, 7);
         return std::vector<Case>{{{f32(s)}, {}, {{-10, 10}}},
                                  {{f32(s)}, Attrs{{"axis", int64_t{0}}}, {{-10, 10}}},
                                  {{f32({2, 130})}, {}, {{-10, 10}}},
                                  {{f32({3, 37})}, {}, {{-10, 10}}}};
       }},
      {"reshape",
       [](Lcg&) {
         return std::vector<Case>{
             {{f32({2, 3, 4})}, Attrs{{"newshape", std::vector<int64_t>{4, -1}}}},
             {{typed({6}, DType::Int64)}, Attrs{{"newshape", std::vector<int64_t>{3, 1, 2}}}}};
       }},
      {"flatten",
       [](Lcg&) {
         return std::vector<Case>{{{f32({2, 3, 4, 2})}, Attrs{{"axis", int64_t{2}}}}};
       }},
      {"squeeze",
       [](Lcg&) {
         return std::vector<Case>{{{f32({1, 3, 1, 4})}, {}}};
       }},
      {"expand_dims",
       [](Lcg&) {
         return std::vector<Case>{{{f32({3, 4})}, Attrs{{"axis", int64_t{1}}, {"num_newaxis", int64_t{2}}}}};
       }},
      {"permute_dims",
       [](Lcg&) {
         return std::vector<Case>{{{f32({2, 3, 4})}, Attrs{{"axes", std::vector<int64_t>{2, 0, 1}}}},
                                  {{typed({3, 5}, DType::Int8)}, {}, {{-128, 127}}}};
       }},
      {"concat",
       [](Lcg&) {
         return std::vector<Case>{{{f32({2, 3}), f32({2, 1}), f32({2, 4})}, Attrs{{"axis", int64_t{1}}}},
                                  {{f32({1, 2, 2}), f32({3, 2, 2})}, Attrs{{"axis", int64_t{0}}}}};
       }},
      {"split",
       [](Lcg&) {
         return std::vector<Case>{{{f32({2, 6})}, Attrs{{"axis", int64_t{1}}, {"sections", int64_t{3}}}},
                                  {{f32({5, 2})}, Attrs{{"sizes", std::vector<int64_t>{1, 4}}}}};
       }},
      {"strided_slice",
       [](Lcg&) {
         return std::vector<Case>{{{f32({5, 6})},
                                   Attrs{{"begin", std::vector<int64_t>{1, -1}},
                                         {"end", std::vector<int64_t>{4, -7}},
                                         {"strides", std::vector<int64_t>{2, -2}}}},
                                  {{f32({3, 4, 5})},
                                   Attrs{{"begin", std::vector<int64_t>{1}},
                                         {"end", std::vector<int64_t>{1000}},
                                         {"axes", std::vector<int64_t>{2}}}}};
       }},
      {"broadcast_to",
       [](Lcg&) {
         return std::vector<Case>{{{f32({3, 1})}, Attrs{{"shape", std::vector<int64_t>{2, 3, 4}}}}};
       }},
      {"image.resize2d", resize_cases},
      // Indices over the whole range, negative ones (which wrap) included.
      {"take",
       [](Lcg&) {
         return std::vector<Case>{
             {{f32({5, 3}), typed({4}, DType::Int64)}, Attrs{{"axis", int64_t{0}}}, {{-2, 2}, {-5, 4}}},
             {{f32({2, 7, 9}), typed({3, 2}, DType::Int32)}, Attrs{{"axis", int64_t{1}}}, {{-2, 2}, {-7, 6}}},
             {{f32({3, 40}), typed({6}, DType::Int64)}, Attrs{{"axis", int64_t{-1}}}, {{-2, 2}, {-40, 39}}},
             {{typed({6}, DType::Int8), typed({}, DType::Int64)}, {}, {{-128, 127}, {-6, 5}}},
             {{f32({50, 33}), typed({2, 16}, DType::Int64)}, {}, {{-2, 2}, {-50, 49}}}};
       }},
      {"gather_elements",
       [](Lcg&) {
         return std::vector<Case>{
             {{f32({3, 4}), typed({3, 6}, DType::Int64)}, Attrs{{"axis", int64_t{1}}}, {{-2, 2}, {-4, 3}}},
             {{f32({5, 2, 3}), typed({2, 2, 2}, DType::Int32)}, {}, {{-2, 2}, {-5, 4}}},
             {{typed({2, 40}, DType::Int8), typed({2, 33}, DType::Int64)},
              Attrs{{"axis", int64_t{-1}}},
              {{-128, 127}, {-40, 39}}}};
       }},
      // Quotients on ties (x / scale = k + 0.5 for scale 0.5: even k), past
      // both ends of the range (clamped), and the zero points' extremes.
      {"quantize",
       [](Lcg&) {
         std::vector<Case> cases;
         for (const char* out : {"int8", "uint8"})
           for (int64_t zp : {int64_t{0}, int64_t{3}, int64_t{-128}, int64_t{255}}) {
             if ((zp < 0 && std::string(out) == "uint8") || (zp > 127 && std::string(out) == "int8"))
               continue;
             cases.push_back({{f32({3, 37})},
                              Attrs{{"scale", 0.25}, {"zero_point", zp}, {"out_dtype", std::string(out)}},
                              {{-80, 80}}});
           }
         cases.push_back({{f32({64})}, Attrs{{"scale", 0.5}, {"zero_point", int64_t{1}}}, {{-40, 40}}});
         return cases;
       }},
      {"dequantize",
       [](Lcg&) {
         return std::vector<Case>{
             {{typed({3, 37}, DType::Int8)},
              Attrs{{"scale", 0.1}, {"zero_point", int64_t{-5}}},
              {{-128, 127}}},
             {{typed({40}, DType::UInt8)}, Attrs{{"scale", 3.5}, {"zero_point", int64_t{128}}}, {{0, 255}}},
             {{typed({2, 9}, DType::Int32)},
              Attrs{{"scale", 1e-3}, {"zero_point", int64_t{7}}},
              {{-1000000000, 1000000000}}}};
       }},
      // Divisors of both signs (never 0: the reference fails), a broadcast one.
      // Amounts past the width (8 and more: 0), both directions, broadcast.
      {"bitshift",
       [](Lcg&) {
         std::vector<Case> cases;
         for (const char* direction : {"left", "right"}) {
           const Attrs a{{"direction", std::string(direction)}};
           cases.push_back(
               {{typed({3, 37}, DType::UInt8), typed({3, 37}, DType::UInt8)}, a, {{0, 255}, {0, 10}}});
           cases.push_back(
               {{typed({2, 20}, DType::UInt8), typed({20}, DType::UInt8)}, a, {{0, 255}, {0, 255}}});
         }
         return cases;
       }},
      {"mod", remainder_cases},
      {"fmod", remainder_cases},
      {"argmax", arg_cases},
      {"argmin", arg_cases},
      {"gather_nd",
       [](Lcg&) {
         return std::vector<Case>{{{f32({4, 5, 6}), typed({3, 2}, DType::Int64)}, {}, {{-2, 2}, {-4, 3}}},
                                  {{f32({4, 5, 6}), typed({2, 3}, DType::Int32)}, {}, {{-2, 2}, {-4, 3}}},
                                  {{f32({3, 40}), typed({2, 2, 1}, DType::Int64)}, {}, {{-2, 2}, {-3, 2}}},
                                  {{f32({2, 5, 17}), typed({2, 4, 1}, DType::Int64)},
                                   Attrs{{"batch_dims", int64_t{1}}},
                                   {{-2, 2}, {-5, 4}}}};
       }},
      {"cumsum", cumsum_cases},
      {"topk", topk_cases},
      {"scatter_elements", scatter_elements_cases},
      {"scatter_nd", scatter_nd_cases},
      {"nn.max_unpool",
       [](Lcg&) {
         // Indices anywhere in the output (duplicates: the later wins),
         // int64 and int32, float and int8 data, 2-D and 3-D.
         auto unpool = [](Shape x, DType t, DType it, Shape out, std::pair<double, double> range) {
           int64_t size = 1;
           for (int64_t d : out) size *= d;
           return Case{
               {typed(x, t), typed(x, it)}, Attrs{{"output_shape", out}}, {range, {0, double(size - 1)}}};
         };
         return std::vector<Case>{
             unpool({1, 2, 3, 3}, DType::Float32, DType::Int64, {1, 2, 6, 6}, {-2, 2}),
             unpool({2, 3, 4, 5}, DType::Float32, DType::Int32, {2, 3, 8, 11}, {-2, 2}),
             unpool({1, 2, 2, 3, 3}, DType::Int8, DType::Int64, {1, 2, 4, 6, 6}, {-128, 127})};
       }},
      {"nn.nll_loss", nll_loss_cases},
      {"image.grid_sample", grid_sample_cases},
      {"image.roi_align", roi_align_cases},
      {"trilu",
       [](Lcg&) {
         std::vector<Case> cases;
         for (int64_t upper : {0, 1})
           for (int64_t k : {int64_t{0}, int64_t{2}, int64_t{-1}, int64_t{-10}, int64_t{1} << 40})
             cases.push_back({{f32({2, 5, 19})}, Attrs{{"k", k}, {"upper", upper}}});
         cases.push_back({{typed({4, 4}, DType::Int32)}, Attrs{{"upper", int64_t{0}}}, {{-100, 100}}});
         return cases;
       }},
  };
  return g;
}

// Ops that stay on their reference kernels, and why.
const std::map<std::string, std::string>& not_lowered() {
  static const std::map<std::string, std::string> m = {
      {"nn.rnn", "unrolled into products and gates by decompose-recurrent"},
      {"nn.gru", "unrolled into products and gates by decompose-recurrent"},
      {"nn.lstm", "unrolled into products and gates by decompose-recurrent"},
      {"einsum", "float32 einsums become matmuls, transposes and sums (decompose-einsum); the rest stay"},
      {"image.non_max_suppression", "dynamic shape: the selected rows' count depends on the data"},
      {"det", "pivoting depends on the values: the reference kernel factorises each matrix"},
      {"signal.dft", "not lowered yet (a direct transform on its reference kernel)"},
      {"nn.winograd_weight", "a constant kernel's transform: winograd-weights leaves it to fold-constants"},
  };
  return m;
}

TEST(Lowering, EveryOpIsCoveredOrListed) {
  for (const OpDef* op : all_ops()) {
    bool lowered = lower::lowerings().find(op->name) != nullptr;
    bool tested = generators().count(op->name) != 0;
    bool listed = not_lowered().count(op->name) != 0;
    if (lowered) {
      EXPECT_TRUE(tested)
          << op->name
          << " has a lowering but no cases in tests/ops/lowering_test.cc or lowering_cases_windows.cc";
      EXPECT_FALSE(listed) << op->name << " has a lowering but is listed as not lowered";
    } else {
      EXPECT_TRUE(listed) << op->name << " has no lowering and no reason in not_lowered()";
      EXPECT_FALSE(tested) << op->name << " has cases but no lowering";
    }
  }
  for (const auto& [name, why] : not_lowered()) EXPECT_NE(find_op(name), nullptr) << name << " is not an op";
}

struct Instance {
  std::string op;
  Case c;
  std::vector<TensorDesc> out;
  std::string symbol;
};

TEST(Lowering, EveryLoweredOpMatchesItsReferenceKernel) {
  std::vector<Instance> instances;
  std::vector<tir::PrimFunc> funcs;
  for (const auto& [op, gen] : generators())
    for (const schedule::CpuTarget& cpu : schedule_targets()) {
      Lcg r(static_cast<uint32_t>(std::hash<std::string>{}(op)&0xffff));
      for (Case& c : gen(r)) {
        if (c.ranges.empty()) c.ranges.assign(c.in.size(), {-2, 2});
        const OpDef& def = op_named(op);
        Attrs attrs = normalize_attrs(def, c.attrs);
        std::vector<TensorDesc> out = infer_op(def, c.in, attrs);
        lower::KernelSpec spec =
            lower::single_op_kernel("case" + std::to_string(instances.size()), op, c.in, out, attrs);
        std::string why;
        auto f = lower::lower_kernel(spec, &why, cpu);
        ASSERT_TRUE(f.has_value()) << op << " case " << instances.size() << " was not lowered: " << why;
        funcs.push_back(built_for(*f, cpu));
        c.attrs = attrs;
        instances.push_back({op, c, out, spec.name});
      }
    }
  auto loaded = load_kernels(funcs, "lowering test");
  std::set<std::string> ops_checked;
  for (const Instance& in : instances) {
    Lcg r(7);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < in.c.in.size(); ++i) inputs.push_back(random_input(in.c.in[i], in.c.ranges[i], r));
    std::vector<Tensor> want = run_op(op_named(in.op), inputs, in.c.attrs);
    int32_t status = 0;
    std::vector<Tensor> got = run_kernel(*loaded, in.symbol, inputs, in.out, status);
    ASSERT_EQ(status, 0) << in.op;
    for (size_t o = 0; o < want.size(); ++o) {
      double tol = is_float(want[o].dtype()) ? in.c.atol + in.c.rtol * largest_magnitude(want[o]) : 0;
      int bad = 0;
      for (int64_t i = 0; i < want[o].numel() && bad < 3; ++i) {
        double a = got[o].get_as_double(i), b = want[o].get_as_double(i);
        if (std::isnan(a) && std::isnan(b)) continue;
        if (!(std::fabs(a - b) <= tol)) {
          ++bad;
          ADD_FAILURE() << in.op << " (" << in.symbol << ", input " << desc_str(in.c.in[0]) << ") output "
                        << o << " element " << i << ": compiled " << a << ", reference " << b;
        }
      }
    }
    ops_checked.insert(in.op);
  }
  EXPECT_EQ(ops_checked.size(), generators().size());
}

}  // namespace
}  // namespace kiln::testing
