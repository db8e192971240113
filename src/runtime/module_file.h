// The .kmod artifact: one file holding a compiled module.
//
// Layout (little-endian):
//   "KILNMOD\0"                 8 bytes magic
//   u32 container version       (kKmodVersion)
//   u64 header length, header   JSON: manifest, host program, backend parts,
//                               host code (target, CPU features, imports,
//                               kernels, shared object offset and size),
//                               constant index (name, dtype, shape, offset, bytes)
//   u64 data length, data       constant bytes and the host code's shared
//                               object, 64-byte aligned offsets; the header
//                               ends with spaces so that the data starts at
//                               a multiple of 64 bytes in the file
//   u64 checksum                of every byte before it (kmod_checksum)
//
// The manifest records the kiln version, the format version and the
// backends; loading checks all of them, the checksum and every length, so a
// truncated or corrupted file is a clear error, never a crash.
#pragma once

#include <string>
#include <string_view>

#include "runtime/vm.h"

namespace kiln {

// 2: compiled host code (a shared object of host kernels, runtime/host_code.h).
// 3: a checksum of 64-bit words in four lanes; the data section aligned.
inline constexpr uint32_t kKmodVersion = 3;
// The kiln version written into manifests; modules from another major.minor
// version are refused.
inline constexpr const char* kKilnVersion = "0.1.0";

std::string encode_kmod(const Executable& exe);
// The checksum a .kmod ends with, of the bytes before it: FNV-1a steps on
// 64-bit words in four lanes, then over the lanes, the tail and the length.
// The .kmod fuzz target recomputes it so mutations reach the header.
uint64_t kmod_checksum(const char* data, size_t n);
// With `owner` (what keeps `bytes` alive, a mapped file), the constants are
// views of `bytes` where they are aligned; without, copies.
Executable decode_kmod(std::string_view bytes, const std::string& what,
                       std::shared_ptr<const void> owner = nullptr);
// Written atomically (runtime/file_io.h); returns the bytes written.
uint64_t write_kmod(const std::string& path, const Executable& exe);
// Maps the file (runtime/file_io.h): its constants are used in place.
Executable read_kmod(const std::string& path);
// True when the file starts with the .kmod magic. Only a regular file is
// looked at: a pipe is never read (its bytes belong to the reader after), so
// a caller with a pipe reads it whole and asks is_kmod_bytes.
bool is_kmod_file(const std::string& path);
bool is_kmod_bytes(std::string_view bytes);

}  // namespace kiln
