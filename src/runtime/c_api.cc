// The C API (include/kiln/kiln.h) over the VM.
//
// A kiln_module owns a VirtualMachine (which is only read by runs, so one
// module runs from many threads) and the names, dtypes and shapes of its
// inputs and outputs, computed once at load so queries return pointers that
// live as long as the module. A kiln_run holds one run's bindings. Every
// entry point catches everything: kiln::Error becomes a status with its
// message, anything else an internal-error status; nothing unwinds into C.
#include "kiln/kiln.h"

#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "kiln/runtime/error.h"
#include "runtime/backend_plugin.h"
#include "runtime/file_io.h"
#include "runtime/module_file.h"
#include "runtime/vm.h"

struct kiln_status {
  kiln_status_code code;
  std::string message;
};

namespace {

using kiln::DType;
using kiln::Tensor;

// A failure the API reports with a specific code (Error is KILN_RUN_FAILED
// during a run and KILN_BAD_MODEL during a load).
struct ApiError {
  kiln_status_code code;
  std::string message;
};

kiln_status* make_status(kiln_status_code code, std::string message) {
  // Allocation failure here cannot be reported any other way; nothrow keeps
  // it from escaping.
  return new (std::nothrow) kiln_status{code, std::move(message)};
}

// Runs `body`, turning every exception into a status.
template <typename F>
kiln_status* guarded(kiln_status_code error_code, F&& body) {
  try {
    body();
    return nullptr;
  } catch (const ApiError& e) {
    return make_status(e.code, e.message);
  } catch (const kiln::Error& e) {
    return make_status(error_code, e.what());
  } catch (const std::bad_alloc&) {
    return make_status(KILN_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return make_status(KILN_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return make_status(KILN_INTERNAL, "internal error: unknown exception");
  }
}

void require(bool cond, kiln_status_code code, const std::string& message) {
  if (!cond) throw ApiError{code, message};
}

void require_arg(const void* p, const char* function, const char* arg) {
  require(p != nullptr, KILN_INVALID_ARGUMENT, std::string(function) + ": " + arg + " is NULL");
}

// The C enum and kiln::DType list the same types in the same order.
static_assert(kiln::kNumDTypes == 13, "kiln_dtype in kiln.h lists every kiln::DType");
static_assert(
    static_cast<int>(DType::Float32) == KILN_FLOAT32 && static_cast<int>(DType::Float16) == KILN_FLOAT16 &&
        static_cast<int>(DType::Int8) == KILN_INT8 && static_cast<int>(DType::UInt8) == KILN_UINT8 &&
        static_cast<int>(DType::Int32) == KILN_INT32 && static_cast<int>(DType::Int64) == KILN_INT64 &&
        static_cast<int>(DType::Bool) == KILN_BOOL && static_cast<int>(DType::Float64) == KILN_FLOAT64 &&
        static_cast<int>(DType::Int16) == KILN_INT16 && static_cast<int>(DType::UInt16) == KILN_UINT16 &&
        static_cast<int>(DType::UInt32) == KILN_UINT32 && static_cast<int>(DType::UInt64) == KILN_UINT64 &&
        static_cast<int>(DType::BFloat16) == KILN_BFLOAT16,
    "kiln_dtype values equal kiln::DType's");

bool valid_dtype(int d) { return d >= 0 && d < kiln::kNumDTypes; }

struct TensorSlot {
  std::string name;       // the model's name, or kiln's
  std::string kiln_name;  // kiln's value name
  kiln::TensorDesc desc;
  size_t byte_size = 0;
};

std::string slot_label(const TensorSlot& s) {
  return s.name == s.kiln_name ? "'" + s.name + "'" : "'" + s.name + "' (kiln: %" + s.kiln_name + ")";
}

std::string type_label(const TensorSlot& s) {
  return kiln::shape_str(s.desc.shape) + " " + std::string(kiln::dtype_name(s.desc.dtype)) + ", " +
         std::to_string(s.byte_size) + " bytes";
}

std::string name_list(const std::vector<TensorSlot>& slots) {
  std::string s;
  for (const auto& slot : slots) s += (s.empty() ? "" : ", ") + slot_label(slot);
  return s.empty() ? "none" : s;
}

// The recorded type of the host program's value `name`.
const kiln::TensorDesc* find_value_desc(const kiln::Graph& g, const std::string& name) {
  for (const auto& v : g.inputs)
    if (v.name == name) return &v.desc;
  for (const auto& v : g.constants)
    if (v.name == name) return &v.desc;
  for (const auto& n : g.nodes)
    for (const auto& v : n.outputs)
      if (v.name == name) return &v.desc;
  return nullptr;
}

}  // namespace

struct kiln_module {
  std::string label;
  std::unique_ptr<kiln::VirtualMachine> vm;
  std::vector<TensorSlot> inputs;
  std::vector<TensorSlot> outputs;
};

struct kiln_run {
  const kiln_module* module;
  std::vector<const void*> inputs;  // bound buffers, nullptr when unbound
  std::vector<void*> outputs;
  // Each output's shape in the last invoke (kiln_run_output_shape): below the
  // bound on a bounded dynamic leading axis; the module's shape before.
  std::vector<kiln::Shape> output_shapes;
};

namespace {

std::unique_ptr<kiln_module> make_module(kiln::Executable exe, const std::string& label) {
  auto m = std::make_unique<kiln_module>();
  m->label = label;
  const kiln::ModelNames names = exe.names;
  for (const auto& in : exe.host.inputs) {
    auto it = names.inputs.find(in.name);
    std::string name = it != names.inputs.end() ? it->second : in.name;
    size_t bytes =
        static_cast<size_t>(kiln::checked_tensor_bytes(in.desc.shape, in.desc.dtype, "input " + name));
    m->inputs.push_back({name, in.name, in.desc, bytes});
  }
  for (size_t i = 0; i < exe.host.outputs.size(); ++i) {
    const std::string& value = exe.host.outputs[i];
    const kiln::TensorDesc* desc = find_value_desc(exe.host, value);
    if (!desc) throw kiln::Error(label + ": the host program's output %" + value + " is not defined");
    std::string name = i < names.outputs.size() && !names.outputs[i].empty() ? names.outputs[i] : value;
    size_t bytes =
        static_cast<size_t>(kiln::checked_tensor_bytes(desc->shape, desc->dtype, "output " + name));
    m->outputs.push_back({name, value, *desc, bytes});
  }
  m->vm = std::make_unique<kiln::VirtualMachine>(std::move(exe));
  return m;
}

void fill_info(const TensorSlot& s, kiln_tensor_info* info) {
  info->name = s.name.c_str();
  info->kiln_name = s.kiln_name.c_str();
  info->dtype = static_cast<kiln_dtype>(s.desc.dtype);
  info->ndim = s.desc.shape.size();
  info->shape = s.desc.shape.data();
  info->byte_size = s.byte_size;
  info->bounded_outer = s.desc.bounded_outer ? 1 : 0;
}

// The model's name first (ONNX names may look like another value's kiln name), then kiln's.
std::optional<size_t> find_slot(const std::vector<TensorSlot>& slots, const std::string& name) {
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].name == name) return i;
  std::string kiln_name = !name.empty() && name[0] == '%' ? name.substr(1) : name;
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].kiln_name == kiln_name) return i;
  return std::nullopt;
}

