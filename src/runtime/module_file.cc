// .kmod writer and loader.
#include "runtime/module_file.h"

#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "runtime/file_io.h"

namespace kiln {

using json = nlohmann::json;

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'M', 'O', 'D', '\0'};

// Artifacts in a backend's own binary format (a plugin's) are not JSON text:
// the header keeps them in base64.
bool is_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string to_base64(const std::string& in) {
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    if (i + 2 < in.size()) v |= uint8_t(in[i + 2]);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kBase64[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kBase64[v & 63] : '=';
  }
  return out;
}

std::string from_base64(const std::string& in, const std::string& what) {
  if (in.size() % 4)
    throw Error(what + ": a base64 artifact of " + std::to_string(in.size()) + " characters");
  std::string out;
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = in[i + k];
      const char* at = c ? std::strchr(kBase64, c) : nullptr;
      bool padding = c == '=' && i + 4 == in.size() && k >= 2 && (k == 3 || in[i + 3] == '=');
      if (!at && !padding) throw Error(what + ": the base64 artifact is malformed");
      if (padding) ++pad;
      v = (v << 6) | uint32_t(at ? at - kBase64 : 0);
    }
    out += char(v >> 16);
    if (pad < 2) out += char((v >> 8) & 0xff);
    if (pad < 1) out += char(v & 0xff);
  }
  return out;
}

template <typename T>
void put(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

struct Cursor {
  std::string_view bytes;
  const std::string& what;
  size_t at = 0;

  template <typename T>
  T get(const char* field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  std::string_view take(uint64_t n, const char* field) {
    need(n, field);
    std::string_view s = bytes.substr(at, n);
    at += n;
    return s;
  }
  void need(uint64_t n, const char* field) const {
    if (n > bytes.size() - at)
      throw Error(what + ": truncated .kmod file: the " + std::string(field) + " needs " + std::to_string(n) +
                  " bytes at offset " + std::to_string(at) + " but the file has " +
                  std::to_string(bytes.size()) + " bytes; rebuild it with `kiln compile`");
  }
};

}  // namespace

uint64_t kmod_checksum(const char* data, size_t n) {
  // FNV-1a steps on 64-bit words in four independent lanes (one multiply
  // chain each, so about 10 bytes a cycle instead of FNV-1a's one byte per
  // 4 cycles), then FNV-1a over the lanes, the last bytes and the length.
  // Every step is a bijection of its lane, so any one changed word changes
  // the sum.
  constexpr uint64_t kBasis = 1469598103934665603ull, kPrime = 1099511628211ull;
  uint64_t lane[4] = {kBasis, kBasis ^ 1, kBasis ^ 2, kBasis ^ 3};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, data + i + 8 * l, 8);
      lane[l] = (lane[l] ^ w) * kPrime;
    }
  uint64_t h = kBasis;
  auto mix = [&](const char* bytes, size_t count) {
    for (size_t k = 0; k < count; ++k) {
      h ^= static_cast<unsigned char>(bytes[k]);
      h *= kPrime;
    }
  };
  char tail[8];
  for (uint64_t v : lane) {
    std::memcpy(tail, &v, 8);
    mix(tail, 8);
  }
  mix(data + i, n - i);
  const uint64_t length = n;
  std::memcpy(tail, &length, 8);
  mix(tail, 8);
  return h;
}

