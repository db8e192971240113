/* The C API's error paths: every misuse is a status with a code and a message
 * that says what is wrong, never a crash.
 *
 *   kiln_c_api_errors MODEL.kmod SCRATCH_DIR
 *
 * MODEL.kmod has one float32 input and one output (examples/small_cnn). Each
 * check prints the message it got, so the test log shows them.
 */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

/* `s` must be an error of `code` whose message contains every one of `parts`
 * (NULL-terminated). */
static void expect_error(const char* what, kiln_status* s, kiln_status_code code, const char* const* parts) {
  if (!s) {
    printf("FAIL %s: succeeded, expected an error\n", what);
    ++failures;
    return;
  }
  const char* message = kiln_status_message(s);
  int ok = kiln_status_get_code(s) == code;
  for (const char* const* p = parts; *p; ++p)
    if (!strstr(message, *p)) ok = 0;
  printf("%s %s: [code %d] %s\n", ok ? "ok  " : "FAIL", what, (int)kiln_status_get_code(s), message);
  if (!ok) {
    printf("     expected code %d and the words:", (int)code);
    for (const char* const* p = parts; *p; ++p) printf(" '%s'", *p);
    printf("\n");
    ++failures;
  }
  kiln_status_free(s);
}

#define EXPECT_ERROR(call, code, ...)            \
  do {                                           \
    const char* parts_[] = {__VA_ARGS__, NULL};  \
    expect_error(#call, (call), (code), parts_); \
  } while (0)

#define MUST(call)                                             \
  do {                                                         \
    kiln_status* s_ = (call);                                  \
    if (s_) {                                                  \
      printf("FAIL %s: %s\n", #call, kiln_status_message(s_)); \
      exit(1);                                                 \
    }                                                          \
  } while (0)

static char* read_whole_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    printf("FAIL: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* bytes = malloc((size_t)n);
  if (!bytes || fread(bytes, 1, (size_t)n, f) != (size_t)n) exit(1);
  fclose(f);
  *size = (size_t)n;
  return bytes;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: kiln_c_api_errors MODEL.kmod SCRATCH_DIR\n");
    return 2;
  }
  const char* path = argv[1];
  char scratch[4096];
  kiln_module* m = NULL;

  /* ---- bad files */
  snprintf(scratch, sizeof scratch, "%s/does_not_exist.kmod", argv[2]);
  EXPECT_ERROR(kiln_module_load_file(scratch, &m), KILN_BAD_MODEL, "does_not_exist.kmod", "cannot open");
  if (m) printf("FAIL: a failed load left a module\n"), ++failures;

  snprintf(scratch, sizeof scratch, "%s/not_a_module.kmod", argv[2]);
  FILE* f = fopen(scratch, "wb");
  if (!f) return 1;
  fputs("this is not a compiled module, just some text\n", f);
  fclose(f);
  EXPECT_ERROR(kiln_module_load_file(scratch, &m), KILN_BAD_MODEL, "not_a_module.kmod", "not a .kmod file");

  size_t size = 0;
  char* bytes = read_whole_file(path, &size);
  EXPECT_ERROR(kiln_module_load_memory(bytes, size / 2, "half.kmod", &m), KILN_BAD_MODEL, "half.kmod",
               "truncated");
  bytes[size / 2] ^= 0x5a; /* one flipped byte */
  EXPECT_ERROR(kiln_module_load_memory(bytes, size, NULL, &m), KILN_BAD_MODEL, "<memory>", "checksum");
  bytes[size / 2] ^= 0x5a;
  EXPECT_ERROR(kiln_module_load_memory(NULL, 10, "x", &m), KILN_INVALID_ARGUMENT, "data is NULL");
  EXPECT_ERROR(kiln_module_load_file(path, NULL), KILN_INVALID_ARGUMENT, "module is NULL");

  snprintf(scratch, sizeof scratch, "%s/no_such_plugin.so", argv[2]);
  EXPECT_ERROR(kiln_load_backend_plugin(scratch), KILN_BAD_PLUGIN, "no_such_plugin.so", "no such file");

  /* ---- a good module from memory; the bytes may go once it is loaded */
  MUST(kiln_module_load_memory(bytes, size, "small_cnn.kmod", &m));
  memset(bytes, 0, size);
  free(bytes);
  kiln_tensor_info in, out;
  MUST(kiln_module_input_info(m, 0, &in));
  MUST(kiln_module_output_info(m, 0, &out));
  EXPECT_ERROR(kiln_module_input_info(m, 5, &in), KILN_INVALID_ARGUMENT, "input index 5 is out of range",
               "has 1 inputs");
  size_t index = 0;
  EXPECT_ERROR(kiln_module_find_input(m, "imgae", &index), KILN_INVALID_ARGUMENT, "no input named 'imgae'",
               in.name);
  EXPECT_ERROR(kiln_module_find_output(m, "nope", &index), KILN_INVALID_ARGUMENT, "no output named 'nope'",
               out.name);

  /* ---- bindings */
  kiln_run* run = NULL;
  MUST(kiln_run_create(m, &run));
  float* image = calloc(in.byte_size + 64, 1);
  float* probs = calloc(out.byte_size + 64, 1);
  int32_t* ints = calloc(in.byte_size, 1);
  char expected_bytes[64];
  snprintf(expected_bytes, sizeof expected_bytes, "%zu bytes", in.byte_size);
  EXPECT_ERROR(kiln_run_bind_input(run, in.name, image, in.byte_size - 4, KILN_FLOAT32), KILN_BAD_BUFFER,
               in.name, expected_bytes, "the buffer has");
  EXPECT_ERROR(kiln_run_bind_input(run, in.name, ints, in.byte_size, KILN_INT32), KILN_BAD_BUFFER, in.name,
               "float32", "the buffer is int32");
  EXPECT_ERROR(kiln_run_bind_input(run, in.name, image, in.byte_size, (kiln_dtype)42), KILN_BAD_BUFFER,
               "dtype 42 is not a kiln_dtype");
  EXPECT_ERROR(kiln_run_bind_input(run, "imgae", image, in.byte_size, KILN_FLOAT32), KILN_INVALID_ARGUMENT,
               "no input named 'imgae'", in.name);
  EXPECT_ERROR(kiln_run_bind_input(run, in.name, NULL, in.byte_size, KILN_FLOAT32), KILN_INVALID_ARGUMENT,
               "buffer is NULL");
  EXPECT_ERROR(kiln_run_bind_output_at(run, 3, probs, out.byte_size, KILN_FLOAT32), KILN_INVALID_ARGUMENT,
               "output index 3 is out of range");
  EXPECT_ERROR(kiln_run_bind_output(run, out.name, probs, out.byte_size + 4, KILN_FLOAT32), KILN_BAD_BUFFER,
               out.name, "the buffer has");
  /* Nothing was bound by the failed calls. */
  EXPECT_ERROR(kiln_run_invoke(run), KILN_NOT_BOUND, "no buffer bound to input", in.name);
  EXPECT_ERROR(kiln_run_invoke(NULL), KILN_INVALID_ARGUMENT, "run is NULL");

  /* ---- and the run still works after all of that, on an unaligned input
   * buffer too (copied, not refused) */
  MUST(kiln_run_bind_input(run, in.name, image, in.byte_size, KILN_FLOAT32));
  MUST(kiln_run_bind_output(run, out.name, probs, out.byte_size, KILN_FLOAT32));
  MUST(kiln_run_invoke(run));
  float first = probs[0];
  float* unaligned = (float*)((char*)image + 1);
  memset(unaligned, 0, in.byte_size);
  MUST(kiln_run_bind_input(run, in.name, unaligned, in.byte_size, KILN_FLOAT32));
  MUST(kiln_run_invoke(run));
  if (probs[0] != first || !(first > 0.0f)) {
    printf("FAIL: the unaligned input gave %g, the aligned one %g\n", (double)probs[0], (double)first);
    ++failures;
  }
  /* Softmax outputs sum to one: the values are real. */
  double sum = 0;
  for (size_t i = 0; i < out.byte_size / 4; ++i) sum += probs[i];
  if (sum < 0.999 || sum > 1.001) {
    printf("FAIL: the outputs sum to %g, not 1\n", sum);
    ++failures;
  }
  kiln_run_free(run);
  kiln_module_free(m);
  free(image);
  free(probs);
  free(ints);

  /* ---- NULL is fine where the header says so */
  kiln_status_free(NULL);
  kiln_module_free(NULL);
  kiln_run_free(NULL);
  if (kiln_status_get_code(NULL) != KILN_OK || strcmp(kiln_status_message(NULL), "") != 0) ++failures;
  if (strcmp(kiln_dtype_name(KILN_INT64), "int64") != 0 || kiln_dtype_size(KILN_FLOAT16) != 2 ||
      strcmp(kiln_dtype_name(99), "unknown") != 0)
    ++failures;

  printf(failures ? "FAIL: %d checks failed\n" : "PASS\n", failures);
  return failures ? 1 : 0;
}
