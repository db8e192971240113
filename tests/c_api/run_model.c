/* Runs a .kmod through the C API (kiln/kiln.h) alone and checks its outputs.
 *
 *   kiln_c_api_run MODEL.kmod [--memory] [--plugin FILE.so] [--input NAME=FILE.npy ...]
 *                  [--write-inputs DIR] [--expect DIR] [--threads N] [--iterations K]
 *
 * Inputs not given by --input are a ramp ((i % 251) / 50 - 2.5 for floats,
 * i % 7 - 3 for integers); --write-inputs saves every input as
 * DIR/input_<i>.npy, for `kiln run --input` to read the same values.
 * --memory loads the module from bytes instead of the file; --plugin loads
 * a backend plugin first (kiln_load_backend_plugin).
 * --expect compares output i bit for bit with DIR/output_<i>.npy (what
 * `kiln run --out DIR` writes). --threads N runs the module from N threads at
 * once, each with its own input and output buffers (thread t's float inputs
 * are the inputs plus t / 64), K runs each, and every output must be bitwise
 * identical to a single-threaded run on the same inputs.
 *
 * Written in C and linked with kiln's runtime library only: the embedding
 * case, with no compiler and no LLVM in the program.
 */
#include <kiln/kiln.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TENSORS 64
#define MAX_THREADS 16

static void die_status(const char* what, kiln_status* s) {
  fprintf(stderr, "FAIL: %s: %s\n", what, kiln_status_message(s));
  kiln_status_free(s);
  exit(1);
}

#define CHECK(call)                \
  do {                             \
    kiln_status* s_ = (call);      \
    if (s_) die_status(#call, s_); \
  } while (0)

static void fail(const char* message, const char* detail) {
  fprintf(stderr, "FAIL: %s%s%s\n", message, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) fail("out of memory", NULL);
  return p;
}

static char* read_whole_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) fail("cannot open", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* bytes = xmalloc((size_t)n);
  if (fread(bytes, 1, (size_t)n, f) != (size_t)n) fail("cannot read", path);
  fclose(f);
  *size = (size_t)n;
  return bytes;
}

/* ---- .npy (version 1-3, little-endian, C order): only what the test needs */

static const char* npy_descr(kiln_dtype t) {
  switch (t) {
    case KILN_FLOAT32:
      return "<f4";
    case KILN_FLOAT16:
      return "<f2";
    case KILN_INT8:
      return "|i1";
    case KILN_UINT8:
      return "|u1";
    case KILN_INT32:
      return "<i4";
    case KILN_INT64:
      return "<i8";
    case KILN_BOOL:
      return "|b1";
    case KILN_FLOAT64:
      return "<f8";
    case KILN_INT16:
      return "<i2";
    case KILN_UINT16:
      return "<u2";
    case KILN_UINT32:
      return "<u4";
    case KILN_UINT64:
      return "<u8";
    case KILN_BFLOAT16: /* no numpy type: kiln stores the raw bits */
      return "<u2";
    case KILN_DTYPE_INT_RANGE_:
      break;
  }
  return "?";
}

/* The data of FILE.npy, checked against `info` (dtype and shape). */
static void* read_npy(const char* path, const kiln_tensor_info* info) {
  size_t size = 0;
  char* bytes = read_whole_file(path, &size);
  if (size < 10 || memcmp(bytes, "\x93NUMPY", 6) != 0) fail("not a .npy file", path);
  size_t header_len, start;
  if (bytes[6] == 1) {
    header_len = (unsigned char)bytes[8] | ((size_t)(unsigned char)bytes[9] << 8);
    start = 10;
  } else {
    if (size < 12) fail("truncated .npy file", path);
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= (size_t)(unsigned char)bytes[8 + i] << (8 * i);
    start = 12;
  }
  if (start + header_len > size) fail("truncated .npy header", path);
  char* header = xmalloc(header_len + 1);
  memcpy(header, bytes + start, header_len);
  header[header_len] = '\0';
  if (!strstr(header, npy_descr(info->dtype))) fail("the .npy dtype is not the input's", path);
  if (strstr(header, "'fortran_order': True")) fail("a Fortran-order .npy is not supported", path);
  const char* shape = strstr(header, "'shape': (");
  if (!shape) fail("no shape in the .npy header", path);
  shape += strlen("'shape': (");
  for (size_t d = 0; d < info->ndim; ++d) {
    char* end = NULL;
    long long dim = strtoll(shape, &end, 10);
    if (end == shape || dim != info->shape[d]) fail("the .npy shape is not the tensor's", path);
    shape = end;
    while (*shape == ',' || *shape == ' ') ++shape;
  }
  if (*shape != ')') fail("the .npy has more dimensions than the tensor", path);
  free(header);
  size_t data_at = start + header_len;
  if (size - data_at != info->byte_size) fail("the .npy data is not the tensor's size", path);
  void* data = xmalloc(info->byte_size);
  memcpy(data, bytes + data_at, info->byte_size);
  free(bytes);
  return data;
}

