// Pieces shared by the pooling files (nn_pool.cc: 2-D pools, nn_pool3d.cc:
// 3-D pools and max pooling with indices): one spatial axis of a window and
// how its taps meet the input and the padding, the exact integer average,
// and storing pooled values.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "op/nn_internal.h"

namespace kiln {

// One spatial axis of a window op.
struct PoolAxis {
  int64_t in, k, s, d, pad_before, pad_after;
  bool ceil_mode;

  int64_t extent() const { return d * (k - 1) + 1; }
  int64_t out_size() const {
    int64_t span = in + pad_before + pad_after - extent();
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + pad_before) --out;
    return out;
  }
  // Taps j of output o that read the input: start + j*d in [0, in).
  // Also the taps inside the padded input, for count_include_pad.
  struct Taps {
    int64_t start, lo, hi, padded_count;
  };
  Taps taps(int64_t o) const {
    Taps t{o * s - pad_before, 0, 0, 0};
    int64_t lo = 0;
    while (lo < k && t.start + lo * d < 0) ++lo;
    int64_t hi = k;
    while (hi > lo && t.start + (hi - 1) * d >= in) --hi;
    t.lo = lo;
    t.hi = hi;
    for (int64_t j = 0; j < k; ++j) {
      int64_t pos = t.start + j * d;
      if (pos >= -pad_before && pos < in + pad_after) ++t.padded_count;
    }
    return t;
  }
};

// Integer average: sum / count rounded half away from zero, exactly.
inline int64_t int_average(int64_t sum, int64_t count) {
  if (sum >= 0) return (2 * sum + count) / (2 * count);
  return -((-2 * sum + count) / (2 * count));
}

// Writes values computed in Acc (float for float dtypes, int64 for integers)
// into out, whose dtype equals the input dtype.
template <typename Acc>
inline void store_pooled(const std::vector<Acc>& v, Tensor& out) {
  if constexpr (std::is_same_v<Acc, float>) {
    store_acc(v.data(), static_cast<int64_t>(v.size()), out, 0);
  } else {
    dispatch_dtype(out.dtype(), [&](auto tag) {
      using Tag = decltype(tag);
      using S = typename Tag::storage;
      S* d = out.data<S>();
      for (size_t i = 0; i < v.size(); ++i) d[i] = static_cast<S>(v[i]);
    });
  }
}

}  // namespace kiln
