/* The Hexagon executable's entry: `_start`, the command line, and one call.
 *
 *   EXE ENTRY ARG...   (the protocol is in runtime/hexagon/harness.h)
 *   EXE --serve        a DSP session on stdin/stdout (runtime/hexagon/session.h)
 *
 * Inputs are read into freshly mapped buffers (zero-filled where no input is
 * given), the prim function runs through its packed entry, the VTCM pool's
 * figures are printed, and outputs are written. Every failure is a message
 * on stderr and exit status 1; a kernel's failure code ends the run with the
 * runtime's last error.
 */
#include "kiln/runtime/backend_api.h"
#include "runtime/hexagon/harness.h"
#include "runtime/hexagon/hexagon_runtime.h"
#include "runtime/hexagon/npy.h"
#include "runtime/hexagon/sys.h"
#include "runtime/vtcm_pool_core.h"

enum { kMaxParams = 64, kMaxMessage = 1024 };

/* Linux starts a process with sp pointing at argc, then argv[]. */
__asm__(
    "  .text\n"
    "  .globl _start\n"
    "  .type _start, @function\n"
    "_start:\n"
    "  r0 = r29\n"
    "  jump kiln_hexagon_start\n");

static int error(const char* a, const char* b) {
  kiln_put(2, "kiln-hexagon: error: ");
  kiln_put(2, a);
  kiln_put(2, b);
  kiln_put(2, "\n");
  return 1;
}

static const kiln_hx_entry* find_entry(const char* name) {
  for (uint32_t i = 0; i < kiln_hexagon_num_entries; ++i)
    if (kiln_streq(kiln_hexagon_entries[i].name, name)) return &kiln_hexagon_entries[i];
  return 0;
}

static void list_entries(void) {
  kiln_put(2, "the executable holds:");
  for (uint32_t i = 0; i < kiln_hexagon_num_entries; ++i) {
    kiln_put(2, " @");
    kiln_put(2, kiln_hexagon_entries[i].name);
  }
  kiln_put(2, "\n");
}

static uint64_t param_bytes(const kiln_hx_param* p) {
  uint64_t n = kiln_npy_element_bytes(p);
  for (uint32_t d = 0; d < p->ndim; ++d) n *= (uint64_t)p->shape[d];
  return n;
}

static void print_pool(void) {
  const kiln_vtcm_pool* pool = kiln_hexagon_vtcm_pool();
  if (!pool) return;
  kiln_vtcm_stats stats;
  kiln_vtcm_pool_stats(pool, &stats);
  char line[512];
  kiln_vtcm_stats_message(&stats, line, sizeof line);
  kiln_put(1, "kiln-hexagon: VTCM pool: ");
  kiln_put(1, line);
  kiln_put(1, "\n");
}

static int run(int argc, char** argv) {
  if (argc == 2 && kiln_streq(argv[1], "--serve")) return kiln_hexagon_serve();
  if (argc < 2) {
    kiln_put(2, "usage: EXE ENTRY ARG... (see runtime/hexagon/harness.h)\n");
    list_entries();
    return 2;
  }
  const kiln_hx_entry* entry = find_entry(argv[1]);
  if (!entry) {
    error("no prim function @", argv[1]);
    list_entries();
    return 1;
  }
  if (entry->num_params > kMaxParams) return error("too many parameters for the harness: @", entry->name);
  int want = 0;
  for (uint32_t i = 0; i < entry->num_params; ++i) want += entry->params[i].is_buffer ? 2 : 1;
  if (argc - 2 != want) return error("wrong number of arguments for @", entry->name);
  if (kiln_hexagon_init_vtcm(kiln_hexagon_vtcm_capacity) != 0)
    return error("cannot map memory for the VTCM pool", "");

  void* args[kMaxParams];
  uint64_t scalars[kMaxParams];
  const char* outputs[kMaxParams];
  char message[kMaxMessage];
  kiln_text err;
  kiln_text_init(&err, message, sizeof message);
  int a = 2;
  for (uint32_t i = 0; i < entry->num_params; ++i) {
    const kiln_hx_param* p = &entry->params[i];
    outputs[i] = 0;
    if (p->code == KILN_HX_HANDLE)
      return error("handle parameters cannot be given on the command line: %", p->name);
    if (!p->is_buffer) {
      scalars[i] = 0;
      if (kiln_npy_read(argv[a++], p, &scalars[i], kiln_npy_element_bytes(p), &err) != 0)
        return error(message, "");
      args[i] = &scalars[i];
      continue;
    }
    uint64_t bytes = param_bytes(p);
    void* data = kiln_sys_map((size_t)(bytes ? bytes : 1));
    if (!data) return error("cannot map memory for parameter %", p->name);
    const char* in = argv[a++];
    const char* out = argv[a++];
    if (!kiln_streq(in, "-") && kiln_npy_read(in, p, data, bytes, &err) != 0) return error(message, "");
    if (!kiln_streq(out, "-")) outputs[i] = out;
    args[i] = data;
  }

  KilnBackendSetLastError("");
  int32_t code = entry->packed(args);
  print_pool();
  if (code != 0) {
    kiln_put(2, "kiln-hexagon: error: @");
    kiln_put(2, entry->name);
    kiln_put(2, " failed (code ");
    kiln_put_i64(2, code);
    kiln_put(2, "): ");
    kiln_put(2, KilnBackendGetLastError());
    kiln_put(2, "\n");
    return 1;
  }
  for (uint32_t i = 0; i < entry->num_params; ++i) {
    if (!outputs[i]) continue;
    const kiln_hx_param* p = &entry->params[i];
    if (kiln_npy_write(outputs[i], p, args[i], param_bytes(p), &err) != 0) return error(message, "");
  }
  return 0;
}

_Noreturn void kiln_hexagon_start(long* sp) {
  int argc = (int)sp[0];
  char** argv = (char**)(sp + 1);
  kiln_sys_exit(run(argc, argv));
}
