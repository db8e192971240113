// .npy and .npz: byte strings built by hand here, and files written and read back.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "kiln/runtime/error.h"
#include "kiln/runtime/npy.h"

namespace kiln {
namespace {

// ---------------------------------------------------------------- hand-made bytes

std::string le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// An .npy file: magic, version, header length, the dict padded with spaces
// and a newline to a multiple of 64 bytes, then `data`.
std::string npy(int major, const std::string& dict, const std::string& data) {
  int len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((6 + 2 + len_bytes + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  return std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0' + le(header.size(), len_bytes) +
         header + data;
}

template <typename T>
std::string raw(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof v);
  return s;
}

void expect_error(const std::string& bytes, const std::string& part) {
  try {
    decode_npy(bytes, "x.npy");
    FAIL() << "no error, wanted: " << part;
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("x.npy"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
  }
}

// ---------------------------------------------------------------- .npy

TEST(Npy, DecodesVersion1Float32) {
  std::string b = npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                      raw<float>({1, 2, 3, 4, 5, -6.5f}));
  Tensor t = decode_npy(b, "a.npy");
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.data<float>()[5], -6.5f);
  EXPECT_EQ(t.data<float>()[1], 2.0f);
}

TEST(Npy, DecodesVersions2And3AndKeyOrder) {
  Tensor t2 = decode_npy(npy(2, "{'shape': (3,), 'fortran_order': False, 'descr': '<i8'}",
                             raw<int64_t>({-1, 0, int64_t{1} << 40})),
                         "b.npy");
  EXPECT_EQ(t2.dtype(), DType::Int64);
  EXPECT_EQ(t2.data<int64_t>()[2], int64_t{1} << 40);
  Tensor t3 = decode_npy(
      npy(3, "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,)}", raw<int32_t>({7, -8})),
      "c.npy");
  EXPECT_EQ(t3.data<int32_t>()[1], -8);
}

TEST(Npy, DecodesEveryDType) {
  const std::string tail = "'fortran_order': False, 'shape': (2,), }";
  Tensor h = decode_npy(npy(1, "{'descr': '<f2', " + tail, raw<uint16_t>({0x3c00, 0xc000})), "h");
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(h.get_as_double(0), 1.0);
  EXPECT_EQ(h.get_as_double(1), -2.0);
  Tensor i8 = decode_npy(npy(1, "{'descr': '|i1', " + tail, raw<int8_t>({-128, 127})), "i8");
  EXPECT_EQ(i8.dtype(), DType::Int8);
  EXPECT_EQ(i8.data<int8_t>()[0], -128);
  Tensor u8 = decode_npy(npy(1, "{'descr': '|u1', " + tail, raw<uint8_t>({0, 255})), "u8");
  EXPECT_EQ(u8.dtype(), DType::UInt8);
  EXPECT_EQ(u8.data<uint8_t>()[1], 255);
  Tensor b = decode_npy(npy(1, "{'descr': '|b1', " + tail, raw<uint8_t>({1, 0})), "b");
  EXPECT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(b.data<uint8_t>()[0], 1);
}

TEST(Npy, ScalarAndEmpty) {
  Tensor s =
      decode_npy(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", raw<float>({3.5f})), "s");
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.data<float>()[0], 3.5f);
  Tensor e = decode_npy(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }", ""), "e");
  EXPECT_EQ(e.shape(), (Shape{0, 4}));
}

TEST(Npy, EncodesNumpysExactBytes) {
  // The header numpy itself writes for np.array([1, 2], np.float32).
  std::string want = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }" + std::string(60, ' ') +
                     "\n" + raw<float>({1.0f, 2.0f});
  EXPECT_EQ(encode_npy(Tensor::from_floats({2}, {1, 2})), want);
  std::string scalar = encode_npy(Tensor::from_ints({}, {-3}));
  EXPECT_EQ(scalar.substr(10, 55), "{'descr': '<i8', 'fortran_order': False, 'shape': (), }");
  EXPECT_EQ(scalar.size(), 128u + 8u);
}

TEST(Npy, EncodeDecodeEveryDType) {
  for (DType d :
       {DType::Float32, DType::Float16, DType::Int8, DType::UInt8, DType::Int32, DType::Int64, DType::Bool}) {
    Tensor t = Tensor::empty({2, 3}, d);
    for (int64_t i = 0; i < 6; ++i) t.set_from_double(i, d == DType::Bool ? i % 2 : i - 2);
    Tensor back = decode_npy(encode_npy(t), "rt");
    EXPECT_TRUE(back.bitwise_equal(t)) << dtype_name(d);
  }
}

TEST(Npy, Errors) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data = raw<float>({1, 2});
  expect_error("hello", "bad magic");
  expect_error(std::string("\x93NUMPZ\x01\x00", 8), "bad magic");
  expect_error(npy(1, ok_dict, data).replace(6, 1, "\x04"), "unsupported .npy version 4.0");
  expect_error(npy(1, ok_dict, data).substr(0, 9), "truncated .npy header");
  expect_error(npy(1, ok_dict, data).substr(0, 40), "truncated .npy header");
  expect_error(npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data),
               "Fortran-order arrays are not supported");
  expect_error(npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data),
               "big-endian dtype '>f4'");
  expect_error(npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", data + data),
               "unsupported dtype '<c8'");
  expect_error(npy(1, "{'descr': '<f4', 'shape': (2,), }", data),
               "needs 'descr', 'fortran_order' and 'shape'");
  expect_error(npy(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", data),
               "expected True or False");
  expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,", data),
               "malformed .npy header");
  expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", data),
               "expected a dimension");
  expect_error(npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", data),
               "unknown key 'x'");
  expect_error(npy(1, ok_dict, data.substr(0, 6)),
               "truncated data: shape (2,) float32 needs 8 bytes, the file has 6");
  expect_error(npy(1, ok_dict, data + "xx"), "size mismatch");
  expect_error(
      npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999, 99999999, 99999999), }", data),
      "(99999999, 99999999, 99999999) float32 is more than 2^63 bytes, larger than the limit");
}

