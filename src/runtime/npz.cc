// .npz files: a zip archive whose members are .npy files named "<key>.npy".
//
// The reader walks the central directory (the authority on sizes: numpy
// writes its local headers with zip64 placeholders), and takes stored and
// deflated members, checking each CRC-32. Archives that need zip64 (over
// 4 GiB or 65535 members) are refused with a clear error. Before anything is
// inflated, the members' declared sizes together must stay within
// max_file_bytes() and their data must not overlap (an overlapping zip bomb
// reuses one deflate stream for many members); each member is inflated to
// its declared size and no further, and its first bytes must be a .npy header
// before the rest is inflated. The writer stores members uncompressed.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kiln/runtime/error.h"
#include "kiln/runtime/npy.h"
#include "runtime/file_io.h"

namespace kiln {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;

class Bytes {
 public:
  Bytes(const std::string& data, const std::string& what) : d_(data), what_(what) {}
  uint32_t u32(size_t at) const { return static_cast<uint32_t>(get(at, 4)); }
  uint16_t u16(size_t at) const { return static_cast<uint16_t>(get(at, 2)); }
  void need(size_t at, size_t n, const char* part) const {
    if (at > d_.size() || d_.size() - at < n)
      throw Error(what_ + ": truncated zip archive (" + part + " at offset " + std::to_string(at) +
                  " runs past the end of the file)");
  }

 private:
  uint64_t get(size_t at, int n) const {
    need(at, static_cast<size_t>(n), "field");
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(d_[at + i])) << (8 * i);
    return v;
  }
  const std::string& d_;
  const std::string& what_;
};

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;

// Member contents start with the .npy magic (checked before a large member is
// inflated in full).
void check_npy_start(const std::string& what, const std::string& name, std::string_view head) {
  if (head.size() < kNpyMagicLen || head.compare(0, kNpyMagicLen, kNpyMagic) != 0)
    throw Error(what + ": member '" + name + "' is not a .npy array (bad magic)");
}

std::string inflate_member(const std::string& what, const std::string& name, const char* src, size_t src_len,
                           size_t out_len) {
  struct Stream {
    z_stream zs{};
    ~Stream() { inflateEnd(&zs); }
  } s;
  if (inflateInit2(&s.zs, -MAX_WBITS) != Z_OK)
    throw Error(what + ": cannot start zlib to inflate member '" + name + "'");
  auto corrupt = [&] {
    return Error(what + ": member '" + name + "' is corrupt (deflate data does not inflate to " +
                 std::to_string(out_len) + " bytes)");
  };
  s.zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(src));
  s.zs.avail_in = static_cast<uInt>(src_len);
  // The head first, then (when it is an array) the rest, never past out_len.
  std::string out(std::min<size_t>(out_len, kNpyMagicLen), '\0');
  s.zs.next_out = reinterpret_cast<Bytef*>(out.data());
  s.zs.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&s.zs, Z_SYNC_FLUSH);
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) throw corrupt();
  if (s.zs.total_out < out.size()) throw corrupt();
  check_npy_start(what, name, out);
  out.resize(out_len);
  s.zs.next_out = reinterpret_cast<Bytef*>(out.data() + s.zs.total_out);
  s.zs.avail_out = static_cast<uInt>(out_len - s.zs.total_out);
  if (rc != Z_STREAM_END) rc = inflate(&s.zs, Z_FINISH);
  if (rc != Z_STREAM_END || s.zs.total_out != out_len) throw corrupt();
  return out;
}

void put16(std::string& s, uint32_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}