static void write_npy(const char* path, const kiln_tensor_info* info, const void* data) {
  char header[512];
  int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                   npy_descr(info->dtype));
  for (size_t d = 0; d < info->ndim; ++d)
    n += snprintf(header + n, sizeof header - (size_t)n, "%lld%s", (long long)info->shape[d],
                  info->ndim == 1 ? "," : (d + 1 < info->ndim ? ", " : ""));
  n += snprintf(header + n, sizeof header - (size_t)n, "), }");
  while ((10 + n + 1) % 64) header[n++] = ' ';
  header[n++] = '\n';
  FILE* f = fopen(path, "wb");
  if (!f) fail("cannot write", path);
  unsigned char prefix[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
  fwrite(prefix, 1, sizeof prefix, f);
  fwrite(header, 1, (size_t)n, f);
  fwrite(data, 1, info->byte_size, f);
  if (fclose(f) != 0) fail("cannot write", path);
}

/* ---- inputs */

static void fill_ramp(const kiln_tensor_info* info, void* data) {
  size_t n = info->byte_size / kiln_dtype_size(info->dtype);
  for (size_t i = 0; i < n; ++i) {
    switch (info->dtype) {
      case KILN_FLOAT32:
        ((float*)data)[i] = (float)(i % 251) / 50.0f - 2.5f;
        break;
      case KILN_INT8:
        ((int8_t*)data)[i] = (int8_t)(i % 7) - 3;
        break;
      case KILN_UINT8:
        ((uint8_t*)data)[i] = (uint8_t)(i % 7);
        break;
      case KILN_INT32:
        ((int32_t*)data)[i] = (int32_t)(i % 7) - 3;
        break;
      case KILN_INT64:
        ((int64_t*)data)[i] = (int64_t)(i % 7) - 3;
        break;
      case KILN_BOOL:
        ((uint8_t*)data)[i] = (uint8_t)(i % 2);
        break;
      case KILN_FLOAT16:
        ((uint16_t*)data)[i] = (uint16_t)(0x3c00 + (i % 7));
        break; /* 1.0 and up */
      case KILN_FLOAT64:
        ((double*)data)[i] = (double)(i % 251) / 50.0 - 2.5;
        break;
      case KILN_INT16:
        ((int16_t*)data)[i] = (int16_t)(i % 7) - 3;
        break;
      case KILN_UINT16:
        ((uint16_t*)data)[i] = (uint16_t)(i % 7);
        break;
      case KILN_UINT32:
        ((uint32_t*)data)[i] = (uint32_t)(i % 7);
        break;
      case KILN_UINT64:
        ((uint64_t*)data)[i] = (uint64_t)(i % 7);
        break;
      case KILN_BFLOAT16:
        ((uint16_t*)data)[i] = (uint16_t)(0x3f80 + (i % 7));
        break; /* 1.0 and up */
      case KILN_DTYPE_INT_RANGE_:
        break;
    }
  }
}

struct Model {
  kiln_module* module;
  size_t num_inputs, num_outputs;
  kiln_tensor_info inputs[MAX_TENSORS], outputs[MAX_TENSORS];
};

/* Runs once on `inputs`, into freshly allocated outputs. */
static void run_once(const struct Model* m, kiln_run* run, void* const* inputs, void** outputs) {
  for (size_t i = 0; i < m->num_inputs; ++i)
    CHECK(kiln_run_bind_input(run, m->inputs[i].name, inputs[i], m->inputs[i].byte_size, m->inputs[i].dtype));
  for (size_t i = 0; i < m->num_outputs; ++i)
    CHECK(kiln_run_bind_output_at(run, i, outputs[i], m->outputs[i].byte_size, m->outputs[i].dtype));
  CHECK(kiln_run_invoke(run));
}

struct ThreadJob {
  const struct Model* model;
  void* inputs[MAX_TENSORS];
  void* expected[MAX_TENSORS];
  int iterations;
  int mismatches;
  char error[512];
};

