// Sizes checked before anything is allocated or read, naming the culprit
// (docs/limits.md), and files written atomically (runtime/file_io.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "frontend/onnx/importer.h"
#include "kiln/runtime/npy.h"
#include "onnx_test_util.h"
#include "op/op.h"
#include "runtime/file_io.h"
#include "runtime/module_file.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing::error_of;

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::path(KILN_BINARY_DIR) / "limits-test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

TEST(Limits, TensorBytesAreCheckedWithoutOverflowNamingTheTensor) {
  EXPECT_EQ(checked_tensor_bytes({2, 3}, DType::Float32, "x"), 24);
  EXPECT_EQ(checked_tensor_bytes({0, int64_t{1} << 40, int64_t{1} << 40}, DType::Float32, "x"), 0);
  // Empty, but with a dimension no kernel could index (its strides overflow).
  EXPECT_TRUE(
      has(error_of([] {
            checked_tensor_bytes({0, int64_t{1} << 62, int64_t{1} << 62}, DType::Float32, "x");
          }),
          "x: shape (0, 4611686018427387904, 4611686018427387904) has a dimension of 4611686018427387904, "
          "more than kiln's limit of 2^48"));
  std::string big = error_of([] { checked_tensor_bytes({100000, 100000}, DType::Float32, "input %x"); });
  EXPECT_TRUE(has(big, "input %x: (100000, 100000) float32 is 40000000000 bytes")) << big;
  EXPECT_TRUE(has(big, "larger than the limit of 17179869184 bytes (16 GiB)")) << big;
  EXPECT_TRUE(has(big, "KILN_MAX_TENSOR_BYTES")) << big;
  // 2^32 x 2^32 bytes wraps to 0 in 64 bits: still refused.
  std::string wraps = error_of([] {
    checked_tensor_bytes({int64_t{1} << 32, int64_t{1} << 32}, DType::UInt8, "constant 'c'");
  });
  EXPECT_TRUE(has(wraps, "constant 'c': (4294967296, 4294967296) uint8 is more than 2^63 bytes")) << wraps;
  EXPECT_TRUE(has(error_of([] {
                    checked_tensor_bytes({2, -1}, DType::Int8, "w");
                  }),
                  "w: shape (2, -1) has a negative"));
  EXPECT_TRUE(has(error_of([] { shape_numel({int64_t{1} << 40, int64_t{1} << 40}); }), "more elements than"));
  // The limit is configurable, and so allocation obeys it.
  ScopedEnv env("KILN_MAX_TENSOR_BYTES", "1K");
  EXPECT_EQ(max_tensor_bytes(), 1024u);
  EXPECT_TRUE(
      has(error_of([] { Tensor::empty({2048}, DType::UInt8); }), "larger than the limit of 1024 bytes"));
  setenv("KILN_MAX_TENSOR_BYTES", "lots", 1);
  EXPECT_TRUE(has(error_of([] { max_tensor_bytes(); }),
                  "KILN_MAX_TENSOR_BYTES='lots': expected a positive byte count"));
}

TEST(Limits, AReductionOverAHugeShapeDoesNotOverflow) {
  // The reduced extents' product wraps to 0 in 64 bits; it is not an empty reduction.
  TensorDesc x{{int64_t{1} << 32, int64_t{1} << 32}, DType::Float32};
  std::vector<TensorDesc> out = infer_op(*find_op("max"), {x}, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, Shape{});
}