std::map<std::string, Tensor> decode_npz_bytes(const std::string& data, const std::string& what) {
  Bytes b(data, what);
  if (data.size() < kEndSize)
    throw Error(what + ": not a zip archive (too short for an end-of-central-directory record)");
  // The end record is last, followed only by a comment of up to 65535 bytes.
  size_t end = std::string::npos;
  size_t lowest = data.size() > kEndSize + 65535 ? data.size() - kEndSize - 65535 : 0;
  for (size_t at = data.size() - kEndSize + 1; at-- > lowest;) {
    if (b.u32(at) == kEndSig) {
      end = at;
      break;
    }
  }
  if (end == std::string::npos)
    throw Error(what + ": not a zip archive (no end-of-central-directory record)");
  if (end >= 20 && b.u32(end - 20) == kZip64LocatorSig)
    throw Error(what + ": zip64 archives are not supported (re-save with fewer or smaller arrays)");
  uint16_t count = b.u16(end + 10);
  uint32_t cd_size = b.u32(end + 12);
  uint32_t cd_offset = b.u32(end + 16);
  if (count == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff)
    throw Error(what + ": zip64 archives are not supported (re-save with fewer or smaller arrays)");
  if (b.u16(end + 4) != 0 || b.u16(end + 6) != 0 || b.u16(end + 8) != count)
    throw Error(what + ": multi-disk zip archives are not supported");
  b.need(cd_offset, cd_size, "central directory");

  // The members before anything is inflated: sizes within the limit, data
  // that does not overlap.
  struct Member {
    std::string name;
    uint16_t method;
    uint32_t crc, csize, usize;
    size_t data_at;
  };
  std::vector<Member> members;
  uint64_t total = 0;
  size_t at = cd_offset;
  for (uint16_t i = 0; i < count; ++i) {
    b.need(at, kCentralSize, "central directory entry");
    if (b.u32(at) != kCentralSig)
      throw Error(what + ": corrupt zip archive (bad central directory entry " + std::to_string(i) + ")");
    uint16_t flags = b.u16(at + 8);
    uint16_t method = b.u16(at + 10);
    uint32_t crc = b.u32(at + 16);
    uint32_t csize = b.u32(at + 20);
    uint32_t usize = b.u32(at + 24);
    uint16_t name_len = b.u16(at + 28);
    uint16_t extra_len = b.u16(at + 30);
    uint16_t comment_len = b.u16(at + 32);
    uint32_t local = b.u32(at + 42);
    b.need(at + kCentralSize, name_len, "member name");
    std::string name = data.substr(at + kCentralSize, name_len);
    at += kCentralSize + name_len + extra_len + comment_len;
    if (csize == 0xffffffff || usize == 0xffffffff || local == 0xffffffff)
      throw Error(what + ": member '" + name + "' needs zip64, which is not supported");
    if (flags & 1) throw Error(what + ": member '" + name + "' is encrypted");
    if (method != 0 && method != 8)
      throw Error(what + ": member '" + name + "' uses compression method " + std::to_string(method) +
                  " (supported: stored, deflate)");
    b.need(local, kLocalSize, "local header");
    if (b.u32(local) != kLocalSig)
      throw Error(what + ": corrupt zip archive (bad local header for member '" + name + "')");
    size_t data_at = local + kLocalSize + b.u16(local + 26) + b.u16(local + 28);
    b.need(data_at, csize, "member data");
    if (method == 0 && csize != usize)
      throw Error(what + ": corrupt zip archive (stored member '" + name + "' has two sizes)");
    // Deflate expands at most ~1032:1; a larger claim is corrupt, not a reason to allocate.
    if (method == 8 && usize > static_cast<uint64_t>(csize) * 1100 + 1024)
      throw Error(what + ": member '" + name + "' is corrupt (claims " + std::to_string(usize) +
                  " bytes from " + std::to_string(csize) + " compressed)");
    total += usize;
    members.push_back({name, method, crc, csize, usize, data_at});
  }
  uint64_t limit = max_file_bytes();
  if (total > limit)
    throw Error(what + ": the archive's arrays are " + bytes_str(total) +
                " uncompressed, larger than the limit of " + bytes_str(limit) +
                " (set KILN_MAX_FILE_BYTES to raise it)");
  std::vector<const Member*> by_offset;
  for (const auto& m : members) by_offset.push_back(&m);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Member* x, const Member* y) { return x->data_at < y->data_at; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i - 1]->data_at + by_offset[i - 1]->csize > by_offset[i]->data_at &&
        by_offset[i]->csize > 0)
      throw Error(what + ": corrupt zip archive (members '" + by_offset[i - 1]->name + "' and '" +
                  by_offset[i]->name + "' share data)");

  std::map<std::string, Tensor> out;
  for (const Member& m : members) {
    const std::string& name = m.name;
    // Directories and non-array members are not tensors.
    if (name.empty() || name.back() == '/') continue;
    uint32_t crc = m.crc;
    std::string bytes = m.method == 0 ? data.substr(m.data_at, m.csize)
                                      : inflate_member(what, name, data.data() + m.data_at, m.csize, m.usize);
    uint32_t actual = static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
    if (actual != crc)
      throw Error(what + ": member '" + name + "' fails its CRC-32 check (the file is corrupt)");
    std::string key = name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    if (out.count(key)) throw Error(what + ": member '" + name + "' appears twice");
    out[key] = decode_npy(bytes, what + ":" + name);
  }
  return out;
}

}  // namespace

std::map<std::string, Tensor> read_npz(const std::string& path) {
  return decode_npz_bytes(read_file(path), path);
}

void write_npz(const std::string& path, const std::map<std::string, Tensor>& tensors) {
  std::string archive, central;
  uint16_t count = 0;
  if (tensors.size() >= 0xffff)
    throw Error("write_npz '" + path + "': too many arrays (" + std::to_string(tensors.size()) +
                ") for a zip archive without zip64");
  for (const auto& [key, t] : tensors) {
    std::string name = key + ".npy";
    std::string bytes = encode_npy(t);
    if (bytes.size() >= 0xffffffffu || archive.size() + bytes.size() + 1024 >= 0xffffffffu ||
        name.size() > 0xffff)
      throw Error("write_npz '" + path + "': array '" + key +
                  "' does not fit a zip archive without zip64 (over 4 GiB)");
    uint32_t crc = static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
    uint32_t offset = static_cast<uint32_t>(archive.size());
    uint32_t size = static_cast<uint32_t>(bytes.size());
    // Local header: version 2.0, no flags, stored, DOS time 1980-01-01 00:00.
    put32(archive, kLocalSig);
    put16(archive, 20);
    put16(archive, 0);
    put16(archive, 0);
    put16(archive, 0);
    put16(archive, 0x21);
    put32(archive, crc);
    put32(archive, size);
    put32(archive, size);
    put16(archive, static_cast<uint32_t>(name.size()));
    put16(archive, 0);
    archive += name;
    archive += bytes;
    put32(central, kCentralSig);
    put16(central, 20);
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0x21);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    put16(central, static_cast<uint32_t>(name.size()));
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put32(central, 0);
    put32(central, offset);
    central += name;
    ++count;
  }
  uint32_t cd_offset = static_cast<uint32_t>(archive.size());
  archive += central;
  put32(archive, kEndSig);
  put16(archive, 0);
  put16(archive, 0);
  put16(archive, count);
  put16(archive, count);
  put32(archive, static_cast<uint32_t>(central.size()));
  put32(archive, cd_offset);
  put16(archive, 0);
  write_file(path, archive);
}

}  // namespace kiln
