// Reading and writing whole files, the one way kiln does it.
//
// Reads are bounded: a file larger than max_file_bytes() is refused before a
// byte is read, and so is a device such as /dev/zero ("not a regular file");
// a pipe is read up to the limit. Writes are atomic: the bytes go to a
// temporary file in the destination's folder, renamed over the destination
// when complete, so a reader (or a second kiln writing the same file) never
// sees half a file. A destination that exists and is not a regular file
// (/dev/null, a pipe, a terminal) is written in place.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace kiln {

// KILN_MAX_FILE_BYTES (a byte count, or with a K, M, G or T suffix), 16 GiB
// when unset. Throws kiln::Error on a malformed value.
uint64_t max_file_bytes();

// The contents of `path`. `kind` names what the file is in the message when
// it cannot be opened ("cannot open ONNX model 'm.onnx': No such file ...").
std::string read_file(const std::string& path, std::string_view kind = {});

// A file's bytes and what keeps them alive. A regular file is mapped
// (private: a write to the bytes copies the page, never reaches the file),
// so its pages come from the page cache without a copy; a pipe is read. The
// same checks as read_file. Since kiln writes files by renaming a new one
// over the old, a mapped file never changes under its reader.
struct FileBytes {
  std::shared_ptr<const void> owner;
  std::string_view bytes;
};
FileBytes map_file(const std::string& path, std::string_view kind = {});

// Writes `bytes` to `path` atomically (see above); throws kiln::Error naming
// the path when it cannot. A new file is `executable` (mode 0777 less the
// umask) when asked; an existing one keeps its mode.
void write_file(const std::string& path, std::string_view bytes, bool executable = false);

// What read_file checks before it reads: `path` exists, is a file or a pipe
// (not a folder or a device) and is within max_file_bytes(). For readers that
// take a part of a file (ONNX external data).
void check_file_size(const std::string& path, std::string_view kind = {});

// The command line's convention on top: "-" is standard input (read to the
// same limit; a terminal is refused) and standard output. Any other path is
// read_file / write_file.
std::string read_input(const std::string& path, std::string_view kind = {});
void write_output(const std::string& path, std::string_view bytes);

// A byte count from an environment variable: `fallback` when unset, an Error
// naming the variable when malformed (or 0, unless `allow_zero`). Shared by
// the size limits.
uint64_t byte_limit_from_env(const char* name, uint64_t fallback, bool allow_zero = false);

// "17179869184 bytes (16 GiB)", for messages about sizes.
std::string bytes_str(uint64_t bytes);

}  // namespace kiln