static void* thread_main(void* arg) {
  struct ThreadJob* job = arg;
  const struct Model* m = job->model;
  kiln_run* run = NULL;
  kiln_status* s = kiln_run_create(m->module, &run);
  void* outputs[MAX_TENSORS];
  for (size_t i = 0; i < m->num_outputs; ++i) outputs[i] = xmalloc(m->outputs[i].byte_size);
  for (size_t i = 0; !s && i < m->num_inputs; ++i)
    s = kiln_run_bind_input_at(run, i, job->inputs[i], m->inputs[i].byte_size, m->inputs[i].dtype);
  for (size_t i = 0; !s && i < m->num_outputs; ++i)
    s = kiln_run_bind_output_at(run, i, outputs[i], m->outputs[i].byte_size, m->outputs[i].dtype);
  for (int it = 0; !s && it < job->iterations; ++it) {
    for (size_t i = 0; i < m->num_outputs; ++i) memset(outputs[i], 0xab, m->outputs[i].byte_size);
    s = kiln_run_invoke(run);
    for (size_t i = 0; !s && i < m->num_outputs; ++i)
      if (memcmp(outputs[i], job->expected[i], m->outputs[i].byte_size) != 0) ++job->mismatches;
  }
  if (s) snprintf(job->error, sizeof job->error, "%s", kiln_status_message(s));
  kiln_status_free(s);
  for (size_t i = 0; i < m->num_outputs; ++i) free(outputs[i]);
  kiln_run_free(run);
  return NULL;
}

static void run_threads(const struct Model* m, void* const* inputs, int threads, int iterations) {
  static struct ThreadJob jobs[MAX_THREADS];
  pthread_t ids[MAX_THREADS];
  kiln_run* run = NULL;
  CHECK(kiln_run_create(m->module, &run));
  for (int t = 0; t < threads; ++t) {
    struct ThreadJob* job = &jobs[t];
    memset(job, 0, sizeof *job);
    job->model = m;
    job->iterations = iterations;
    for (size_t i = 0; i < m->num_inputs; ++i) {
      job->inputs[i] = xmalloc(m->inputs[i].byte_size);
      memcpy(job->inputs[i], inputs[i], m->inputs[i].byte_size);
      if (m->inputs[i].dtype == KILN_FLOAT32) {
        float* v = job->inputs[i];
        for (size_t k = 0; k < m->inputs[i].byte_size / 4; ++k) v[k] += (float)t / 64.0f;
      }
    }
    for (size_t i = 0; i < m->num_outputs; ++i) job->expected[i] = xmalloc(m->outputs[i].byte_size);
    run_once(m, run, job->inputs, job->expected); /* the single-threaded reference */
  }
  kiln_run_free(run);
  for (int t = 0; t < threads; ++t)
    if (pthread_create(&ids[t], NULL, thread_main, &jobs[t]) != 0) fail("pthread_create failed", NULL);
  int total = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    if (jobs[t].error[0]) fail("a concurrent run failed", jobs[t].error);
    total += jobs[t].mismatches;
  }
  if (total) {
    fprintf(stderr, "FAIL: %d of %d concurrent runs differ from the single-threaded run\n", total,
            threads * iterations);
    exit(1);
  }
  printf("%d threads x %d runs: every output bitwise identical to the single-threaded run\n", threads,
         iterations);
  for (int t = 0; t < threads; ++t) {
    for (size_t i = 0; i < m->num_inputs; ++i) free(jobs[t].inputs[i]);
    for (size_t i = 0; i < m->num_outputs; ++i) free(jobs[t].expected[i]);
  }
}