// ---------------------------------------------------------------- files

std::filesystem::path temp_dir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("kiln_npy_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(Npy, FileRoundTripAndMissingFile) {
  auto dir = temp_dir("file");
  Tensor t = Tensor::from_ints({2, 2}, {1, -2, 3, -4}, DType::Int32);
  write_npy((dir / "t.npy").string(), t);
  EXPECT_TRUE(read_npy((dir / "t.npy").string()).bitwise_equal(t));
  write_bytes(dir / "bad.npy", "not an array");
  try {
    read_npy((dir / "bad.npy").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find((dir / "bad.npy").string()), std::string::npos) << e.message();
  }
  EXPECT_THROW(read_npy((dir / "none.npy").string()), Error);
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------- .npz

struct Member {
  std::string name;
  std::string data;  // uncompressed
  bool deflate = false;
  bool numpy_zip64_local = false;  // numpy's local header: 0xffffffff sizes + zip64 extra
  uint32_t crc_xor = 0;            // corrupts the stored CRC when non-zero
  uint16_t method_override = 0xffff;
};

std::string raw_deflate(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, in.size()) + 16, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A zip archive built field by field (PKWARE APPNOTE layout).
std::string zip(const std::vector<Member>& members, bool zip64_locator = false) {
  std::string body, central;
  for (const auto& m : members) {
    std::string payload = m.deflate ? raw_deflate(m.data) : m.data;
    uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(m.data.data()), static_cast<uInt>(m.data.size())));
    crc ^= m.crc_xor;
    uint16_t method = m.method_override != 0xffff ? m.method_override : (m.deflate ? 8 : 0);
    uint32_t offset = static_cast<uint32_t>(body.size());
    std::string extra;
    if (m.numpy_zip64_local) extra = le(1, 2) + le(16, 2) + le(m.data.size(), 8) + le(payload.size(), 8);
    body += le(0x04034b50, 4) + le(m.numpy_zip64_local ? 45 : 20, 2) + le(0, 2) + le(method, 2) + le(0, 2) +
            le(0x21, 2) + le(crc, 4);
    if (m.numpy_zip64_local)
      body += le(0xffffffff, 4) + le(0xffffffff, 4);
    else
      body += le(payload.size(), 4) + le(m.data.size(), 4);
    body += le(m.name.size(), 2) + le(extra.size(), 2) + m.name + extra + payload;
    central += le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) + le(method, 2) + le(0, 2) + le(0x21, 2) +
               le(crc, 4) + le(payload.size(), 4) + le(m.data.size(), 4) + le(m.name.size(), 2) + le(0, 2) +
               le(0, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(offset, 4) + m.name;
  }
  std::string out = body + central;
  if (zip64_locator) out += le(0x07064b50, 4) + le(0, 4) + le(0, 8) + le(1, 4);
  out += le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(members.size(), 2) + le(members.size(), 2) +
         le(central.size(), 4) + le(body.size(), 4) + le(0, 2);
  return out;
}

