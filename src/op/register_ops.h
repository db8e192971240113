// The registration functions of the op families, one per file, called in
// order by registry.cc. Kept out of op.h so that adding an op family touches
// only this header, registry.cc and the new file.
#pragma once

namespace kiln {

class OpRegistry;

void register_elementwise_ops(OpRegistry& r);  // elementwise.cc: binary, unary, clip, astype
void register_logic_ops(OpRegistry& r);        // logic.cc: comparisons, logical and/or/xor/not
void register_reduce_ops(OpRegistry& r);       // reduce.cc: sum, mean, prod, softmax, argmax, cumsum
void register_sort_ops(OpRegistry& r);         // sort.cc: topk
void register_shape_ops(OpRegistry& r);        // shape.cc: reshape, permute_dims, concat, split, ...
void register_nn_ops(
    OpRegistry& r);  // nn.cc: conv2d, conv2d_transpose, dense, matmul, pools, batch_norm, pad
void register_image_ops(OpRegistry& r);        // image.cc: image.resize2d
void register_quant_ops(OpRegistry& r);        // quant.cc: quantize, dequantize
void register_recurrent_ops(OpRegistry& r);    // nn_recurrent.cc: nn.rnn, nn.gru, nn.lstm
void register_einsum_ops(OpRegistry& r);       // einsum.cc: einsum
void register_grid_sample_ops(OpRegistry& r);  // grid_sample.cc: image.grid_sample
void register_loss_ops(OpRegistry& r);         // loss.cc: nn.nll_loss
void register_bitwise_ops(OpRegistry& r);      // bitwise.cc: bitshift
void register_conv3d_ops(OpRegistry& r);       // nn_conv3d.cc: nn.conv3d, nn.conv3d_transpose
void register_pool3d_ops(OpRegistry& r);       // nn_pool3d.cc: 3-D pools, nn.max_pool_with_indices
void register_unpool_ops(OpRegistry& r);       // nn_unpool.cc: nn.max_unpool
void register_roi_align_ops(OpRegistry& r);    // roi_align.cc: image.roi_align
void register_nms_ops(OpRegistry& r);          // nms.cc: image.non_max_suppression
void register_linalg_ops(OpRegistry& r);       // linalg.cc: det
void register_signal_ops(OpRegistry& r);       // signal.cc: signal.dft

}  // namespace kiln