size_t slot_index(const kiln_module* m, bool input, const char* name, const char* function) {
  require_arg(name, function, "name");
  const auto& slots = input ? m->inputs : m->outputs;
  auto index = find_slot(slots, name);
  require(index.has_value(), KILN_INVALID_ARGUMENT,
          std::string(function) + ": " + m->label + " has no " + (input ? "input" : "output") + " named '" +
              name + "'; its " + (input ? "inputs" : "outputs") + ": " + name_list(slots));
  return *index;
}

void check_index(const kiln_module* m, bool input, size_t index, const char* function) {
  size_t count = input ? m->inputs.size() : m->outputs.size();
  require(index < count, KILN_INVALID_ARGUMENT,
          std::string(function) + ": " + (input ? "input" : "output") + " index " + std::to_string(index) +
              " is out of range: " + m->label + " has " + std::to_string(count) + " " +
              (input ? "inputs" : "outputs"));
}

void check_buffer(const kiln_module* m, const TensorSlot& s, bool input, const void* data, size_t byte_size,
                  int dtype, const char* function) {
  std::string what = std::string(function) + ": " + (input ? "input " : "output ") + slot_label(s);
  require(data != nullptr, KILN_INVALID_ARGUMENT, what + ": the buffer is NULL");
  require(valid_dtype(dtype), KILN_BAD_BUFFER,
          what + ": dtype " + std::to_string(dtype) + " is not a kiln_dtype; the " +
              (input ? "input" : "output") + " is " + type_label(s));
  require(static_cast<DType>(dtype) == s.desc.dtype, KILN_BAD_BUFFER,
          what + " is " + type_label(s) + ", but the buffer is " +
              std::string(kiln::dtype_name(static_cast<DType>(dtype))));
  require(byte_size == s.byte_size, KILN_BAD_BUFFER,
          what + " is " + type_label(s) + ", but the buffer has " + std::to_string(byte_size) + " bytes");
}

