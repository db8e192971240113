// acme_npu: a kiln backend plugin built outside kiln (README in docs/byoc.md).
//
// What it claims: elementwise add, subtract and multiply of two float32
// tensors of ONE shape, and nn.relu, on a device whose buffer holds
// `acme_npu.buffer` elements (default 4096). The check refuses, with the
// reason `kiln partition --explain` prints, other dtypes, broadcasting and
// tensors larger than the buffer. Codegen turns each offloaded function
// (kiln.graph JSON) into the device's own program (acme_program.h); the
// runtime parses the programs once and runs them on kiln's tensors.
//
// Only C types cross into kiln (<kiln/backend_plugin.h>); every callback
// catches its exceptions.
#include <kiln/backend_plugin.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acme_program.h"

namespace {

constexpr int64_t kDefaultBuffer = 4096;

void fail(char* error, size_t size, const std::string& message) {
  std::snprintf(error, size, "%s", message.c_str());
}

// The `buffer` option (elements), or -1 when it is not a positive number.
int64_t buffer_elements(const kiln_plugin_option* options, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::strcmp(options[i].key, "buffer") == 0) {
      char* end = nullptr;
      long long v = std::strtoll(options[i].value, &end, 10);
      return end != options[i].value && *end == 0 && v > 0 ? v : -1;
    }
  return kDefaultBuffer;
}

// The match's shapes from its JSON: {"op":..,"inputs":[{"shape":[..],"dtype":".."}],"output":{..}}.
// kiln writes it compactly, so the shapes and dtypes are found as text.
std::vector<std::string> fields(const std::string& json, const std::string& key) {
  std::vector<std::string> out;
  std::string tag = "\"" + key + "\":";
  for (size_t at = json.find(tag); at != std::string::npos; at = json.find(tag, at + 1)) {
    size_t begin = at + tag.size();
    size_t end = json.find(json[begin] == '[' ? ']' : '"', begin + 1);
    out.push_back(json.substr(begin, end + 1 - begin));
  }
  return out;
}

int64_t elements(const std::string& shape) {  // "[4,16]"
  int64_t n = 1;
  for (size_t at = 1; at < shape.size() && shape[at] != ']';) {
    char* end = nullptr;
    n *= std::strtoll(shape.c_str() + at, &end, 10);
    at = end - shape.c_str() + 1;
  }
  return n;
}

int check(const char* pattern, const char* match_json, const kiln_plugin_option* options, size_t num_options,
          char* reason, size_t reason_size) {
  std::string json = match_json;
  for (const auto& d : fields(json, "dtype"))
    if (d != "\"float32\"") return fail(reason, reason_size, "acme_npu runs float32 only, not " + d), 1;
  std::vector<std::string> shapes = fields(json, "shape");
  for (const auto& s : shapes)
    if (s != shapes[0])
      return fail(reason, reason_size,
                  std::string(pattern) + ": shapes " + shapes[0] + " and " + s +
                      " differ; acme_npu does not broadcast"),
             1;
  int64_t buffer = buffer_elements(options, num_options);
  if (buffer < 0) return fail(reason, reason_size, "option acme_npu.buffer must be a positive number"), 1;
  if (!shapes.empty() && elements(shapes[0]) > buffer)
    return fail(reason, reason_size,
                std::to_string(elements(shapes[0])) + " elements exceed the buffer of " +
                    std::to_string(buffer) + " (--option acme_npu.buffer=N)"),
           1;
  return 0;
}

// Declared, so kiln checks `--option acme_npu.buffer=...` (a known key, an
// integer) before partitioning; the check above still refuses values <= 0.
const kiln_plugin_option_decl kOptions[] = {
    {"buffer", KILN_OPTION_INT, "4096", "elements the device buffer holds", nullptr},
};

const kiln_plugin_pattern kPatterns[] = {
    {"add", "add", 2, 10, "add of two float32 tensors of one shape", check},
    {"subtract", "subtract", 2, 10, "subtract of two float32 tensors of one shape", check},
    {"multiply", "multiply", 2, 10, "multiply of two float32 tensors of one shape", check},
    {"relu", "nn.relu", 1, 10, "nn.relu of a float32 tensor", check},
};

int codegen(const char* symbol, const char* graph_json, const kiln_plugin_option*, size_t,
            kiln_plugin_bytes* artifact, char* error, size_t error_size) {
  try {
    std::string program;
    std::string why = acme::compile_program(graph_json, &program);
    if (!why.empty()) return fail(error, error_size, std::string(symbol) + ": " + why), 1;
    artifact->data = static_cast<char*>(std::malloc(program.size()));
    if (!artifact->data) return fail(error, error_size, "out of memory"), 1;
    std::memcpy(artifact->data, program.data(), program.size());
    artifact->size = program.size();
    return 0;
  } catch (const std::exception& e) {
    return fail(error, error_size, std::string(symbol) + ": " + e.what()), 1;
  }
}

