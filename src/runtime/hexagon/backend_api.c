/* The runtime ABI (kiln/runtime/backend_api.h) on Hexagon.
 *
 * HexagonBackendAllocateVTCM / HexagonBackendFreeVTCM use the same pool code
 * as the host runtime (runtime/vtcm_pool_core.c): best fit, coalescing, the
 * same figures and the same failure message. Under QEMU the pool's memory is
 * ordinary pages of the target's VTCM size; on a device it would be the VTCM
 * region the process acquired. Workspace comes from a second pool of the same
 * kind over main memory. One thread: the last error is a plain buffer, and
 * a parallel loop runs its whole range as one task on it.
 */
#include "kiln/runtime/backend_api.h"

#include "runtime/hexagon/hexagon_runtime.h"
#include "runtime/hexagon/sys.h"
#include "runtime/vtcm_pool_core.h"

enum {
  kMaxBlocks = 1024,
  kWorkspaceBytes = 64 << 20,
  kMaxError = 1024,
};

static kiln_vtcm_pool g_vtcm;
static kiln_vtcm_block g_vtcm_blocks[2 * kMaxBlocks];
static int g_vtcm_ready;

static kiln_vtcm_pool g_workspace;
static kiln_vtcm_block g_workspace_blocks[2 * kMaxBlocks];
static int g_workspace_ready;

static char g_last_error[kMaxError];

int kiln_hexagon_init_vtcm(uint64_t capacity) {
  void* memory = kiln_sys_map((size_t)(capacity ? capacity : 1));
  if (!memory) return -1;
  kiln_vtcm_pool_init(&g_vtcm, memory, capacity, g_vtcm_blocks, kMaxBlocks);
  g_vtcm_ready = 1;
  return 0;
}

const kiln_vtcm_pool* kiln_hexagon_vtcm_pool(void) { return g_vtcm_ready ? &g_vtcm : 0; }

void* HexagonBackendAllocateVTCM(uint32_t nbytes, uint32_t alignment) {
  if (!g_vtcm_ready) {
    KilnBackendSetLastError("the VTCM pool is not set up (kiln_hexagon_init_vtcm was not called)");
    return 0;
  }
  kiln_vtcm_failure failure;
  void* p = kiln_vtcm_pool_allocate(&g_vtcm, nbytes, alignment, &failure);
  if (!p) kiln_vtcm_failure_message(&failure, g_last_error, sizeof g_last_error);
  return p;
}

int32_t HexagonBackendFreeVTCM(void* ptr) {
  if (g_vtcm_ready && kiln_vtcm_pool_free(&g_vtcm, ptr)) return 0;
  KilnBackendSetLastError(
      "HexagonBackendFreeVTCM: pointer was not allocated from the current VTCM pool (or was freed already)");
  return -1;
}

void* KilnBackendAllocWorkspace(uint64_t nbytes, uint32_t alignment) {
  if (!g_workspace_ready) {
    void* memory = kiln_sys_map(kWorkspaceBytes);
    if (!memory) {
      KilnBackendSetLastError("cannot map memory for the workspace pool");
      return 0;
    }
    kiln_vtcm_pool_init(&g_workspace, memory, kWorkspaceBytes, g_workspace_blocks, kMaxBlocks);
    g_workspace_ready = 1;
  }
  kiln_vtcm_failure failure;
  void* p = kiln_vtcm_pool_allocate(&g_workspace, nbytes, alignment, &failure);
  if (!p) {
    kiln_text t;
    kiln_text_init(&t, g_last_error, sizeof g_last_error);
    kiln_text_str(&t, "KilnBackendAllocWorkspace: out of memory for ");
    kiln_text_u64(&t, nbytes);
    kiln_text_str(&t, " bytes (workspace pool: ");
    kiln_text_u64(&t, failure.free_bytes);
    kiln_text_str(&t, " bytes free, largest free block ");
    kiln_text_u64(&t, failure.largest_free_block);
    kiln_text_str(&t, " bytes, capacity ");
    kiln_text_u64(&t, failure.capacity);
    kiln_text_str(&t, " bytes)");
  }
  return p;
}