kiln_status* bind(kiln_run* run, bool input, const char* name, const size_t* index_or_null, const void* data,
                  size_t byte_size, kiln_dtype dtype, const char* function) {
  return guarded(KILN_INVALID_ARGUMENT, [&] {
    require_arg(run, function, "run");
    const kiln_module* m = run->module;
    size_t index;
    if (index_or_null) {
      index = *index_or_null;
      check_index(m, input, index, function);
    } else {
      index = slot_index(m, input, name, function);
    }
    const auto& slots = input ? m->inputs : m->outputs;
    check_buffer(m, slots[index], input, data, byte_size, static_cast<int>(dtype), function);
    if (input)
      run->inputs[index] = data;
    else
      run->outputs[index] = const_cast<void*>(data);
  });
}

// The caller's input as a tensor: wrapped when aligned for its elements
// (the kernels' loads assume that), copied otherwise.
Tensor input_tensor(const TensorSlot& s, const void* data) {
  size_t align = static_cast<size_t>(kiln::dtype_bytes(s.desc.dtype));
  if (reinterpret_cast<uintptr_t>(data) % align == 0)
    return Tensor::wrap(const_cast<void*>(data), s.desc.shape, s.desc.dtype);
  Tensor t = Tensor::empty(s.desc.shape, s.desc.dtype);
  std::memcpy(t.raw(), data, s.byte_size);
  return t;
}

}  // namespace