void free_bytes(kiln_plugin_bytes* bytes) {
  std::free(bytes->data);
  bytes->data = nullptr;
  bytes->size = 0;
}

// One per loaded module: the parsed programs and copies of the constants.
// run() only reads it, so runs on several threads need no lock.
struct Device {
  std::map<std::string, acme::Program> programs;
  std::map<std::string, std::vector<float>> constants;
};

int runtime_create(const kiln_plugin_function* functions, size_t num_functions,
                   const kiln_plugin_tensor* constants, size_t num_constants, const kiln_plugin_option*,
                   size_t, void** state, char* error, size_t error_size) {
  try {
    auto device = std::make_unique<Device>();
    for (size_t i = 0; i < num_functions; ++i) {
      std::string text(functions[i].artifact, functions[i].artifact_size);
      std::string why = acme::parse_program(text, &device->programs[functions[i].symbol]);
      if (!why.empty()) return fail(error, error_size, std::string(functions[i].symbol) + ": " + why), 1;
    }
    for (size_t i = 0; i < num_constants; ++i) {
      if (constants[i].dtype != KILN_FLOAT32) continue;
      const float* data = static_cast<const float*>(constants[i].data);
      device->constants[constants[i].name].assign(data, data + constants[i].byte_size / sizeof(float));
    }
    *state = device.release();
    return 0;
  } catch (const std::exception& e) {
    return fail(error, error_size, e.what()), 1;
  }
}

int runtime_run(void* state, const char* symbol, const kiln_plugin_tensor* inputs, size_t num_inputs,
                kiln_plugin_tensor* outputs, size_t num_outputs, char* error, size_t error_size) {
  try {
    const Device& device = *static_cast<const Device*>(state);
    auto it = device.programs.find(symbol);
    if (it == device.programs.end())
      return fail(error, error_size, std::string("no program for ") + symbol), 1;
    const acme::Program& p = it->second;
    if (num_inputs != p.inputs.size() || num_outputs != p.outputs.size())
      return fail(error, error_size, std::string(symbol) + ": wrong number of inputs or outputs"), 1;
    std::vector<const float*> in;
    for (size_t i = 0; i < num_inputs; ++i) {
      if (inputs[i].dtype != KILN_FLOAT32 || inputs[i].byte_size != p.inputs[i].second * sizeof(float))
        return fail(error, error_size,
                    std::string(symbol) + ": input " + p.inputs[i].first + " is not as compiled"),
               1;
      in.push_back(static_cast<const float*>(inputs[i].data));
    }
    std::vector<float*> out;
    for (size_t i = 0; i < num_outputs; ++i) {
      if (outputs[i].byte_size != p.elements.at(p.outputs[i]) * sizeof(float))
        return fail(error, error_size,
                    std::string(symbol) + ": output " + p.outputs[i] + " is not as compiled"),
               1;
      out.push_back(static_cast<float*>(outputs[i].data));
    }
    std::map<std::string, const float*> consts;
    for (const auto& [name, values] : device.constants) consts[name] = values.data();
    std::string why = p.run(in, consts, out);
    if (!why.empty()) return fail(error, error_size, std::string(symbol) + ": " + why), 1;
    return 0;
  } catch (const std::exception& e) {
    return fail(error, error_size, std::string(symbol) + ": " + e.what()), 1;
  }
}

void runtime_destroy(void* state) { delete static_cast<Device*>(state); }

const kiln_backend_plugin kPlugin = {
    KILN_BACKEND_PLUGIN_ABI_VERSION,
    sizeof(kiln_backend_plugin),
    "acme_npu",
    ACME_NPU_VERSION,
    "the ACME vector NPU (examples/out_of_tree_backend)",
    kPatterns,
    sizeof kPatterns / sizeof kPatterns[0],
    codegen,
    free_bytes,
    runtime_create,
    runtime_run,
    runtime_destroy,
    kOptions,
    sizeof kOptions / sizeof kOptions[0],
};

}  // namespace

extern "C" KILN_PLUGIN_EXPORT const kiln_backend_plugin* kiln_backend_plugin_v1(uint32_t kiln_abi_version) {
  return kiln_abi_version == KILN_BACKEND_PLUGIN_ABI_VERSION ? &kPlugin : nullptr;
}
