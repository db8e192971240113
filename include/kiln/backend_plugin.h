/* backend_plugin.h: a backend as a shared library, loaded by an installed kiln.
 *
 * A plugin is a shared object that exports one C function, the entry point
 * of the ABI version it was built for:
 *
 *   const kiln_backend_plugin* kiln_backend_plugin_v1(uint32_t kiln_abi_version);
 *
 * kiln passes the plugin ABI version it implements and the plugin returns
 * its description (static storage: kiln never frees it), whose first field
 * is the ABI version the plugin was built for. kiln refuses, with a message
 * naming the file, a library without the entry point, a description of
 * another ABI version or a smaller struct_size, a backend name that is not an
 * identifier or that is already registered (a built-in backend or another
 * plugin), and missing callbacks. Only C types cross this boundary, so the
 * plugin and kiln may be built by different compilers and C++ libraries; the
 * plugin needs this header (and kiln.h for kiln_dtype) and links nothing of
 * kiln's.
 *
 * Loading: `kiln --plugin path/libmy_npu.so COMMAND ...` (repeatable), or
 * KILN_PLUGIN_PATH=a.so:b.so. The backend is then one of kiln's backends:
 * `--backend my_npu` partitions for its patterns, its codegen turns each
 * offloaded function into an artifact, and its runtime runs the artifact in
 * `kiln run` (also of a .kmod compiled earlier: pass the same plugin).
 *
 * What a v1 plugin provides:
 *
 *   patterns   single-op patterns: the op (kiln's name, `kiln ops`), how many
 *              inputs it takes, a priority against other backends' patterns
 *              and an optional check of a match (a JSON description of the
 *              call: its inputs' and output's shapes and dtypes).
 *   codegen    one offloaded function in, one artifact (bytes) out. The
 *              function arrives as kiln.graph JSON (src/runtime/graph.h:
 *              versioned, every attribute); its constants are kept by kiln
 *              and given to the runtime by name.
 *   runtime    create (once per loaded module, with every artifact and the
 *              constants), run (one offloaded function on caller-owned
 *              tensors; may be called from several threads at once, so it
 *              keeps per-run state on the stack), destroy.
 *
 * Errors: a callback that fails returns non-zero and writes a message of at
 * most `error_size` bytes (NUL-terminated) into `error`; kiln reports it
 * naming the backend. Callbacks never throw or abort.
 *
 * A minimal plugin (tests/plugin/relu_plugin.c is complete):
 *
 *   static const kiln_plugin_pattern patterns[] = {{"relu", "nn.relu", 1, 10, "relu on my_npu", NULL}};
 *   static const kiln_backend_plugin plugin = {
 *       KILN_BACKEND_PLUGIN_ABI_VERSION, sizeof(kiln_backend_plugin), "my_npu", "1.0", "my NPU",
 *       patterns, 1, my_codegen, my_free, my_create, my_run, my_destroy,
 *       options, 1};   (options: {{"buffer", KILN_OPTION_INT, "4096", "elements", NULL}})
 *   KILN_PLUGIN_EXPORT const kiln_backend_plugin* kiln_backend_plugin_v1(uint32_t kiln_abi_version) {
 *     return &plugin;
 *   }
 */
#ifndef KILN_BACKEND_PLUGIN_H_
#define KILN_BACKEND_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_BACKEND_PLUGIN_ABI_VERSION 1
/* The symbol kiln looks up: "kiln_backend_plugin_v" followed by the version. */
#define KILN_BACKEND_PLUGIN_ENTRY_POINT "kiln_backend_plugin_v1"

#if defined(_WIN32)
#define KILN_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KILN_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* A tensor on caller-owned memory: dense, row-major. */
typedef struct kiln_plugin_tensor {
  const char* name; /* a constant's name; the graph's input or output name otherwise */
  void* data;
  kiln_dtype dtype;
  size_t ndim;
  const int64_t* shape;
  size_t byte_size;
} kiln_plugin_tensor;

/* A key/value codegen option (`kiln --option my_npu.key=value`). */
typedef struct kiln_plugin_option {
  const char* key;
  const char* value;
} kiln_plugin_option;

/* Bytes the plugin allocated; kiln hands them back to free_bytes. */
typedef struct kiln_plugin_bytes {
  char* data;
  size_t size;
} kiln_plugin_bytes;

