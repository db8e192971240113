// Writes small_cnn.npz and small_cnn_int8.npz: the weights of
// small_cnn.kir and of its int8 variant small_cnn_int8.kir, from a fixed
// seed. Built as `make_cnn_weights`; run it from the repository root to
// remake the files (the committed files are its output).
#include <cmath>
#include <cstdio>
#include <map>

#include "kiln/runtime/error.h"
#include "kiln/runtime/npy.h"

namespace {

uint64_t state = 1;

// splitmix64, then uniform in [-1, 1).
double uniform() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

kiln::Tensor make(const kiln::Shape& shape, double scale, double offset = 0.0) {
  kiln::Tensor t = kiln::Tensor::empty(shape, kiln::DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, offset + scale * uniform());
  return t;
}

// Integers uniform in [-range, range] as `dtype`.
kiln::Tensor make_int(const kiln::Shape& shape, int range, kiln::DType dtype) {
  kiln::Tensor t = kiln::Tensor::empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, std::round(range * uniform()));
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = argc > 1 ? argv[1] : "examples/small_cnn/small_cnn.npz";
  std::string out8 = argc > 2 ? argv[2] : "examples/small_cnn/small_cnn_int8.npz";
  std::map<std::string, kiln::Tensor> w;
  w["conv1.weight"] = make({8, 3, 3, 3}, std::sqrt(2.0 / 27));
  w["conv1.bias"] = make({1, 8, 1, 1}, 0.1);
  w["bn1.gamma"] = make({8}, 0.2, 1.0);
  w["bn1.beta"] = make({8}, 0.1);
  w["bn1.mean"] = make({8}, 0.1);
  w["bn1.var"] = make({8}, 0.2, 0.8);
  w["conv2.weight"] = make({16, 8, 3, 3}, std::sqrt(2.0 / 72));
  w["fc.weight"] = make({10, 16}, std::sqrt(1.0 / 16));
  w["fc.bias"] = make({10}, 0.1);
  // int8 weights, int32 biases (the scales are in small_cnn_int8.kir).
  std::map<std::string, kiln::Tensor> q;
  q["conv1.weight"] = make_int({8, 3, 3, 3}, 40, kiln::DType::Int8);
  q["conv1.bias"] = make_int({1, 8, 1, 1}, 300, kiln::DType::Int32);
  q["conv2.weight"] = make_int({16, 8, 3, 3}, 30, kiln::DType::Int8);
  q["conv2.bias"] = make_int({1, 16, 1, 1}, 300, kiln::DType::Int32);
  q["fc.weight"] = make_int({10, 1024}, 20, kiln::DType::Int8);
  try {
    kiln::write_npz(out, w);
    kiln::write_npz(out8, q);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s and %s\n", out.c_str(), out8.c_str());
  return 0;
}
