/* Runs a .kmod with one input through kiln's C API, from raw bytes to raw
 * bytes:
 *
 *   kiln_consumer MODEL.kmod INPUT.raw OUTPUT.raw
 *
 * INPUT.raw holds the input tensor's bytes (densely, row-major); OUTPUT.raw
 * receives output 0's. Prints the module's interface and the first values.
 */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>

static int check(kiln_status* s, const char* what) {
  if (!s) return 0;
  fprintf(stderr, "error: %s: %s\n", what, kiln_status_message(s));
  kiln_status_free(s);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: kiln_consumer MODEL.kmod INPUT.raw OUTPUT.raw\n");
    return 2;
  }
  printf("kiln %s, C API %d\n", kiln_version(), kiln_api_version());
  kiln_module* model = NULL;
  if (check(kiln_module_load_file(argv[1], &model), "load")) return 1;
  kiln_tensor_info in, out;
  if (check(kiln_module_input_info(model, 0, &in), "input") ||
      check(kiln_module_output_info(model, 0, &out), "output"))
    return 1;
  printf("input %s: %s, %zu bytes; output %s: %s, %zu bytes\n", in.name, kiln_dtype_name(in.dtype),
         in.byte_size, out.name, kiln_dtype_name(out.dtype), out.byte_size);

  unsigned char* input = malloc(in.byte_size + 1);
  unsigned char* output = malloc(out.byte_size);
  FILE* f = fopen(argv[2], "rb");
  if (!input || !output || !f) return 1;
  size_t got = fread(input, 1, in.byte_size + 1, f);
  fclose(f);
  if (got != in.byte_size) {
    fprintf(stderr, "error: %s has %zu bytes, the input needs %zu\n", argv[2], got, in.byte_size);
    return 1;
  }
  kiln_run* run = NULL;
  if (check(kiln_run_create(model, &run), "run") ||
      check(kiln_run_bind_input(run, in.name, input, in.byte_size, in.dtype), "bind input") ||
      check(kiln_run_bind_output(run, out.name, output, out.byte_size, out.dtype), "bind output") ||
      check(kiln_run_invoke(run), "invoke"))
    return 1;
  if (out.dtype == KILN_FLOAT32) {
    const float* v = (const float*)output;
    printf("%s[0..3] = %.6g %.6g %.6g\n", out.name, v[0], v[1], v[2]);
  }
  f = fopen(argv[3], "wb");
  if (!f || fwrite(output, 1, out.byte_size, f) != out.byte_size || fclose(f) != 0) return 1;
  kiln_run_free(run);
  kiln_module_free(model);
  free(input);
  free(output);
  return 0;
}