/* An offloaded function as the runtime gets it: its global symbol and the
 * artifact codegen made for it. */
typedef struct kiln_plugin_function {
  const char* symbol;
  const char* artifact;
  size_t artifact_size;
} kiln_plugin_function;

/* Accepts a match (return 0) or rejects it (non-zero, with a reason for
 * `kiln partition --explain` in `reason`). `match_json`:
 *   {"op": "nn.relu", "inputs": [{"shape": [1, 8], "dtype": "float32"}],
 *    "output": {"shape": [1, 8], "dtype": "float32"}} */
typedef int (*kiln_plugin_check_fn)(const char* pattern, const char* match_json,
                                    const kiln_plugin_option* options, size_t num_options, char* reason,
                                    size_t reason_size);

typedef struct kiln_plugin_pattern {
  const char* name; /* registered as "<backend>.<name>": letters, digits, '_' */
  const char* op;   /* the op claimed, e.g. "nn.relu" */
  uint32_t num_inputs;
  int32_t priority; /* higher claims first (the example NPU uses 5 to 20) */
  const char* description;
  kiln_plugin_check_fn check; /* NULL: accept every match */
} kiln_plugin_pattern;

/* How kiln checks an option's value before partitioning. */
typedef enum kiln_plugin_option_type {
  KILN_OPTION_STRING = 0, /* any text */
  KILN_OPTION_INT = 1,    /* a decimal integer */
  KILN_OPTION_SIZE = 2,   /* a positive byte count: 4096, 64K, 1M */
  KILN_OPTION_CHOICE = 3, /* one of `choices` */
  KILN_OPTION_FILE = 4    /* a path */
} kiln_plugin_option_type;

/* An option the backend takes (`kiln --option my_npu.NAME=VALUE`). */
typedef struct kiln_plugin_option_decl {
  const char* name;
  uint32_t type;             /* a kiln_plugin_option_type */
  const char* default_value; /* NULL or "": none */
  const char* description;
  const char* choices; /* KILN_OPTION_CHOICE: "fast|exact" */
} kiln_plugin_option_decl;

typedef struct kiln_backend_plugin {
  uint32_t abi_version; /* KILN_BACKEND_PLUGIN_ABI_VERSION the plugin was built with; always first */
  uint32_t struct_size; /* sizeof(kiln_backend_plugin) the plugin was built with; at least
                           KILN_BACKEND_PLUGIN_V1_MIN_SIZE */
  const char* name;     /* the backend's name (an identifier): `--backend NAME` */
  const char* version;  /* the plugin's own version, for messages and listings */
  const char* description;

  const kiln_plugin_pattern* patterns;
  size_t num_patterns;

  /* One offloaded function (kiln.graph JSON) to an artifact. */
  int (*codegen)(const char* symbol, const char* graph_json, const kiln_plugin_option* options,
                 size_t num_options, kiln_plugin_bytes* artifact, char* error, size_t error_size);
  void (*free_bytes)(kiln_plugin_bytes* bytes);

  /* The runtime: one state per loaded module. */
  int (*runtime_create)(const kiln_plugin_function* functions, size_t num_functions,
                        const kiln_plugin_tensor* constants, size_t num_constants,
                        const kiln_plugin_option* options, size_t num_options, void** state, char* error,
                        size_t error_size);
  /* Inputs are read; outputs are allocated by kiln and must be fully written. */
  int (*runtime_run)(void* state, const char* symbol, const kiln_plugin_tensor* inputs, size_t num_inputs,
                     kiln_plugin_tensor* outputs, size_t num_outputs, char* error, size_t error_size);
  void (*runtime_destroy)(void* state);

  /* Added within ABI 1 (kiln reads them only when struct_size covers them):
   * the options the backend declares. kiln refuses an option not declared or
   * of the wrong type, naming what the backend takes, before partitioning.
   * NULL: the options go to the callbacks unchecked. */
  const kiln_plugin_option_decl* options;
  size_t num_options;
} kiln_backend_plugin;

/* The size of an ABI 1 description without the fields added since. */
#define KILN_BACKEND_PLUGIN_V1_MIN_SIZE offsetof(kiln_backend_plugin, options)

typedef const kiln_backend_plugin* (*kiln_backend_plugin_entry_fn)(uint32_t kiln_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* KILN_BACKEND_PLUGIN_H_ */