extern "C" {

kiln_status_code kiln_status_get_code(const kiln_status* status) { return status ? status->code : KILN_OK; }
const char* kiln_status_message(const kiln_status* status) { return status ? status->message.c_str() : ""; }
void kiln_status_free(kiln_status* status) { delete status; }

int kiln_api_version(void) { return KILN_API_VERSION; }
const char* kiln_version(void) { return kiln::kKilnVersion; }

const char* kiln_dtype_name(int dtype) {
  if (!valid_dtype(dtype)) return "unknown";
  return kiln::dtype_name(static_cast<DType>(dtype)).data();
}

size_t kiln_dtype_size(int dtype) {
  return valid_dtype(dtype) ? static_cast<size_t>(kiln::dtype_bytes(static_cast<DType>(dtype))) : 0;
}

kiln_status* kiln_load_backend_plugin(const char* path) {
  return guarded(KILN_BAD_PLUGIN, [&] {
    require_arg(path, "kiln_load_backend_plugin", "path");
    kiln::load_backend_plugin(path);
  });
}

kiln_status* kiln_module_load_file(const char* path, kiln_module** module) {
  if (module) *module = nullptr;
  return guarded(KILN_BAD_MODEL, [&] {
    require_arg(module, "kiln_module_load_file", "module");
    require_arg(path, "kiln_module_load_file", "path");
    kiln::FileBytes file = kiln::map_file(path, ".kmod module");
    *module = make_module(kiln::decode_kmod(file.bytes, path, file.owner), path).release();
  });
}

kiln_status* kiln_module_load_memory(const void* data, size_t size, const char* label, kiln_module** module) {
  if (module) *module = nullptr;
  return guarded(KILN_BAD_MODEL, [&] {
    require_arg(module, "kiln_module_load_memory", "module");
    require_arg(data, "kiln_module_load_memory", "data");
    std::string what = label ? label : "<memory>";
    *module =
        make_module(kiln::decode_kmod(std::string_view(static_cast<const char*>(data), size), what), what)
            .release();
  });
}

void kiln_module_free(kiln_module* module) { delete module; }

kiln_status* kiln_module_input_count(const kiln_module* module, size_t* count) {
  return guarded(KILN_INVALID_ARGUMENT, [&] {
    require_arg(module, "kiln_module_input_count", "module");
    require_arg(count, "kiln_module_input_count", "count");
    *count = module->inputs.size();
  });
}

kiln_status* kiln_module_output_count(const kiln_module* module, size_t* count) {
  return guarded(KILN_INVALID_ARGUMENT, [&] {
    require_arg(module, "kiln_module_output_count", "module");
    require_arg(count, "kiln_module_output_count", "count");
    *count = module->outputs.size();
  });
}

kiln_status* kiln_module_input_info(const kiln_module* module, size_t index, kiln_tensor_info* info) {
  return guarded(KILN_INVALID_ARGUMENT, [&] {
    require_arg(module, "kiln_module_input_info", "module");
    require_arg(info, "kiln_module_input_info", "info");
    check_index(module, true, index, "kiln_module_input_info");
    fill_info(module->inputs[index], info);
  });
}

kiln_status* kiln_module_output_info(const kiln_module* module, size_t index, kiln_tensor_info* info) {
  return guarded(KILN_INVALID_ARGUMENT, [&] {
    require_arg(module, "kiln_module_output_info", "module");
    require_arg(info, "kiln_module_output_info", "info");
    check_index(module, false, index, "kiln_module_output_info");
    fill_info(module->outputs[index], info);
  });
}

kiln_status* kiln_module_find_input(const kiln_module* module, const char* name, size_t* index) {
  return guarded(KILN_INVALID_ARGUMENT, [&] {
    require_arg(module, "kiln_module_find_input", "module");
    require_arg(index, "kiln_module_find_input", "index");
    *index = slot_index(module, true, name, "kiln_module_find_input");
  });
}

kiln_status* kiln_module_find_output(const kiln_module* module, const char* name, size_t* index) {
  return guarded(KILN_INVALID_ARGUMENT, [&] {
    require_arg(module, "kiln_module_find_output", "module");
    require_arg(index, "kiln_module_find_output", "index");
    *index = slot_index(module, false, name, "kiln_module_find_output");
  });
}

kiln_status* kiln_run_create(const kiln_module* module, kiln_run** run) {
  if (run) *run = nullptr;
  return guarded(KILN_INVALID_ARGUMENT, [&] {
    require_arg(module, "kiln_run_create", "module");
    require_arg(run, "kiln_run_create", "run");
    auto r = std::make_unique<kiln_run>();
    r->module = module;
    r->inputs.assign(module->inputs.size(), nullptr);
    r->outputs.assign(module->outputs.size(), nullptr);
    for (const auto& o : module->outputs) r->output_shapes.push_back(o.desc.shape);
    *run = r.release();
  });
}

void kiln_run_free(kiln_run* run) { delete run; }

kiln_status* kiln_run_bind_input(kiln_run* run, const char* name, const void* data, size_t byte_size,
                                 kiln_dtype dtype) {
  return bind(run, true, name, nullptr, data, byte_size, dtype, "kiln_run_bind_input");
}

kiln_status* kiln_run_bind_output(kiln_run* run, const char* name, void* data, size_t byte_size,
                                  kiln_dtype dtype) {
  return bind(run, false, name, nullptr, data, byte_size, dtype, "kiln_run_bind_output");
}

kiln_status* kiln_run_bind_input_at(kiln_run* run, size_t index, const void* data, size_t byte_size,
                                    kiln_dtype dtype) {
  return bind(run, true, nullptr, &index, data, byte_size, dtype, "kiln_run_bind_input_at");
}

kiln_status* kiln_run_bind_output_at(kiln_run* run, size_t index, void* data, size_t byte_size,
                                     kiln_dtype dtype) {
  return bind(run, false, nullptr, &index, data, byte_size, dtype, "kiln_run_bind_output_at");
}

kiln_status* kiln_run_invoke(kiln_run* run) {
  return guarded(KILN_RUN_FAILED, [&] {
    require_arg(run, "kiln_run_invoke", "run");
    const kiln_module* m = run->module;
    std::string missing;
    for (size_t i = 0; i < m->inputs.size(); ++i)
      if (!run->inputs[i]) missing += (missing.empty() ? "" : ", ") + slot_label(m->inputs[i]);
    require(missing.empty(), KILN_NOT_BOUND,
            "kiln_run_invoke: " + m->label + ": no buffer bound to input " + missing +
                "; bind one with kiln_run_bind_input");
    std::vector<Tensor> args;
    args.reserve(m->inputs.size());
    for (size_t i = 0; i < m->inputs.size(); ++i) args.push_back(input_tensor(m->inputs[i], run->inputs[i]));
    std::vector<Tensor> results = m->vm->run(args);
    require(results.size() == m->outputs.size(), KILN_INTERNAL,
            "internal error: " + m->label + " produced " + std::to_string(results.size()) + " outputs, not " +
                std::to_string(m->outputs.size()));
    for (size_t i = 0; i < results.size(); ++i) {
      const Tensor& t = results[i];
      const TensorSlot& slot = m->outputs[i];
      // A bounded dynamic output fills the first bytes of its buffer (sized
      // for the bound); kiln_run_output_shape says how many rows it has.
      bool fits = slot.desc.bounded_outer ? t.nbytes() <= slot.byte_size : t.nbytes() == slot.byte_size;
      require(fits && t.dtype() == slot.desc.dtype, KILN_INTERNAL,
              "internal error: output " + slot_label(slot) + " is " + kiln::shape_str(t.shape()) + " " +
                  std::string(kiln::dtype_name(t.dtype())) + ", not " + type_label(slot));
      run->output_shapes[i] = t.shape();
      if (run->outputs[i] && t.nbytes()) std::memcpy(run->outputs[i], t.raw(), t.nbytes());
    }
  });
}

kiln_status* kiln_run_output_shape(const kiln_run* run, size_t index, size_t* ndim, const int64_t** shape) {
  return guarded(KILN_INVALID_ARGUMENT, [&] {
    require_arg(run, "kiln_run_output_shape", "run");
    require_arg(ndim, "kiln_run_output_shape", "ndim");
    require_arg(shape, "kiln_run_output_shape", "shape");
    check_index(run->module, false, index, "kiln_run_output_shape");
    *ndim = run->output_shapes[index].size();
    *shape = run->output_shapes[index].data();
  });
}

}  // extern "C"
