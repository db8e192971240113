// Tile-to-input mapping and block copies for the example NPU.
#include "backends/example_npu/runtime/tiling.h"

#include <algorithm>
#include <cstring>

#include "kiln/runtime/error.h"

namespace kiln::example_npu {

namespace {

// Copies the block between a full tensor and a dense block buffer.
void copy_block(const Tensor& full, const Block& b, char* block_data, bool to_block) {
  const int64_t rank = static_cast<int64_t>(b.size.size());
  const int64_t esize = dtype_bytes(full.dtype());
  if (shape_numel(b.size) == 0) return;
  if (rank == 0) {
    if (to_block)
      std::memcpy(block_data, full.raw(), esize);
    else
      std::memcpy(const_cast<void*>(full.raw()), block_data, esize);
    return;
  }
  std::vector<int64_t> stride(rank, 1);
  for (int64_t a = rank - 2; a >= 0; --a) stride[a] = stride[a + 1] * full.shape()[a + 1];
  const int64_t row = b.size[rank - 1] * esize;
  std::vector<int64_t> idx(rank, 0);  // over all axes but the last
  char* base = static_cast<char*>(const_cast<void*>(full.raw()));
  int64_t rows = shape_numel(b.size) / b.size[rank - 1];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    for (int64_t a = 0; a < rank; ++a) offset += (b.begin[a] + (a == rank - 1 ? 0 : idx[a])) * stride[a];
    char* src = base + offset * esize;
    char* dst = block_data + r * row;
    if (to_block)
      std::memcpy(dst, src, row);
    else
      std::memcpy(src, dst, row);
    for (int64_t a = rank - 2; a >= 0; --a) {
      if (++idx[a] < b.size[a]) break;
      idx[a] = 0;
    }
  }
}

// Input rows [lo, hi) a window op needs for output rows [o0, o0 + n), and the
// padding to apply at the block's edges.
struct Span {
  int64_t begin, size, pad_before, pad_after;
};
Span window_span(int64_t o0, int64_t n, int64_t stride, int64_t dilation, int64_t kernel, int64_t pad,
                 int64_t extent) {
  int64_t lo = o0 * stride - pad;
  int64_t hi = (o0 + n - 1) * stride - pad + (kernel - 1) * dilation + 1;
  int64_t clo = std::max<int64_t>(lo, 0), chi = std::min(hi, extent);
  return {clo, std::max<int64_t>(chi - clo, 0), clo - lo, hi - chi};
}

// Broadcast-aware block of an elementwise operand.
Block broadcast_block(const Block& out, const Shape& operand) {
  Block b;
  size_t offset = out.size.size() - operand.size();
  for (size_t a = 0; a < operand.size(); ++a) {
    bool broadcast = operand[a] == 1 && out.size[offset + a] != 1;
    bool bcast_full = operand[a] == 1;
    b.begin.push_back(bcast_full ? 0 : out.begin[offset + a]);
    b.size.push_back(broadcast || bcast_full ? 1 : out.size[offset + a]);
  }
  return b;
}

bool is_pool(const std::string& op) { return op == "nn.max_pool2d" || op == "nn.avg_pool2d"; }

// Four paddings (top, left, bottom, right) from the two or four given.
std::vector<int64_t> four_pads(std::vector<int64_t> pad) {
  if (pad.size() == 2) pad = {pad[0], pad[1], pad[0], pad[1]};
  return pad;
}

bool is_elementwise(const std::string& op) {
  for (const char* e : {"add", "subtract", "multiply", "divide", "nn.relu", "clip", "sigmoid", "tanh",
                        "nn.gelu", "nn.hard_swish", "nn.hard_sigmoid", "nn.silu", "quantize", "dequantize"})
    if (op == e) return true;
  return false;
}

}  // namespace

int64_t block_bytes(const Block& b, DType dtype) { return shape_numel(b.size) * dtype_bytes(dtype); }

Tensor load_block(const Tensor& src, const Block& b) {
  Tensor out = Tensor::empty(b.size, src.dtype());
  copy_block(src, b, static_cast<char*>(out.raw()), true);
  return out;
}

void store_block(Tensor& dst, const Tensor& block, const Shape& begin) {
  copy_block(dst, {begin, block.shape()}, static_cast<char*>(const_cast<void*>(block.raw())), false);
}

