// .npy files: numpy's array format.
//
//   "\x93NUMPY" major minor  header_len (u16 for 1.0, u32 for 2.0 and 3.0)
//   header: a Python dict literal {'descr': '<f4', 'fortran_order': False,
//           'shape': (2, 3), } padded with spaces and a final '\n' so that
//           the data starts at a multiple of 64 bytes
//   data:   the elements, C order
//
// Only what kiln's tensors hold is accepted: little-endian (or one-byte)
// f4 f2 i1 u1 i4 i8 b1 in C order. Everything else is an error naming the file.
#include <cstring>

#include "kiln/runtime/error.h"
#include "kiln/runtime/npy.h"
#include "runtime/file_io.h"

namespace kiln {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

const char* dtype_descr(DType t) {
  switch (t) {
    case DType::Float32:
      return "<f4";
    case DType::Float16:
      return "<f2";
    case DType::Int8:
      return "|i1";
    case DType::UInt8:
      return "|u1";
    case DType::Int32:
      return "<i4";
    case DType::Int64:
      return "<i8";
    case DType::Bool:
      return "|b1";
    case DType::Float64:
      return "<f8";
    case DType::Int16:
      return "<i2";
    case DType::UInt16:
      return "<u2";
    case DType::UInt32:
      return "<u4";
    case DType::UInt64:
      return "<u8";
    case DType::BFloat16:
      break;  // numpy has no bfloat16; encode_npy refuses it
  }
  return "?";
}

DType dtype_from_descr(const std::string& d, const std::string& what) {
  if (d.size() == 3) {
    char order = d[0];
    std::string code = d.substr(1);
    bool one_byte = code == "i1" || code == "u1" || code == "b1";
    if (order == '>' && !one_byte)
      throw Error(what + ": big-endian dtype '" + d + "' is not supported; save it little-endian ('<')");
    if (order == '<' || order == '|' || (one_byte && (order == '>' || order == '='))) {
      if (code == "f4") return DType::Float32;
      if (code == "f2") return DType::Float16;
      if (code == "i1") return DType::Int8;
      if (code == "u1") return DType::UInt8;
      if (code == "i4") return DType::Int32;
      if (code == "i8") return DType::Int64;
      if (code == "b1") return DType::Bool;
      if (code == "f8") return DType::Float64;
      if (code == "i2") return DType::Int16;
      if (code == "u2") return DType::UInt16;
      if (code == "u4") return DType::UInt32;
      if (code == "u8") return DType::UInt64;
    }
  }
  throw Error(what + ": unsupported dtype '" + d +
              "' (supported: <f4 <f2 <f8 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 |b1)");
}

// A tiny reader for the header's Python literal.
class HeaderReader {
 public:
  HeaderReader(std::string_view s, const std::string& what) : s_(s), what_(what) {}

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a string");
    char q = s_[pos_++];
    size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  Shape shape() {
    expect('(');
    Shape shape;
    while (!accept(')')) {
      skip_space();
      int64_t v = 0;
      size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        if (v > (int64_t{1} << 50)) fail("dimension too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start) fail("expected a dimension");
      // Python 2 era files write long integers as 3L.
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;
      shape.push_back(v);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }
  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(what_ + ": malformed .npy header (" + msg + " at offset " + std::to_string(pos_) + " of \"" +
                std::string(s_.substr(0, 120)) + "\")");
  }

 private:
  std::string_view s_;
  const std::string& what_;
  size_t pos_ = 0;
};

uint32_t read_le(const std::string& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(b[at + i])) << (8 * i);
  return v;
}

}  // namespace

Tensor decode_npy(const std::string& bytes, const std::string& what) {
  if (bytes.size() < kMagicLen + 2 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    throw Error(what + ": not a .npy file (bad magic; expected \\x93NUMPY)");
  int major = static_cast<uint8_t>(bytes[6]);
  int minor = static_cast<uint8_t>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw Error(what + ": unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor) +
                " (supported: 1.0, 2.0, 3.0)");
  size_t len_bytes = major == 1 ? 2 : 4;
  size_t header_start = kMagicLen + 2 + len_bytes;
  if (bytes.size() < header_start) throw Error(what + ": truncated .npy header");
  size_t header_len = read_le(bytes, kMagicLen + 2, static_cast<int>(len_bytes));
  if (bytes.size() - header_start < header_len)
    throw Error(what + ": truncated .npy header (header says " + std::to_string(header_len) +
                " bytes, file has " + std::to_string(bytes.size() - header_start) + ")");
  std::string_view header(bytes.data() + header_start, header_len);

  HeaderReader r(header, what);
  std::string descr;
  bool fortran = false, have_descr = false, have_order = false, have_shape = false;
  Shape shape;
  r.expect('{');
  while (!r.accept('}')) {
    std::string key = r.string_literal();
    r.expect(':');
    if (key == "descr") {
      descr = r.string_literal();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = r.boolean();
      have_order = true;
    } else if (key == "shape") {
      shape = r.shape();
      have_shape = true;
    } else {
      r.fail("unknown key '" + key + "'");
    }
    if (!r.accept(',')) {
      r.expect('}');
      break;
    }
  }
  if (!r.at_end()) r.fail("junk after the dict");
  if (!have_descr || !have_order || !have_shape)
    throw Error(what + ": malformed .npy header (needs 'descr', 'fortran_order' and 'shape')");
  DType dtype = dtype_from_descr(descr, what);
  if (fortran)
    throw Error(what +
                ": Fortran-order arrays are not supported; save with C order "
                "(numpy.ascontiguousarray)");
  size_t data_start = header_start + header_len;
  size_t nbytes = static_cast<size_t>(checked_tensor_bytes(shape, dtype, what));
  size_t have = bytes.size() - data_start;
  if (have < nbytes)
    throw Error(what + ": truncated data: shape " + shape_str(shape) + " " + std::string(dtype_name(dtype)) +
                " needs " + std::to_string(nbytes) + " bytes, the file has " + std::to_string(have));
  if (have > nbytes)
    throw Error(what + ": size mismatch: shape " + shape_str(shape) + " " + std::string(dtype_name(dtype)) +
                " needs " + std::to_string(nbytes) + " bytes, but " + std::to_string(have - nbytes) +
                " more follow");
  Tensor t = Tensor::empty(shape, dtype);
  if (nbytes) std::memcpy(t.raw(), bytes.data() + data_start, nbytes);
  return t;
}

std::string encode_npy(const Tensor& t) {
  KILN_ASSERT(t.defined(), "encode_npy of an empty tensor handle");
  if (t.dtype() == DType::BFloat16)
    throw Error("npy: bfloat16 has no numpy dtype; convert the tensor to float32 (astype) before saving it");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  if (t.shape().size() == 1) shape += ",";
  shape += ")";
  std::string dict = std::string("{'descr': '") + dtype_descr(t.dtype()) +
                     "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 holds headers up to 65535 bytes; 2.0 is needed past that.
  bool v2 = dict.size() + 1 + kMagicLen + 4 > 65535;
  size_t prefix = kMagicLen + 2 + (v2 ? 4 : 2);
  size_t total = prefix + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  uint32_t len = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += dict;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

Tensor read_npy(const std::string& path) { return decode_npy(read_file(path), path); }

void write_npy(const std::string& path, const Tensor& t) { write_file(path, encode_npy(t)); }

}  // namespace kiln
