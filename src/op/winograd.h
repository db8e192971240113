// Winograd's minimal filtering F(m, 3) along a 3x3 conv's output rows:
// a tile of m output rows from m + 2 input rows by m + 2 products ("phases")
// per input channel and kernel column instead of 3m. Phase a of the kernel
// is sum over ky of g[a][ky] * w[ky], of the input sum over i of
// bt[a][i] * d[i] (d: the padded input rows from the tile's first), and
// output row r of the tile sum over a of at[r][a] * m[a] (Lavin and Gray's
// matrices: points 0, 1, -1 for F(2, 3); 0, 1, -1, 2, -2 and infinity for
// F(4, 3)). Used by nn.winograd_weight and nn.conv2d_winograd
// (nn_winograd.cc) and their lowering (src/lower/conv_winograd.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln {

struct WinogradRows {
  int64_t m;                            // output rows per tile
  std::vector<std::vector<double>> g;   // (m + 2) x 3
  std::vector<std::vector<double>> bt;  // (m + 2) x (m + 2)
  std::vector<std::vector<double>> at;  // m x (m + 2)
  int64_t phases() const { return m + 2; }
};

// F(2, 3) or F(4, 3); null for any other m.
const WinogradRows* winograd_rows(int64_t m);

}  // namespace kiln
