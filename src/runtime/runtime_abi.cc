// The C functions of the runtime ABI (kiln/runtime/backend_api.h) and the
// table of exported symbols generated from the same list.
#include "runtime/runtime_abi.h"

#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kiln/runtime/backend_api.h"
#include "runtime/block_cache.h"
#include "runtime/vtcm_pool.h"

namespace kiln {

namespace {

thread_local std::string t_last_error;

// Workspace blocks handed out (with the size and alignment the block cache
// needs back), so a bad free is an error, not heap corruption.
struct WorkspaceBlock {
  uint64_t bytes;
  uint64_t alignment;
};
std::mutex g_workspace_mu;
std::unordered_map<void*, WorkspaceBlock>& workspace_blocks() {
  static std::unordered_map<void*, WorkspaceBlock> blocks;
  return blocks;
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

const std::vector<AbiSymbol>& runtime_abi_symbols() {
  static const std::vector<AbiSymbol> symbols = {
#define KILN_ABI_ENTRY(ret, name, params, doc) {#name, reinterpret_cast<void*>(&::name), doc},
      KILN_BACKEND_API(KILN_ABI_ENTRY)
#undef KILN_ABI_ENTRY
  };
  return symbols;
}

const AbiSymbol* find_runtime_symbol(std::string_view name) {
  for (const AbiSymbol& s : runtime_abi_symbols())
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace kiln

using kiln::current_vtcm_pool;

extern "C" {

void* HexagonBackendAllocateVTCM(uint32_t nbytes, uint32_t alignment) {
  kiln::VtcmAllocFailure failure;
  void* p = current_vtcm_pool().allocate(nbytes, alignment, &failure);
  if (!p) kiln::t_last_error = failure.message();
  return p;
}

int32_t HexagonBackendFreeVTCM(void* ptr) {
  if (current_vtcm_pool().free(ptr)) return 0;
  kiln::t_last_error =
      "HexagonBackendFreeVTCM: pointer was not allocated from the current VTCM pool "
      "(or was freed already)";
  return -1;
}

void* KilnBackendAllocWorkspace(uint64_t nbytes, uint32_t alignment) {
  if (!kiln::is_power_of_two(alignment)) {
    kiln::t_last_error =
        "KilnBackendAllocWorkspace: alignment " + std::to_string(alignment) + " is not a power of two";
    return nullptr;
  }
  uint64_t a = alignment < sizeof(void*) ? sizeof(void*) : alignment;
  uint64_t size = nbytes == 0 ? 1 : nbytes;
  void* p = nullptr;
  try {
    p = kiln::cached_alloc(size, a);
  } catch (const std::exception& e) {
    kiln::t_last_error = std::string("KilnBackendAllocWorkspace: ") + e.what();
    return nullptr;
  }
  if (!p) {
    kiln::t_last_error = "KilnBackendAllocWorkspace: out of memory for " + std::to_string(nbytes) + " bytes";
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(kiln::g_workspace_mu);
  kiln::workspace_blocks()[p] = {size, a};
  return p;
}

int32_t KilnBackendFreeWorkspace(void* ptr) {
  kiln::WorkspaceBlock block;
  {
    std::lock_guard<std::mutex> lock(kiln::g_workspace_mu);
    auto it = kiln::workspace_blocks().find(ptr);
    if (it == kiln::workspace_blocks().end()) {
      kiln::t_last_error = "KilnBackendFreeWorkspace: pointer was not allocated as workspace";
      return -1;
    }
    block = it->second;
    kiln::workspace_blocks().erase(it);
  }
  kiln::cached_free(ptr, block.bytes, block.alignment);
  return 0;
}

void KilnBackendSetLastError(const char* message) { kiln::t_last_error = message ? message : ""; }

const char* KilnBackendGetLastError(void) { return kiln::t_last_error.c_str(); }

int32_t KilnBackendPrependLastError(const char* context) {
  std::string c = context ? context : "";
  kiln::t_last_error = kiln::t_last_error.empty() ? c : c + ": " + kiln::t_last_error;
  return -1;
}

int32_t KilnBackendIndexError(const char* kernel, const char* buffer, int32_t dim, int64_t index,
                              int64_t extent) {
  kiln::t_last_error = std::string("kernel @") + (kernel ? kernel : "?") + ": index " +
                       std::to_string(index) + " of buffer %" + (buffer ? buffer : "?") + " (dimension " +
                       std::to_string(dim) + ") is outside [0, " + std::to_string(extent) + ")";
  return -1;
}

int32_t KilnBackendCheckFailed(const char* message) {
  kiln::t_last_error = message ? message : "a check failed";
  return -1;
}

int32_t KilnBackendGatherIndexError(const char* op, int64_t index, int64_t position, int32_t axis,
                                    int64_t size) {
  kiln::t_last_error = std::string(op ? op : "?") + ": index " + std::to_string(index) + " (at position " +
                       std::to_string(position) + " of indices) is out of range for axis " +
                       std::to_string(axis) + " of size " + std::to_string(size) + " (expected " +
                       std::to_string(-size) + ".." + std::to_string(size - 1) + ")";
  return -1;
}

int32_t KilnBackendIndexValueError(const char* text0, int64_t a, const char* text1, int64_t b,
                                   const char* text2) {
  kiln::t_last_error = std::string(text0 ? text0 : "") + std::to_string(a) + (text1 ? text1 : "") +
                       std::to_string(b) + (text2 ? text2 : "");
  return -1;
}

}  // extern "C"