int32_t KilnBackendFreeWorkspace(void* ptr) {
  if (g_workspace_ready && kiln_vtcm_pool_free(&g_workspace, ptr)) return 0;
  KilnBackendSetLastError("KilnBackendFreeWorkspace: pointer was not allocated as workspace");
  return -1;
}

void KilnBackendSetLastError(const char* message) {
  kiln_text t;
  kiln_text_init(&t, g_last_error, sizeof g_last_error);
  kiln_text_str(&t, message ? message : "");
}

const char* KilnBackendGetLastError(void) { return g_last_error; }

int32_t KilnBackendPrependLastError(const char* context) {
  char previous[kMaxError];
  kiln_text copy;
  kiln_text_init(&copy, previous, sizeof previous);
  kiln_text_str(&copy, g_last_error);
  kiln_text t;
  kiln_text_init(&t, g_last_error, sizeof g_last_error);
  kiln_text_str(&t, context ? context : "");
  if (previous[0]) {
    kiln_text_str(&t, ": ");
    kiln_text_str(&t, previous);
  }
  return -1;
}

int32_t KilnBackendIndexError(const char* kernel, const char* buffer, int32_t dim, int64_t index,
                              int64_t extent) {
  kiln_text t;
  kiln_text_init(&t, g_last_error, sizeof g_last_error);
  kiln_text_str(&t, "kernel @");
  kiln_text_str(&t, kernel ? kernel : "?");
  kiln_text_str(&t, ": index ");
  kiln_text_i64(&t, index);
  kiln_text_str(&t, " of buffer %");
  kiln_text_str(&t, buffer ? buffer : "?");
  kiln_text_str(&t, " (dimension ");
  kiln_text_i64(&t, dim);
  kiln_text_str(&t, ") is outside [0, ");
  kiln_text_i64(&t, extent);
  kiln_text_str(&t, ")");
  return -1;
}

int32_t KilnBackendIndexValueError(const char* text0, int64_t a, const char* text1, int64_t b,
                                   const char* text2) {
  kiln_text t;
  kiln_text_init(&t, g_last_error, sizeof g_last_error);
  kiln_text_str(&t, text0 ? text0 : "");
  kiln_text_i64(&t, a);
  kiln_text_str(&t, text1 ? text1 : "");
  kiln_text_i64(&t, b);
  kiln_text_str(&t, text2 ? text2 : "");
  return -1;
}

int32_t KilnBackendCheckFailed(const char* message) {
  KilnBackendSetLastError(message ? message : "a check failed");
  return -1;
}

int32_t KilnBackendGatherIndexError(const char* op, int64_t index, int64_t position, int32_t axis,
                                    int64_t size) {
  kiln_text t;
  kiln_text_init(&t, g_last_error, sizeof g_last_error);
  kiln_text_str(&t, op ? op : "?");
  kiln_text_str(&t, ": index ");
  kiln_text_i64(&t, index);
  kiln_text_str(&t, " (at position ");
  kiln_text_i64(&t, position);
  kiln_text_str(&t, " of indices) is out of range for axis ");
  kiln_text_i64(&t, axis);
  kiln_text_str(&t, " of size ");
  kiln_text_i64(&t, size);
  kiln_text_str(&t, " (expected ");
  kiln_text_i64(&t, -size);
  kiln_text_str(&t, "..");
  kiln_text_i64(&t, size - 1);
  kiln_text_str(&t, ")");
  return -1;
}

int32_t KilnBackendParallelFor(int64_t n, KilnBackendParallelTask task, void* env) {
  if (n <= 0) return 0;
  if (!task) {
    KilnBackendSetLastError("KilnBackendParallelFor: the task is NULL");
    return -1;
  }
  return task(0, n, env);
}
