/* A complete backend plugin in C (include/kiln/backend_plugin.h): backend
 * `plugin_relu` claims nn.relu on float32 tensors, its codegen writes its own
 * artifact format (a line of text naming the function and the element count
 * of each input), and its runtime computes relu. It links nothing of kiln's.
 *
 * Built several ways for the loader's error tests:
 *   -DKILN_TEST_PLUGIN_ABI=99          a description of another ABI version
 *   -DKILN_TEST_PLUGIN_NO_ENTRY        no kiln_backend_plugin_v1 symbol
 *   -DKILN_TEST_PLUGIN_NAME=example_npu  a name a built-in backend has
 *   -DKILN_TEST_PLUGIN_SIZE=N          a struct_size of N (16: too small;
 *                                      KILN_BACKEND_PLUGIN_V1_MIN_SIZE: built
 *                                      before the options fields)
 */
#include <kiln/backend_plugin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KILN_TEST_PLUGIN_ABI
#define KILN_TEST_PLUGIN_ABI KILN_BACKEND_PLUGIN_ABI_VERSION
#endif
#ifndef KILN_TEST_PLUGIN_SIZE
#define KILN_TEST_PLUGIN_SIZE sizeof(kiln_backend_plugin)
#endif
#ifndef KILN_TEST_PLUGIN_NAME
#define KILN_TEST_PLUGIN_NAME plugin_relu
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

static const char kMagic[] = "plugin_relu artifact v1";

static int check_float32(const char* pattern, const char* match_json, const kiln_plugin_option* options,
                         size_t num_options, char* reason, size_t reason_size) {
  (void)pattern, (void)options, (void)num_options;
  if (strstr(match_json, "\"dtype\":\"float32\"")) return 0;
  snprintf(reason, reason_size, "plugin_relu runs float32 only");
  return 1;
}

static const kiln_plugin_pattern kPatterns[] = {
    {"relu", "nn.relu", 1, 10, "nn.relu on float32, computed by the plugin", check_float32},
};

static int codegen(const char* symbol, const char* graph_json, const kiln_plugin_option* options,
                   size_t num_options, kiln_plugin_bytes* artifact, char* error, size_t error_size) {
  (void)options, (void)num_options;
  if (!strstr(graph_json, "\"kiln.graph\"")) {
    snprintf(error, error_size, "%s: not a kiln.graph", symbol);
    return 1;
  }
  size_t n = strlen(kMagic) + strlen(symbol) + 2;
  artifact->data = malloc(n);
  if (!artifact->data) {
    snprintf(error, error_size, "out of memory");
    return 1;
  }
  snprintf(artifact->data, n, "%s %s", kMagic, symbol);
  artifact->size = n - 1;
  return 0;
}

static void free_bytes(kiln_plugin_bytes* bytes) {
  free(bytes->data);
  bytes->data = NULL;
  bytes->size = 0;
}

struct State {
  size_t num_functions;
};

static int runtime_create(const kiln_plugin_function* functions, size_t num_functions,
                          const kiln_plugin_tensor* constants, size_t num_constants,
                          const kiln_plugin_option* options, size_t num_options, void** state, char* error,
                          size_t error_size) {
  (void)constants, (void)num_constants, (void)options, (void)num_options;
  for (size_t i = 0; i < num_functions; ++i) {
    size_t m = strlen(kMagic);
    if (functions[i].artifact_size < m || memcmp(functions[i].artifact, kMagic, m) != 0) {
      snprintf(error, error_size, "%s: not a plugin_relu artifact", functions[i].symbol);
      return 1;
    }
  }
  struct State* s = malloc(sizeof *s);
  if (!s) return 1;
  s->num_functions = num_functions;
  *state = s;
  return 0;
}

/* Every region of this backend is a chain of relus: relu of input 0. */
static int runtime_run(void* state, const char* symbol, const kiln_plugin_tensor* inputs, size_t num_inputs,
                       kiln_plugin_tensor* outputs, size_t num_outputs, char* error, size_t error_size) {
  (void)state;
  if (num_inputs != 1 || num_outputs != 1 || inputs[0].dtype != KILN_FLOAT32 ||
      inputs[0].byte_size != outputs[0].byte_size) {
    snprintf(error, error_size, "%s: expects one float32 input and an output of its size", symbol);
    return 1;
  }
  const float* x = inputs[0].data;
  float* y = outputs[0].data;
  for (size_t i = 0; i < inputs[0].byte_size / sizeof(float); ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return 0;
}

static void runtime_destroy(void* state) { free(state); }

static const kiln_backend_plugin kPlugin = {
    KILN_TEST_PLUGIN_ABI,
    KILN_TEST_PLUGIN_SIZE,
    STR(KILN_TEST_PLUGIN_NAME),
    "1.0",
    "a relu device (tests/plugin/relu_plugin.c)",
    kPatterns,
    sizeof kPatterns / sizeof kPatterns[0],
    codegen,
    free_bytes,
    runtime_create,
    runtime_run,
    runtime_destroy,
    NULL, /* options: none declared, so kiln passes any to the callbacks */
    0,
};

#ifdef KILN_TEST_PLUGIN_NO_ENTRY
KILN_PLUGIN_EXPORT const kiln_backend_plugin* some_other_function(uint32_t kiln_abi_version) {
#else
KILN_PLUGIN_EXPORT const kiln_backend_plugin* kiln_backend_plugin_v1(uint32_t kiln_abi_version) {
#endif
  (void)kiln_abi_version;
  return &kPlugin;
}
