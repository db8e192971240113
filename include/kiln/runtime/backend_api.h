/* The runtime ABI: what kiln's runtime exports to generated code.
 *
 * Compiled prim functions call these C functions by name (for example the
 * scratchpad lowering emits HexagonBackendAllocateVTCM / HexagonBackendFreeVTCM
 * around every VTCM buffer). Every import of a compiled module must be one of
 * these symbols or come from a library the user names (`kiln build
 * --link-lib`); kiln checks that at build time and again at load time.
 *
 * KILN_BACKEND_API(X) is the one list: it declares the functions below, and
 * the runtime derives its table of exported symbols (src/runtime/runtime_abi.cc)
 * and the linker's list of known imports from it. Add a function here and
 * nowhere else.
 *
 * Errors: a function that fails returns NULL or a non-zero code and records a
 * message that KilnBackendGetLastError returns; generated code returns a
 * non-zero code from the kernel after calling KilnBackendSetLastError, and the
 * caller turns the message into a kiln::Error. Nothing here aborts.
 *
 * Plain C, no dependencies beyond <stdint.h>.
 */
#ifndef KILN_RUNTIME_BACKEND_API_H_
#define KILN_RUNTIME_BACKEND_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A task of a parallel loop: iterations [begin, end) of it, with the values
 * the loop body uses from outside packed in `env`. 0, or a failure code after
 * setting the last error. */
typedef int32_t (*KilnBackendParallelTask)(int64_t begin, int64_t end, void* env);

/* X(return type, name, parameter list, one-line description) */
#define KILN_BACKEND_API(X)                                                                                 \
  /* Scratchpad (VTCM): `nbytes` bytes aligned to `alignment` (a power of two) from the                     \
     pool; NULL and a last error (requested, free, largest free block) when it cannot. */                   \
  X(void*, HexagonBackendAllocateVTCM, (uint32_t nbytes, uint32_t alignment), "allocate scratchpad memory") \
  /* Returns a block to the pool: 0, or -1 and a last error for a pointer it did not give. */               \
  X(int32_t, HexagonBackendFreeVTCM, (void* ptr), "free scratchpad memory")                                 \
  /* Host workspace (main memory) for kernels that need temporaries. */                                     \
  X(void*, KilnBackendAllocWorkspace, (uint64_t nbytes, uint32_t alignment), "allocate workspace")          \
  X(int32_t, KilnBackendFreeWorkspace, (void* ptr), "free workspace")                                       \
  /* The calling thread's last error message (copied). */                                                   \
  X(void, KilnBackendSetLastError, (const char* message), "set the last error")                             \
  X(const char*, KilnBackendGetLastError, (void), "get the last error")                                     \
  /* The last error becomes "CONTEXT: previous error"; returns -1, the failure code. */                     \
  X(int32_t, KilnBackendPrependLastError, (const char* context), "add context to the last error")           \
  /* --check-bounds: the last error says that `index` of dimension `dim` of `buffer` in                     \
     kernel `kernel` is outside [0, extent); returns -1. */                                                 \
  X(int32_t, KilnBackendIndexError,                                                                         \
    (const char* kernel, const char* buffer, int32_t dim, int64_t index, int64_t extent),                   \
    "report an index outside its buffer")                                                                   \
  /* --check-bounds: the last error becomes `message`; returns -1. */                                       \
  X(int32_t, KilnBackendCheckFailed, (const char* message), "report a failed check")                        \
  /* A gather's index (take, gather_elements) outside [-size, size): the last error names                   \
     the op, the index, its position in the indices, the axis and its size; returns -1. */                  \
  X(int32_t, KilnBackendGatherIndexError,                                                                   \
    (const char* op, int64_t index, int64_t position, int32_t axis, int64_t size),                          \
    "report a gather index out of range")                                                                   \
  /* Another index read from data out of its range (a loss's class target, a region's batch                 \
     index): the last error becomes text0, a, text1, b, text2 (the numbers in decimal); returns -1. */      \
  X(int32_t, KilnBackendIndexValueError,                                                                    \
    (const char* text0, int64_t a, const char* text1, int64_t b, const char* text2),                        \
    "report an index read from data out of its range")                                                      \
  /* Runs task over [0, n) split into contiguous chunks, one per worker thread, and waits                   \
     for all of them: 0, or the failure code of the first failing chunk (its last error                     \
     becomes the caller's). Called from inside a task, it runs inline, serially. */                         \
  X(int32_t, KilnBackendParallelFor, (int64_t n, KilnBackendParallelTask task, void* env),                  \
    "run a parallel loop")

#define KILN_BACKEND_API_DECLARE(ret, name, params, doc) ret name params;
KILN_BACKEND_API(KILN_BACKEND_API_DECLARE)
#undef KILN_BACKEND_API_DECLARE

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_BACKEND_API_H_ */
