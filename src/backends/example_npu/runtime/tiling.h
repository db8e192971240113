// Tiling for the example NPU: which part of each input one output tile needs.
//
// The emulator splits an op's output into tiles (blocks of the output
// tensor), loads the input blocks each tile needs into "L1" (real copies),
// runs the op's arithmetic on the blocks and stores the tile into the
// output. The mapping is per op kind:
//
//   elementwise   same block; broadcast axes (size 1) stay size 1
//   conv2d        output rows/cols -> input rows/cols with the kernel's halo,
//                 padding re-derived at the block edges; output channels ->
//                 weight rows (and input channels when depthwise)
//   matmul/dense  output rows -> rows of A, output columns -> columns of B
//                 (rows of a dense weight); K is never split
//   pooling       batch and channels, and rows/cols like conv2d (window halo,
//                 padding re-derived at the block edges); with ceil_mode only
//                 batch and channels (its overhanging last window would be
//                 counted as padding in a block)
//   softmax       every axis but the last
//   batch_norm    any axis; the per-channel vectors follow the channel axis
#pragma once

#include <string>
#include <vector>

#include "kiln/runtime/attrs.h"
#include "kiln/runtime/tensor.h"

namespace kiln::example_npu {

struct Block {
  Shape begin;
  Shape size;
};

// Copies a block out of `src` / into `dst` (N-d, any dtype).
Tensor load_block(const Tensor& src, const Block& b);
void store_block(Tensor& dst, const Tensor& block, const Shape& begin);

// Which output axes an op may split.
std::vector<bool> tileable_axes(const std::string& op, const Shape& out_shape, const Attrs& attrs);

// The input blocks output block `out` needs, and the attributes to run the op
// on them (conv and pooling padding change at block edges).
struct TileInputs {
  std::vector<Block> blocks;  // one per input
  Attrs attrs;
};
TileInputs tile_inputs(const std::string& op, const Block& out, const std::vector<Tensor>& inputs,
                       const Attrs& attrs);

int64_t block_bytes(const Block& b, DType dtype);

}  // namespace kiln::example_npu