static void print_info(const char* kind, size_t index, const kiln_tensor_info* info) {
  printf("%s %zu: %s (kiln %%%s) %s (", kind, index, info->name, info->kiln_name,
         kiln_dtype_name(info->dtype));
  for (size_t d = 0; d < info->ndim; ++d) printf("%s%lld", d ? ", " : "", (long long)info->shape[d]);
  printf("), %zu bytes\n", info->byte_size);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: kiln_c_api_run MODEL.kmod [--memory] [--input NAME=FILE.npy ...] [--write-inputs DIR]\n"
            "                      [--expect DIR] [--threads N] [--iterations K]\n");
    return 2;
  }
  const char* path = argv[1];
  const char* input_args[MAX_TENSORS];
  int num_input_args = 0, threads = 0, iterations = 20, from_memory = 0;
  const char *write_dir = NULL, *expect_dir = NULL;
  for (int i = 2; i < argc; ++i) {
    int has_value = i + 1 < argc;
    if (!strcmp(argv[i], "--memory"))
      from_memory = 1;
    else if (!strcmp(argv[i], "--plugin") && has_value)
      CHECK(kiln_load_backend_plugin(argv[++i]));
    else if (!strcmp(argv[i], "--input") && has_value && num_input_args < MAX_TENSORS)
      input_args[num_input_args++] = argv[++i];
    else if (!strcmp(argv[i], "--write-inputs") && has_value)
      write_dir = argv[++i];
    else if (!strcmp(argv[i], "--expect") && has_value)
      expect_dir = argv[++i];
    else if (!strcmp(argv[i], "--threads") && has_value)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iterations") && has_value)
      iterations = atoi(argv[++i]);
    else
      fail("unknown or incomplete argument", argv[i]);
  }
  if (threads < 0 || threads > MAX_THREADS) fail("--threads must be 0 to 16", NULL);
  if (kiln_api_version() != KILN_API_VERSION) fail("the runtime's C API version differs from kiln.h's", NULL);

  struct Model m;
  memset(&m, 0, sizeof m);
  if (from_memory) {
    size_t size = 0;
    char* bytes = read_whole_file(path, &size);
    CHECK(kiln_module_load_memory(bytes, size, path, &m.module));
    free(bytes); /* the module keeps its own copy */
  } else {
    CHECK(kiln_module_load_file(path, &m.module));
  }
  CHECK(kiln_module_input_count(m.module, &m.num_inputs));
  CHECK(kiln_module_output_count(m.module, &m.num_outputs));
  if (m.num_inputs > MAX_TENSORS || m.num_outputs > MAX_TENSORS) fail("too many inputs or outputs", NULL);
  void* inputs[MAX_TENSORS] = {0};
  void* outputs[MAX_TENSORS] = {0};
  for (size_t i = 0; i < m.num_inputs; ++i) {
    CHECK(kiln_module_input_info(m.module, i, &m.inputs[i]));
    print_info("input", i, &m.inputs[i]);
  }
  for (size_t i = 0; i < m.num_outputs; ++i) {
    CHECK(kiln_module_output_info(m.module, i, &m.outputs[i]));
    print_info("output", i, &m.outputs[i]);
    outputs[i] = xmalloc(m.outputs[i].byte_size);
  }
  for (int a = 0; a < num_input_args; ++a) {
    const char* eq = strchr(input_args[a], '=');
    if (!eq) fail("--input wants NAME=FILE.npy", input_args[a]);
    char name[256];
    size_t len = (size_t)(eq - input_args[a]);
    if (len >= sizeof name) fail("input name too long", input_args[a]);
    memcpy(name, input_args[a], len);
    name[len] = '\0';
    size_t index = 0;
    CHECK(kiln_module_find_input(m.module, name, &index));
    inputs[index] = read_npy(eq + 1, &m.inputs[index]);
  }
  for (size_t i = 0; i < m.num_inputs; ++i) {
    if (!inputs[i]) {
      inputs[i] = xmalloc(m.inputs[i].byte_size);
      fill_ramp(&m.inputs[i], inputs[i]);
    }
    if (write_dir) {
      char file[4096];
      snprintf(file, sizeof file, "%s/input_%zu.npy", write_dir, i);
      write_npy(file, &m.inputs[i], inputs[i]);
    }
  }

  kiln_run* run = NULL;
  CHECK(kiln_run_create(m.module, &run));
  run_once(&m, run, inputs, outputs);
  kiln_run_free(run);
  for (size_t i = 0; i < m.num_outputs; ++i) {
    if (m.outputs[i].dtype == KILN_FLOAT32 && m.outputs[i].byte_size >= 4)
      printf("output %zu [0] = %.9g\n", i, (double)((const float*)outputs[i])[0]);
    if (!expect_dir) continue;
    char file[4096];
    snprintf(file, sizeof file, "%s/output_%zu.npy", expect_dir, i);
    void* expected = read_npy(file, &m.outputs[i]);
    if (memcmp(expected, outputs[i], m.outputs[i].byte_size) != 0) fail("output differs from", file);
    printf("output %zu (%s): bitwise identical to %s\n", i, m.outputs[i].name, file);
    free(expected);
  }
  if (threads > 0) run_threads(&m, inputs, threads, iterations);
  for (size_t i = 0; i < m.num_inputs; ++i) free(inputs[i]);
  for (size_t i = 0; i < m.num_outputs; ++i) free(outputs[i]);
  kiln_module_free(m.module);
  printf("PASS\n");
  return 0;
}
