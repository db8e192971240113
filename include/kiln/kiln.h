/* kiln.h: the C API for embedding kiln's runtime.
 *
 * A program that runs compiled models links the runtime library alone
 * (CMake: kiln::runtime; pkg-config: kiln-runtime), never the compiler or
 * LLVM, and needs nothing but this header. A model is compiled ahead of time
 * into a .kmod file (`kiln compile model.onnx -o model.kmod`); the runtime
 * loads it, checks it (format version, checksum, CPU features of its compiled
 * code, imports, backend runtimes), and runs it on the caller's buffers.
 *
 * The objects:
 *
 *   kiln_module   a loaded .kmod: its inputs and outputs (names, dtypes,
 *                 shapes) and everything a run reads. Immutable once loaded,
 *                 so any number of threads may run it at once.
 *   kiln_run      the buffers of one run of a module: caller-owned memory
 *                 bound to its inputs and outputs. Used by one thread at a
 *                 time; make one per thread to run a module concurrently.
 *   kiln_status   an error: a code and a message. Every call that can fail
 *                 returns one; NULL means success. The caller frees it.
 *
 * Names. Inputs and outputs are named as the model names them (the ONNX
 * names, which the importer records in the module), or by kiln's own names
 * when the model has none (a .kir module). kiln_run_bind_input also accepts
 * kiln's parameter name, with or without its '%'.
 *
 * Shapes are fixed when the model is compiled (`kiln compile --input-shape`):
 * a bound buffer must hold exactly the tensor's bytes, densely, row-major, in
 * the tensor's dtype. Input buffers are read, never written, and must stay
 * alive until kiln_run_invoke returns; outputs are written when it returns.
 * Outputs left unbound are computed and discarded.
 *
 * No C++ exception and no abort crosses this API: an unreadable or corrupted
 * file, a buffer of the wrong size or dtype, an unknown name, a backend that
 * fails are all statuses with a message saying what to do.
 *
 * Example (error handling shortened to one macro):
 *
 *   #include <kiln/kiln.h>
 *
 *   #define CHECK(call)                                                     \
 *     do {                                                                  \
 *       kiln_status* s_ = (call);                                           \
 *       if (s_) {                                                           \
 *         fprintf(stderr, "error: %s\n", kiln_status_message(s_));          \
 *         kiln_status_free(s_);                                             \
 *         exit(1);                                                          \
 *       }                                                                   \
 *     } while (0)
 *
 *   kiln_module* model = NULL;
 *   CHECK(kiln_module_load_file("cls.kmod", &model));
 *   kiln_tensor_info in, out;
 *   CHECK(kiln_module_input_info(model, 0, &in));    // "x", float32, (1, 3, 48, 192)
 *   CHECK(kiln_module_output_info(model, 0, &out));
 *   float* image = calloc(in.byte_size, 1);          // ... fill the image
 *   float* probs = malloc(out.byte_size);
 *   kiln_run* run = NULL;
 *   CHECK(kiln_run_create(model, &run));
 *   CHECK(kiln_run_bind_input(run, in.name, image, in.byte_size, KILN_FLOAT32));
 *   CHECK(kiln_run_bind_output(run, out.name, probs, out.byte_size, KILN_FLOAT32));
 *   CHECK(kiln_run_invoke(run));                     // probs holds the output
 *   kiln_run_free(run);
 *   kiln_module_free(model);
 *
 * Threads: the runtime's parallel loops use KILN_NUM_THREADS worker threads
 * (default: the machine's cores), shared by every run in the process.
 */
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API. A program built against version N runs with a
 * runtime whose kiln_api_version() is N (a new version only adds). */
#define KILN_API_VERSION 1

typedef struct kiln_status kiln_status;
typedef struct kiln_module kiln_module;
typedef struct kiln_run kiln_run;

typedef enum kiln_status_code {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1, /* a NULL pointer, an unknown name, an index out of range */
  KILN_BAD_MODEL = 2,        /* a file that is not a loadable .kmod (unreadable, corrupted, other version) */
  KILN_BAD_BUFFER = 3,       /* a buffer of the wrong size or dtype */
  KILN_NOT_BOUND = 4,        /* kiln_run_invoke with an input not bound */
  KILN_RUN_FAILED = 5,       /* the run itself failed (a kernel or backend error) */
  KILN_INTERNAL = 6,         /* a bug in kiln: please report it with the message */
  KILN_BAD_PLUGIN = 7        /* a backend plugin refused (kiln_load_backend_plugin) */
} kiln_status_code;

/* Element types (the names kiln prints, kiln_dtype_name). */
typedef enum kiln_dtype {
  KILN_FLOAT32 = 0,
  KILN_FLOAT16 = 1,
  KILN_INT8 = 2,
  KILN_UINT8 = 3,
  KILN_INT32 = 4,
  KILN_INT64 = 5,
  KILN_BOOL = 6, /* one byte per element, 0 or 1 */
  KILN_FLOAT64 = 7,
  KILN_INT16 = 8,
  KILN_UINT16 = 9,
  KILN_UINT32 = 10,
  KILN_UINT64 = 11,
  KILN_BFLOAT16 = 12, /* the top 16 bits of a float32 */
  /* Not a dtype: makes every int a value of the type, so a caller's bad
   * value reaches kiln's range check (an error status) and is not
   * undefined behaviour in C++. */
  KILN_DTYPE_INT_RANGE_ = 0x7fffffff
} kiln_dtype;