std::string encode_kmod(const Executable& exe) {
  json header;
  json backends = json::array();
  for (const auto& b : exe.backends) {
    json jb{{"backend", b.backend}, {"options", b.options}, {"functions", json::array()}};
    if (!b.version.empty()) jb["version"] = b.version;
    for (const auto& f : b.functions) {
      json jf{{"symbol", f.symbol}};
      if (is_ascii(f.artifact))
        jf["artifact"] = f.artifact;
      else
        jf["artifact_base64"] = to_base64(f.artifact);
      if (!f.graph.empty()) jf["graph"] = f.graph;
      jb["functions"].push_back(jf);
    }
    if (!b.constants.empty()) jb["constants"] = b.constants;
    backends.push_back(jb);
  }
  json names = json::array();
  for (const auto& b : exe.backends) names.push_back(b.backend);
  header["manifest"] = {{"kiln_version", kKilnVersion},
                        {"format_version", kKmodVersion},
                        {"backends", names},
                        {"offload", exe.offload_summary}};
  header["host"] = graph_to_json(exe.host);
  if (!exe.names.empty())
    header["model_names"] = {{"inputs", exe.names.inputs}, {"outputs", exe.names.outputs}};
  header["backends"] = backends;
  // The data section's layout first (each piece at a multiple of 64 bytes),
  // then the file in one buffer of its final size, each piece copied once:
  // a model's weights (ResNet-18: 47 MB) were copied three times, through
  // buffers that grew by doubling, and that took a third of its compile.
  uint64_t data_size = 0;
  std::vector<std::pair<const char*, uint64_t>> pieces;  // in order of offset
  auto place = [&](const char* bytes, uint64_t n) {
    data_size = (data_size + 63) / 64 * 64;
    const uint64_t at = data_size;
    pieces.emplace_back(bytes, n);
    data_size += n;
    return at;
  };
  json consts = json::array();
  for (const auto& [name, t] : exe.constants)
    consts.push_back({{"name", name},
                      {"dtype", std::string(dtype_name(t.dtype()))},
                      {"shape", t.shape()},
                      {"offset", place(static_cast<const char*>(t.raw()), t.nbytes())},
                      {"bytes", t.nbytes()}});
  header["constants"] = consts;
  if (exe.memory.arena_bytes > 0)
    header["memory"] = {{"arena_bytes", exe.memory.arena_bytes},
                        {"intermediate_bytes", exe.memory.intermediate_bytes},
                        {"offsets", exe.memory.offsets}};
  if (!exe.host_code.empty()) {
    const HostCode& hc = exe.host_code;
    json kernels = json::array();
    for (const auto& k : hc.kernels) kernels.push_back({{"symbol", k.symbol}, {"ops", graph_to_json(k.ops)}});
    header["host_code"] = {{"target", hc.target},
                           {"cpu", hc.cpu},
                           {"cpu_features", hc.cpu_features},
                           {"imports", hc.imports},
                           {"kernels", kernels},
                           {"offset", place(hc.shared_object.data(), hc.shared_object.size())},
                           {"bytes", hc.shared_object.size()}};
  }
  // Model names are arbitrary bytes: invalid UTF-8 is replaced, not an exception.
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  // Spaces after the JSON start the data section at a multiple of 64 bytes,
  // so that a mapped file's constants are aligned as tensors are.
  const size_t before_data = sizeof kMagic + sizeof(uint32_t) + 2 * sizeof(uint64_t);
  text.append((64 - (before_data + text.size()) % 64) % 64, ' ');
  std::string out;
  out.reserve(before_data + text.size() + sizeof(uint64_t) + data_size + sizeof(uint64_t));
  out.append(kMagic, sizeof kMagic);
  put<uint32_t>(out, kKmodVersion);
  put<uint64_t>(out, text.size());
  out += text;
  put<uint64_t>(out, data_size);
  const size_t data_start = out.size();
  for (const auto& [bytes, n] : pieces) {
    out.append((64 - (out.size() - data_start) % 64) % 64, '\0');
    out.append(bytes, n);
  }
  put<uint64_t>(out, kmod_checksum(out.data(), out.size()));
  return out;
}