// The .kmod of `exe` with the first constant's shape replaced by `shape`
// (the checksum recomputed), as a corrupt or hostile file would have it.
std::string kmod_with_constant_shape(const Executable& exe, const std::vector<int64_t>& shape) {
  std::string bytes = encode_kmod(exe);
  size_t at = 8 + 4;
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data() + at, 8);
  std::string header = bytes.substr(at + 8, header_len);
  std::string rest = bytes.substr(at + 8 + header_len, bytes.size() - at - 8 - header_len - 8);
  size_t s = header.find("\"shape\":[");
  EXPECT_NE(s, std::string::npos) << header;
  size_t e = header.find(']', s);
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? "," : "") + std::to_string(shape[i]);
  header = header.substr(0, s) + "\"shape\":[" + dims + header.substr(e);
  std::string out = bytes.substr(0, at);
  uint64_t n = header.size();
  out.append(reinterpret_cast<const char*>(&n), 8);
  out += header + rest;
  uint64_t h = kmod_checksum(out.data(), out.size());
  out.append(reinterpret_cast<const char*>(&h), 8);
  return out;
}

TEST(Limits, AKmodConstantWhoseSizeWrapsIsNamed) {
  Executable exe;
  exe.host.name = "main";
  exe.constants["w"] = Tensor::zeros({4}, DType::UInt8);
  std::string err = error_of([&] {
    decode_kmod(kmod_with_constant_shape(exe, {int64_t{1} << 32, int64_t{1} << 32}), "bad.kmod");
  });
  EXPECT_TRUE(has(err, "bad.kmod: constant w: (4294967296, 4294967296) uint8 is more than 2^63 bytes"))
      << err;
  err = error_of([&] { decode_kmod(kmod_with_constant_shape(exe, {int64_t{1} << 62, 8}), "bad.kmod"); });
  EXPECT_TRUE(has(err, "bad.kmod: constant w:")) << err;
}

TEST(Limits, OnnxInputsAndTileResultsAreCheckedBeforeAllocating) {
  onnx_test::ModelBuilder huge;
  huge.input("x", {1000000000, 1000000000});
  huge.output("y", {1000000000, 1000000000});
  huge.node("Relu", {"x"}, {"y"});
  std::string err = error_of([&] { import_onnx_bytes(huge.bytes(), "huge.onnx"); });
  EXPECT_TRUE(
      has(err, "huge.onnx: graph input 'x': (1000000000, 1000000000) float32 is 4000000000000000000 bytes"))
      << err;

  onnx_test::ModelBuilder tile;
  tile.input("x", {2, 3});
  tile.output("y", {2, 3});
  tile.initializer("repeats", Tensor::from_ints({2}, {int64_t{1} << 31, 1}));
  tile.node("Tile", {"x", "repeats"}, {"y"}, "tile0");
  err = error_of([&] { import_onnx_bytes(tile.bytes(), "tile.onnx"); });
  EXPECT_TRUE(has(err, "tile.onnx:")) << err;
  EXPECT_TRUE(has(err, "tile0")) << err;
  EXPECT_TRUE(has(err, "the result: (4294967296, 3) float32 is 51539607552 bytes")) << err;
  EXPECT_TRUE(has(err, "larger than the limit")) << err;
}

// A zip archive of one deflated member.
std::string deflated_zip(const std::string& name, const std::string& content) {
  uLongf csize = compressBound(content.size());
  std::string z(csize, '\0');
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(content.data()));
  zs.avail_in = static_cast<uInt>(content.size());
  zs.next_out = reinterpret_cast<Bytef*>(z.data());
  zs.avail_out = static_cast<uInt>(z.size());
  deflate(&zs, Z_FINISH);
  z.resize(zs.total_out);
  deflateEnd(&zs);
  uint32_t crc =
      static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(content.data()), content.size()));
  auto put = [](std::string& s, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  };
  std::string out;
  put(out, 0x04034b50, 4);
  put(out, 20, 2), put(out, 0, 2), put(out, 8, 2), put(out, 0, 4);
  put(out, crc, 4), put(out, z.size(), 4), put(out, content.size(), 4);
  put(out, name.size(), 2), put(out, 0, 2);
  out += name + z;
  std::string cd;
  put(cd, 0x02014b50, 4);
  put(cd, 20, 2), put(cd, 20, 2), put(cd, 0, 2), put(cd, 8, 2), put(cd, 0, 4);
  put(cd, crc, 4), put(cd, z.size(), 4), put(cd, content.size(), 4);
  put(cd, name.size(), 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 4);
  put(cd, 0, 4);
  cd += name;
  size_t cd_offset = out.size();
  out += cd;
  put(out, 0x06054b50, 4);
  put(out, 0, 2), put(out, 0, 2), put(out, 1, 2), put(out, 1, 2);
  put(out, cd.size(), 4), put(out, cd_offset, 4), put(out, 0, 2);
  return out;
}