std::vector<bool> tileable_axes(const std::string& op, const Shape& out, const Attrs& attrs) {
  std::vector<bool> t(out.size(), true);
  if (op == "nn.softmax" && !t.empty()) t.back() = false;
  if (is_pool(op) && attrs.get_int("ceil_mode") != 0)
    for (size_t a = 2; a < t.size(); ++a) t[a] = false;
  return t;
}

TileInputs tile_inputs(const std::string& op, const Block& out, const std::vector<Tensor>& in,
                       const Attrs& attrs) {
  TileInputs r;
  r.attrs = attrs;
  if (is_elementwise(op)) {
    for (const auto& t : in) r.blocks.push_back(broadcast_block(out, t.shape()));
    return r;
  }
  if (op == "matmul") {
    r.blocks.push_back({{out.begin[0], 0}, {out.size[0], in[0].dim(1)}});
    r.blocks.push_back({{0, out.begin[1]}, {in[1].dim(0), out.size[1]}});
    return r;
  }
  if (op == "nn.dense") {
    r.blocks.push_back({{out.begin[0], 0}, {out.size[0], in[0].dim(1)}});
    r.blocks.push_back({{out.begin[1], 0}, {out.size[1], in[1].dim(1)}});
    return r;
  }
  if (op == "nn.softmax") {
    r.blocks.push_back(out);
    return r;
  }
  if (op == "nn.batch_norm") {
    int64_t axis = attrs.get_int("axis");
    if (axis < 0) axis += in[0].ndim();
    r.blocks.push_back(out);
    for (size_t i = 1; i < in.size(); ++i) r.blocks.push_back({{out.begin[axis]}, {out.size[axis]}});
    return r;
  }
  if (is_pool(op)) {
    // Without ceil_mode every window lies inside the padded input, so a block
    // of output rows needs the input rows its windows cover, padded only
    // where they reach past the real input: the same windows, the same
    // divisors (count_include_pad counts only the true padding).
    const Tensor& x = in[0];
    std::vector<int64_t> k = attrs.get_ints("pool_size"), strides = attrs.get_ints("strides");
    std::vector<int64_t> dil = attrs.get_ints("dilation"), pad = four_pads(attrs.get_ints("padding"));
    Span h = window_span(out.begin[2], out.size[2], strides[0], dil[0], k[0], pad[0], x.dim(2));
    Span v = window_span(out.begin[3], out.size[3], strides[1], dil[1], k[1], pad[1], x.dim(3));
    if (attrs.get_int("ceil_mode") != 0) {  // rows and columns are not split (tileable_axes)
      h = {0, x.dim(2), pad[0], pad[2]};
      v = {0, x.dim(3), pad[1], pad[3]};
    }
    r.blocks.push_back(
        {{out.begin[0], out.begin[1], h.begin, v.begin}, {out.size[0], out.size[1], h.size, v.size}});
    r.attrs.set("padding", std::vector<int64_t>{h.pad_before, v.pad_before, h.pad_after, v.pad_after});
    return r;
  }
  if (op == "nn.conv2d") {
    const Tensor& x = in[0];
    const Tensor& w = in[1];
    std::vector<int64_t> strides = attrs.get_ints("strides"), dil = attrs.get_ints("dilation");
    std::vector<int64_t> pad = four_pads(attrs.get_ints("padding"));
    int64_t groups = attrs.get_int("groups");
    Span h = window_span(out.begin[2], out.size[2], strides[0], dil[0], w.dim(2), pad[0], x.dim(2));
    Span v = window_span(out.begin[3], out.size[3], strides[1], dil[1], w.dim(3), pad[1], x.dim(3));
    bool depthwise = groups > 1;
    int64_t c0 = depthwise ? out.begin[1] : 0, cn = depthwise ? out.size[1] : x.dim(1);
    r.blocks.push_back({{out.begin[0], c0, h.begin, v.begin}, {out.size[0], cn, h.size, v.size}});
    r.blocks.push_back({{out.begin[1], 0, 0, 0}, {out.size[1], w.dim(1), w.dim(2), w.dim(3)}});
    r.attrs.set("padding", std::vector<int64_t>{h.pad_before, v.pad_before, h.pad_after, v.pad_after});
    if (depthwise) r.attrs.set("groups", out.size[1]);
    return r;
  }
  KILN_ASSERT(false, "example_npu: no tiling rule for " + op);
  return r;
}

}  // namespace kiln::example_npu