Executable decode_kmod(std::string_view bytes, const std::string& what, std::shared_ptr<const void> owner) {
  Cursor c{bytes, what};
  std::string_view magic = c.take(sizeof kMagic, "magic number");
  if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0)
    throw Error(what + ": not a .kmod file (bad magic number); make one with `kiln compile`");
  uint32_t version = c.get<uint32_t>("container version");
  if (version != kKmodVersion)
    throw Error(what + ": .kmod format version " + std::to_string(version) +
                " is not supported (this runtime reads " + std::to_string(kKmodVersion) +
                "); recompile the model with this kiln");
  std::string_view header_text = c.take(c.get<uint64_t>("header length"), "header");
  std::string_view data = c.take(c.get<uint64_t>("data length"), "constant data");
  size_t body = c.at;
  uint64_t stored = c.get<uint64_t>("checksum");
  if (c.at != bytes.size())
    throw Error(what + ": .kmod file has " + std::to_string(bytes.size() - c.at) +
                " unexpected bytes at the end");
  if (stored != kmod_checksum(bytes.data(), body))
    throw Error(what + ": .kmod checksum mismatch: the file is corrupted; rebuild it with `kiln compile`");
  json h;
  try {
    h = json::parse(header_text.begin(), header_text.end());
    const json& m = h.at("manifest");
    std::string kv = m.at("kiln_version").get<std::string>();
    auto major_minor = [](const std::string& v) { return v.substr(0, v.rfind('.')); };
    if (major_minor(kv) != major_minor(kKilnVersion))
      throw Error(what + ": built by kiln " + kv + ", but this runtime is kiln " + kKilnVersion +
                  "; recompile the model");
    if (m.at("format_version").get<uint32_t>() != kKmodVersion)
      throw Error(what + ": manifest format version " + m.at("format_version").dump() + " is not supported");
    Executable exe;
    if (m.contains("offload")) exe.offload_summary = m.at("offload").get<std::string>();
    exe.host = graph_from_json(h.at("host").get<std::string>(), what + " host program");
    if (h.contains("model_names")) {
      const json& jn = h.at("model_names");
      exe.names.inputs = jn.at("inputs").get<std::map<std::string, std::string>>();
      exe.names.outputs = jn.at("outputs").get<std::vector<std::string>>();
      for (const auto& [input, name] : exe.names.inputs) {
        bool found = false;
        for (const auto& in : exe.host.inputs) found = found || in.name == input;
        if (!found)
          throw Error(what + ": the model names input '" + input + "', which the host program lacks");
      }
      if (exe.names.outputs.size() > exe.host.outputs.size())
        throw Error(what + ": the model names " + std::to_string(exe.names.outputs.size()) +
                    " outputs, the host program has " + std::to_string(exe.host.outputs.size()));
    }
    std::vector<std::string> listed = m.at("backends").get<std::vector<std::string>>();
    for (const auto& jb : h.at("backends")) {
      BackendPart b;
      b.backend = jb.at("backend").get<std::string>();
      b.version = jb.value("version", std::string());
      b.options = jb.at("options").get<std::map<std::string, std::string>>();
      for (const auto& f : jb.at("functions")) {
        std::string symbol = f.at("symbol").get<std::string>();
        std::string artifact =
            f.contains("artifact_base64")
                ? from_base64(f.at("artifact_base64").get<std::string>(), what + ": " + symbol)
                : f.at("artifact").get<std::string>();
        b.functions.push_back({symbol, std::move(artifact), f.value("graph", std::string())});
      }
      b.constants = jb.value("constants", std::vector<std::string>());
      exe.backends.push_back(std::move(b));
    }
    if (listed.size() != exe.backends.size())
      throw Error(what + ": manifest lists " + std::to_string(listed.size()) +
                  " backend(s), the module has " + std::to_string(exe.backends.size()));
    for (size_t i = 0; i < listed.size(); ++i)
      if (listed[i] != exe.backends[i].backend)
        throw Error(what + ": manifest backend '" + listed[i] + "' does not match the module's '" +
                    exe.backends[i].backend + "'");
    for (const auto& jc : h.at("constants")) {
      std::string name = jc.at("name").get<std::string>();
      auto dt = dtype_from_name(jc.at("dtype").get<std::string>());
      if (!dt) throw Error(what + ": constant " + name + " has an unknown dtype");
      Shape shape = jc.at("shape").get<Shape>();
      uint64_t offset = jc.at("offset").get<uint64_t>(), n = jc.at("bytes").get<uint64_t>();
      int64_t size = checked_tensor_bytes(shape, *dt, what + ": constant " + name);
      if (n != static_cast<uint64_t>(size) || offset > data.size() || n > data.size() - offset)
        throw Error(what + ": constant " + name + " lies outside the data section");
      // In a mapped file, an aligned constant is used where it lies.
      const char* at = data.data() + offset;
      if (owner && reinterpret_cast<uintptr_t>(at) % kTensorAlignment == 0) {
        exe.constants[name] = Tensor::view(owner, const_cast<char*>(at), shape, *dt);
        continue;
      }
      Tensor t = Tensor::empty(shape, *dt);
      std::memcpy(t.raw(), at, n);
      exe.constants[name] = t;
    }
    if (h.contains("memory")) {
      const json& jm = h.at("memory");
      exe.memory.arena_bytes = jm.at("arena_bytes").get<int64_t>();
      exe.memory.intermediate_bytes = jm.at("intermediate_bytes").get<int64_t>();
      exe.memory.offsets = jm.at("offsets").get<std::map<std::string, int64_t>>();
      if (exe.memory.arena_bytes < 0) throw Error(what + ": the arena has a negative size");
      std::map<std::string, int64_t> bytes;
      for (const auto& n : exe.host.nodes)
        for (const auto& o : n.outputs)
          bytes[o.name] = checked_tensor_bytes(o.desc.shape, o.desc.dtype, what + ": value " + o.name);
      for (const auto& [name, offset] : exe.memory.offsets) {
        auto it = bytes.find(name);
        if (it == bytes.end() || offset < 0 || offset > exe.memory.arena_bytes ||
            it->second > exe.memory.arena_bytes - offset)
          throw Error(what + ": the arena places '" + name +
                      "' outside the arena or the value does not exist");
      }
    }
    if (h.contains("host_code")) {
      const json& jh = h.at("host_code");
      HostCode& hc = exe.host_code;
      hc.target = jh.at("target").get<std::string>();
      hc.cpu = jh.at("cpu").get<std::string>();
      hc.cpu_features = jh.at("cpu_features").get<std::vector<std::string>>();
      hc.imports = jh.at("imports").get<std::vector<std::string>>();
      for (const auto& jk : jh.at("kernels")) {
        std::string symbol = jk.at("symbol").get<std::string>();
        hc.kernels.push_back(
            {symbol, graph_from_json(jk.at("ops").get<std::string>(), what + " kernel " + symbol)});
      }
      uint64_t offset = jh.at("offset").get<uint64_t>(), n = jh.at("bytes").get<uint64_t>();
      if (offset > data.size() || n > data.size() - offset)
        throw Error(what + ": the host code lies outside the data section");
      hc.shared_object = std::string(data.substr(offset, n));
    }
    return exe;
  } catch (const json::exception& e) {
    throw Error(what + ": malformed .kmod header: " + e.what());
  }
}

uint64_t write_kmod(const std::string& path, const Executable& exe) {
  std::string bytes = encode_kmod(exe);
  write_file(path, bytes);
  return bytes.size();
}

Executable read_kmod(const std::string& path) {
  FileBytes file = map_file(path, ".kmod module");
  return decode_kmod(file.bytes, path, file.owner);
}

bool is_kmod_bytes(std::string_view bytes) {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

bool is_kmod_file(const std::string& path) {
  // Reading from a pipe would take its first bytes from whoever reads next.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::ifstream in(path, std::ios::binary);
  char buf[8] = {};
  in.read(buf, 8);
  return in.gcount() == 8 && is_kmod_bytes(std::string_view(buf, 8));
}

}  // namespace kiln
