// .npy and .npz files (numpy's formats), for inputs, outputs and weights.
//
// .npy: versions 1.0-3.0, little-endian, C order, dtypes f4 f2 f8 i1 u1 i2 u2
// i4 u4 i8 u8 b1. bfloat16 has no numpy dtype: writing one is an error
// (rather than raw bits as uint16, which would read back as another type).
// .npz: a zip archive of .npy members, stored or deflated.
// Malformed or truncated files throw kiln::Error naming the file and the fault.
#pragma once

#include <map>
#include <string>

#include "kiln/runtime/tensor.h"

namespace kiln {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);
// In-memory forms; `what` names the source in error messages.
Tensor decode_npy(const std::string& bytes, const std::string& what);
std::string encode_npy(const Tensor& t);

std::map<std::string, Tensor> read_npz(const std::string& path);
// Members are written stored (uncompressed), named "<key>.npy".
void write_npz(const std::string& path, const std::map<std::string, Tensor>& tensors);

}  // namespace kiln