const std::string kDict2 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";

void expect_npz_error(const std::string& bytes, const std::string& part) {
  auto dir = temp_dir("err");
  auto path = dir / "bad.npz";
  write_bytes(path, bytes);
  try {
    read_npz(path.string());
    FAIL() << "no error, wanted: " << part;
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(path.string()), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
  }
  std::filesystem::remove_all(dir);
}

TEST(Npz, ReadsStoredAndDeflatedMembers) {
  auto dir = temp_dir("read");
  std::string a = npy(1, kDict2, raw<float>({1.5f, -2}));
  std::vector<float> many(1000, 0.25f);
  many[999] = 9;
  std::string big = npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }",
                        std::string(reinterpret_cast<const char*>(many.data()), many.size() * 4));
  write_bytes(dir / "m.npz", zip({{"a.npy", a}, {"conv1.weight.npy", big, true}}));
  auto m = read_npz((dir / "m.npz").string());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at("a").data<float>()[0], 1.5f);
  EXPECT_EQ(m.at("conv1.weight").numel(), 1000);
  EXPECT_EQ(m.at("conv1.weight").data<float>()[999], 9.0f);
  EXPECT_EQ(m.at("conv1.weight").data<float>()[3], 0.25f);
  std::filesystem::remove_all(dir);
}

TEST(Npz, ReadsNumpyStyleZip64LocalHeaders) {
  // numpy.savez writes each local header with force_zip64: sizes 0xffffffff
  // there and a zip64 extra field, while the central directory has the sizes.
  auto dir = temp_dir("np");
  std::string a = npy(1, kDict2, raw<float>({3, 4}));
  Member m{"x.npy", a};
  m.numpy_zip64_local = true;
  Member d{"y.npy", a, true};
  d.numpy_zip64_local = true;
  write_bytes(dir / "n.npz", zip({m, d}));
  auto got = read_npz((dir / "n.npz").string());
  EXPECT_EQ(got.at("x").data<float>()[1], 4.0f);
  EXPECT_EQ(got.at("y").data<float>()[0], 3.0f);
  std::filesystem::remove_all(dir);
}

TEST(Npz, WriteThenReadBack) {
  auto dir = temp_dir("write");
  std::map<std::string, Tensor> in;
  in["w"] = Tensor::from_floats({2, 2}, {1, 2, 3, 4});
  in["ids"] = Tensor::from_ints({3}, {7, 8, 9}, DType::Int64);
  in["s"] = Tensor::from_ints({}, {1}, DType::Bool);
  write_npz((dir / "o.npz").string(), in);
  auto out = read_npz((dir / "o.npz").string());
  ASSERT_EQ(out.size(), 3u);
  for (const auto& [k, t] : in) EXPECT_TRUE(out.at(k).bitwise_equal(t)) << k;
  // The writer stores members under "<key>.npy", starting with a local header.
  std::ifstream f(dir / "o.npz", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(bytes.substr(0, 4), le(0x04034b50, 4));
  EXPECT_NE(bytes.find("ids.npy"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Npz, Errors) {
  std::string a = npy(1, kDict2, raw<float>({1, 2}));
  expect_npz_error("", "not a zip archive");
  expect_npz_error(std::string(100, 'x'), "no end-of-central-directory record");
  expect_npz_error(zip({{"a.npy", a}}, true), "zip64 archives are not supported");
  Member bad_crc{"a.npy", a};
  bad_crc.crc_xor = 1;
  expect_npz_error(zip({bad_crc}), "member 'a.npy' fails its CRC-32 check");
  Member bzip{"a.npy", a};
  bzip.method_override = 12;
  expect_npz_error(zip({bzip}), "compression method 12");
  std::string good = zip({{"a.npy", a}});
  // Cut the member data: the central directory still points past the end.
  std::string cut = good.substr(0, 60) + good.substr(good.size() - 22 - 46 - 5);
  expect_npz_error(cut, "");
  std::string broken_member = zip({{"a.npy", a.substr(0, a.size() - 3)}});
  expect_npz_error(broken_member, "a.npy: truncated data");
  Member corrupt{"z.npy", a, true};
  std::string z = zip({corrupt});
  z[40] = static_cast<char>(z[40] ^ 0x55);  // inside the deflate stream
  expect_npz_error(z, "z.npy");
  expect_npz_error(zip({{"a.npy", a}, {"a.npy", a}}), "appears twice");
}

}  // namespace
}  // namespace kiln