/* ---- statuses. NULL is success; these functions accept NULL. */
kiln_status_code kiln_status_get_code(const kiln_status* status);
/* The message, valid until the status is freed ("" for NULL). */
const char* kiln_status_message(const kiln_status* status);
void kiln_status_free(kiln_status* status);

/* ---- versions and names */
int kiln_api_version(void);             /* KILN_API_VERSION of the runtime linked in */
const char* kiln_version(void);         /* "0.1.0": the kiln release, recorded in each .kmod */
const char* kiln_dtype_name(int dtype); /* "float32", ...; "unknown" for a value out of range */
size_t kiln_dtype_size(int dtype);      /* bytes per element; 0 for a value out of range */

/* ---- backend plugins (kiln/backend_plugin.h) */

/* Loads a backend plugin and registers its runtime, so modules compiled for
 * its backend (`kiln compile --plugin FILE -b NAME`) load. Loading the same
 * file again does nothing. Refused with KILN_BAD_PLUGIN and a message naming
 * the file: no such file, no entry point, another ABI version, a backend name
 * already taken. */
kiln_status* kiln_load_backend_plugin(const char* path);

/* ---- modules */

/* Loads a .kmod file, mapped (the weights are used where they lie in the
 * page cache, not copied; the module holds the mapping). On success *module
 * is a new module (free it with kiln_module_free); on failure it is NULL. */
kiln_status* kiln_module_load_file(const char* path, kiln_module** module);
/* Loads a .kmod from memory (bytes are copied; the caller may free them when
 * this returns). `label` names the module in messages (NULL: "<memory>"). */
kiln_status* kiln_module_load_memory(const void* data, size_t size, const char* label, kiln_module** module);
/* Frees a module (NULL is fine). Every kiln_run of it must be freed first. */
void kiln_module_free(kiln_module* module);

/* What a module's input or output is. The pointers stay valid as long as the
 * module. */
typedef struct kiln_tensor_info {
  const char* name;      /* the model's name (ONNX), or kiln's when the model has none */
  const char* kiln_name; /* kiln's name of the value (a parameter name for inputs) */
  kiln_dtype dtype;
  size_t ndim;
  const int64_t* shape; /* ndim dimensions */
  size_t byte_size;     /* the bytes a bound buffer must have */
  /* 1: shape[0] is an upper bound (a bounded dynamic leading axis, e.g. the
   * boxes non-maximum suppression selects); the actual extent of a run is
   * kiln_run_output_shape's, and the output fills the first bytes of its
   * buffer (byte_size is for the bound). 0: the shape is exact. */
  int bounded_outer;
} kiln_tensor_info;

kiln_status* kiln_module_input_count(const kiln_module* module, size_t* count);
kiln_status* kiln_module_output_count(const kiln_module* module, size_t* count);
kiln_status* kiln_module_input_info(const kiln_module* module, size_t index, kiln_tensor_info* info);
kiln_status* kiln_module_output_info(const kiln_module* module, size_t index, kiln_tensor_info* info);
/* The index of an input or output by name (the model's name first, then
 * kiln's). An unknown name is KILN_INVALID_ARGUMENT listing the names. */
kiln_status* kiln_module_find_input(const kiln_module* module, const char* name, size_t* index);
kiln_status* kiln_module_find_output(const kiln_module* module, const char* name, size_t* index);

/* ---- runs */

/* A new set of bindings for `module`, nothing bound. */
kiln_status* kiln_run_create(const kiln_module* module, kiln_run** run);
/* Frees a run (NULL is fine); the bound buffers are the caller's. */
void kiln_run_free(kiln_run* run);

/* Binds caller-owned memory to an input or output, by name or by index.
 * `byte_size` and `dtype` must be the tensor's (kiln_tensor_info), or the
 * call fails with KILN_BAD_BUFFER and binds nothing. Binding again replaces
 * the previous buffer. */
kiln_status* kiln_run_bind_input(kiln_run* run, const char* name, const void* data, size_t byte_size,
                                 kiln_dtype dtype);
kiln_status* kiln_run_bind_output(kiln_run* run, const char* name, void* data, size_t byte_size,
                                  kiln_dtype dtype);
kiln_status* kiln_run_bind_input_at(kiln_run* run, size_t index, const void* data, size_t byte_size,
                                    kiln_dtype dtype);
kiln_status* kiln_run_bind_output_at(kiln_run* run, size_t index, void* data, size_t byte_size,
                                     kiln_dtype dtype);

/* Runs the module on the bound buffers and writes every bound output. Every
 * input must be bound (KILN_NOT_BOUND names the missing ones). May be called
 * again, with the same or new bindings; runs of one module on different
 * kiln_run objects may overlap in time from any threads. */
kiln_status* kiln_run_invoke(kiln_run* run);

/* The shape output `index` had in the last kiln_run_invoke of `run` (also
 * for an output left unbound): the module's shape for a static output; for
 * a bounded dynamic one (kiln_tensor_info.bounded_outer) its leading
 * dimension is the actual extent, <= the bound, and the buffer's first
 * (extent x the other dimensions) elements hold the values. Before any
 * invoke, the module's shape. *shape stays valid until the next invoke or
 * kiln_run_free. */
kiln_status* kiln_run_output_shape(const kiln_run* run, size_t index, size_t* ndim, const int64_t** shape);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H_ */