TEST(Limits, NpzZipBombsStopBeforeInflating) {
  // A valid array, 8 MiB of zeros, in a few KiB.
  Tensor zeros = Tensor::zeros({2 * 1024 * 1024}, DType::Float32);
  std::string path = temp_path("bomb.npz");
  std::ofstream(path, std::ios::binary) << deflated_zip("w.npy", encode_npy(zeros));
  ASSERT_LT(std::filesystem::file_size(path), 64u * 1024);
  EXPECT_EQ(read_npz(path).at("w").numel(), zeros.numel());
  {
    ScopedEnv env("KILN_MAX_FILE_BYTES", "1M");
    std::string err = error_of([&] { read_npz(path); });
    EXPECT_TRUE(has(err, path +
                             ": the archive's arrays are 8388736 bytes (8 MiB) uncompressed, larger than the "
                             "limit of 1048576 bytes (1 MiB)"))
        << err;
  }
  // Zeros that are not an array are refused after their first bytes.
  std::ofstream(path, std::ios::binary) << deflated_zip("w.npy", std::string(8 << 20, '\0'));
  std::string err = error_of([&] { read_npz(path); });
  EXPECT_TRUE(has(err, "member 'w.npy' is not a .npy array (bad magic)")) << err;
}

TEST(Limits, FilesAreReadWithALimit) {
  std::string path = temp_path("two_k.kir");
  std::ofstream(path, std::ios::binary) << std::string(2048, ' ');
  EXPECT_EQ(read_file(path).size(), 2048u);
  {
    ScopedEnv env("KILN_MAX_FILE_BYTES", "1K");
    std::string err = error_of([&] { read_file(path); });
    EXPECT_TRUE(has(err, path + ": 2048 bytes (2 KiB), larger than the limit of 1024 bytes (1 KiB)")) << err;
  }
  EXPECT_TRUE(has(error_of([] { read_file("/dev/zero"); }), "/dev/zero: not a regular file"));
  EXPECT_TRUE(has(error_of([] { read_npy("/dev/zero"); }), "/dev/zero: not a regular file"));
  EXPECT_TRUE(has(error_of([] { read_file(temp_path("missing"), "ONNX model"); }),
                  "cannot open ONNX model '" + temp_path("missing") + "': No such file or directory"));
}

TEST(Limits, WritesAreAtomicAndLeaveNoTemporaryFiles) {
  std::string dir = temp_path("atomic");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string path = dir + "/out.json";
  // Two writers of different, large contents and a reader: the reader only
  // ever sees one of them whole.
  const std::string a(1 << 20, 'a'), b(3 << 19, 'b');
  write_file(path, a);
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, reads{0};
  std::thread reader([&] {
    while (!stop) {
      std::string got = read_file(path);
      ++reads;
      if (got != a && got != b) ++torn;
    }
  });
  std::thread wa([&] {
    for (int i = 0; i < 100; ++i) write_file(path, a);
  });
  std::thread wb([&] {
    for (int i = 0; i < 100; ++i) write_file(path, b);
  });
  wa.join();
  wb.join();
  stop = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(torn.load(), 0);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  // A special file is written in place; a folder or a missing folder is an error naming the path.
  write_file("/dev/null", "nothing");
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(has(error_of([&] { write_file(dir, "x"); }), "cannot write '" + dir + "': it is a folder"));
  EXPECT_TRUE(
      has(error_of([&] { write_file(dir + "/no/such/x", "x"); }), "cannot write '" + dir + "/no/such/x'"));
}

}  // namespace
}  // namespace kiln
