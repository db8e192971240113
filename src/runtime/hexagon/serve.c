/* The DSP session's server (`EXE --serve`; the protocol is in session.h).
 *
 * LOAD builds the slot and region tables once and checks every step against
 * the harness table (the entry exists, takes buffers only, one per slot, of
 * the slot's size); RUN fills a region's input slots, calls its steps in
 * order and sends its output slots back. All memory is mapped at LOAD, so a
 * run allocates nothing but the VTCM its kernels ask for, and frees it.
 */
#include "kiln/runtime/backend_api.h"
#include "runtime/hexagon/harness.h"
#include "runtime/hexagon/hexagon_runtime.h"
#include "runtime/hexagon/npy.h"
#include "runtime/hexagon/session.h"
#include "runtime/hexagon/sys.h"
#include "runtime/vtcm_pool_core.h"

enum { kIn = 0, kOut = 1, kMaxParams = 64, kMaxMessage = 1024 };

typedef struct {
  uint8_t* data;
  uint64_t bytes;
} Slot;

typedef struct {
  const kiln_hx_entry* entry;
  uint32_t first_arg, num_args; /* into g_args */
} Step;

typedef struct {
  uint32_t first_input, num_inputs;   /* into g_args */
  uint32_t first_output, num_outputs; /* into g_args */
  uint32_t first_step, num_steps;     /* into g_steps */
} Region;

static Slot g_slots[KILN_HX_MAX_SLOTS];
static Step g_steps[KILN_HX_MAX_STEPS];
static Region g_regions[KILN_HX_MAX_REGIONS];
static uint32_t g_args[KILN_HX_MAX_ARGS];
static uint32_t g_num_slots, g_num_steps, g_num_regions, g_num_args;

static char g_message[kMaxMessage];
static kiln_text g_err;

/* Whole reads and writes; 0 on success. */
static int read_all(void* p, uint64_t n) {
  uint8_t* b = (uint8_t*)p;
  while (n > 0) {
    long r = kiln_sys_read(kIn, b, (size_t)(n > (1u << 30) ? (1u << 30) : n));
    if (r <= 0) return -1;
    b += r;
    n -= (uint64_t)r;
  }
  return 0;
}

static int write_all(const void* p, uint64_t n) {
  const uint8_t* b = (const uint8_t*)p;
  while (n > 0) {
    long w = kiln_sys_write(kOut, b, (size_t)(n > (1u << 30) ? (1u << 30) : n));
    if (w <= 0) return -1;
    b += w;
    n -= (uint64_t)w;
  }
  return 0;
}

static int read_u32(uint32_t* v) { return read_all(v, sizeof *v); }
static int write_u32(uint32_t v) { return write_all(&v, sizeof v); }
static int write_u64(uint64_t v) { return write_all(&v, sizeof v); }

/* Records a message for the reply; returns -1 so callers can `return fail(...)`. */
static int fail(const char* a, const char* b) {
  kiln_text_init(&g_err, g_message, sizeof g_message);
  kiln_text_str(&g_err, a);
  kiln_text_str(&g_err, b);
  return -1;
}

static int fail_u64(const char* a, uint64_t v, const char* b) {
  fail(a, "");
  kiln_text_u64(&g_err, v);
  kiln_text_str(&g_err, b);
  return -1;
}

static int reply(uint32_t status, const char* message) {
  uint32_t n = (uint32_t)kiln_strlen(message);
  /* Also on stderr: a session that ends here may lose its reply (a socket
   * closed with unread input resets), but the host reads stderr. */
  if (status != 0) {
    kiln_put(2, "kiln-hexagon: error: ");
    kiln_put(2, message);
    kiln_put(2, "\n");
  }
  if (write_u32(KILN_HX_SESSION_MAGIC) || write_u32(status) || write_u32(n)) return -1;
  return write_all(message, n);
}

static int reply_pool(void) {
  kiln_vtcm_stats s = {0};
  const kiln_vtcm_pool* pool = kiln_hexagon_vtcm_pool();
  if (pool) kiln_vtcm_pool_stats(pool, &s);
  if (write_u64(s.capacity) || write_u64(s.high_water_bytes) || write_u64(s.total_allocations) ||
      write_u64(s.failed_allocations))
    return -1;
  return write_u64(s.used_bytes);
}

static const kiln_hx_entry* find_entry(const char* name) {
  for (uint32_t i = 0; i < kiln_hexagon_num_entries; ++i)
    if (kiln_streq(kiln_hexagon_entries[i].name, name)) return &kiln_hexagon_entries[i];
  return 0;
}

static uint64_t param_bytes(const kiln_hx_param* p) {
  uint64_t n = kiln_npy_element_bytes(p);
  for (uint32_t d = 0; d < p->ndim; ++d) n *= (uint64_t)p->shape[d];
  return n;
}

/* `count` slot ids into g_args, each checked. */
static int read_slot_list(uint32_t* first, uint32_t* count) {
  if (read_u32(count)) return fail("truncated LOAD request", "");
  if (*count > KILN_HX_MAX_ARGS - g_num_args) return fail("too many slot references in LOAD", "");
  *first = g_num_args;
  for (uint32_t i = 0; i < *count; ++i) {
    uint32_t s;
    if (read_u32(&s)) return fail("truncated LOAD request", "");
    if (s >= g_num_slots) return fail_u64("LOAD names slot ", s, ", past the slot table");
    g_args[g_num_args++] = s;
  }
  return 0;
}

static int read_step(Step* step) {
  uint32_t name_bytes;
  char name[KILN_HX_MAX_NAME + 1];
  if (read_u32(&name_bytes)) return fail("truncated LOAD request", "");
  if (name_bytes > KILN_HX_MAX_NAME) return fail("a kernel name in LOAD is too long", "");
  if (read_all(name, name_bytes)) return fail("truncated LOAD request", "");
  name[name_bytes] = 0;
  step->entry = find_entry(name);
  if (!step->entry) return fail("the executable holds no kernel @", name);
  if (read_slot_list(&step->first_arg, &step->num_args)) return -1;
  if (step->num_args != step->entry->num_params || step->num_args > kMaxParams)
    return fail("wrong number of slots for kernel @", name);
  for (uint32_t a = 0; a < step->num_args; ++a) {
    const kiln_hx_param* p = &step->entry->params[a];
    if (!p->is_buffer) return fail("kernels of a region take buffers only; @", name);
    if (param_bytes(p) != g_slots[g_args[step->first_arg + a]].bytes)
      return fail("a slot's size differs from the parameter's size in @", name);
  }
  return 0;
}

static int load(void) {
  if (read_u32(&g_num_slots)) return fail("truncated LOAD request", "");
  if (g_num_slots > KILN_HX_MAX_SLOTS) return fail_u64("LOAD has ", g_num_slots, " slots; too many");
  uint32_t has_data[KILN_HX_MAX_SLOTS / 32] = {0};
  for (uint32_t i = 0; i < g_num_slots; ++i) {
    uint32_t flag;
    if (read_all(&g_slots[i].bytes, 8) || read_u32(&flag)) return fail("truncated LOAD request", "");
    if (g_slots[i].bytes > (1ull << 31)) return fail_u64("slot ", i, " is larger than 2 GiB");
    g_slots[i].data = (uint8_t*)kiln_sys_map((size_t)(g_slots[i].bytes ? g_slots[i].bytes : 1));
    if (!g_slots[i].data) return fail_u64("cannot map memory for slot ", i, "");
    if (flag) has_data[i / 32] |= 1u << (i % 32);
  }
  if (read_u32(&g_num_regions)) return fail("truncated LOAD request", "");
  if (g_num_regions > KILN_HX_MAX_REGIONS) return fail("LOAD has too many regions", "");
  for (uint32_t r = 0; r < g_num_regions; ++r) {
    Region* region = &g_regions[r];
    if (read_slot_list(&region->first_input, &region->num_inputs) ||
        read_slot_list(&region->first_output, &region->num_outputs))
      return -1;
    if (read_u32(&region->num_steps)) return fail("truncated LOAD request", "");
    if (region->num_steps > KILN_HX_MAX_STEPS - g_num_steps) return fail("LOAD has too many steps", "");
    region->first_step = g_num_steps;
    for (uint32_t s = 0; s < region->num_steps; ++s)
      if (read_step(&g_steps[g_num_steps++])) return -1;
  }
  for (uint32_t i = 0; i < g_num_slots; ++i)
    if ((has_data[i / 32] >> (i % 32)) & 1)
      if (read_all(g_slots[i].data, g_slots[i].bytes)) return fail("truncated constant data in LOAD", "");
  return 0;
}

/* Runs region `r`; the reply's status and message come from here. */
static int run(uint32_t r) {
  const Region* region = &g_regions[r];
  for (uint32_t i = 0; i < region->num_inputs; ++i) {
    const Slot* s = &g_slots[g_args[region->first_input + i]];
    if (read_all(s->data, s->bytes)) return -2;
  }
  for (uint32_t i = 0; i < region->num_steps; ++i) {
    const Step* step = &g_steps[region->first_step + i];
    void* args[kMaxParams];
    for (uint32_t a = 0; a < step->num_args; ++a) args[a] = g_slots[g_args[step->first_arg + a]].data;
    KilnBackendSetLastError("");
    int32_t code = step->entry->packed(args);
    if (code != 0) {
      fail("@", step->entry->name);
      kiln_text_str(&g_err, " failed (code ");
      kiln_text_i64(&g_err, code);
      kiln_text_str(&g_err, "): ");
      kiln_text_str(&g_err, KilnBackendGetLastError());
      return -1;
    }
  }
  return 0;
}

static int send_outputs(uint32_t r) {
  const Region* region = &g_regions[r];
  for (uint32_t i = 0; i < region->num_outputs; ++i) {
    const Slot* s = &g_slots[g_args[region->first_output + i]];
    if (write_all(s->data, s->bytes)) return -1;
  }
  return 0;
}

/* One request; 0 to go on, 1 to stop (QUIT or end of input), -1 on a broken session. */
static int serve_one(int* loaded) {
  uint32_t head[3];
  if (read_all(head, sizeof head)) return 1; /* the host closed the session */
  if (head[0] != KILN_HX_SESSION_MAGIC || head[1] != KILN_HX_SESSION_VERSION) {
    reply(1, "not a kiln DSP session request (bad magic or version)");
    return -1;
  }
  if (head[2] == KILN_HX_QUIT) return reply(0, "") || reply_pool() ? -1 : 1;
  if (head[2] == KILN_HX_LOAD) {
    if (*loaded || load() != 0) {
      reply(1, *loaded ? "a second LOAD in one session" : g_message);
      return -1;
    }
    *loaded = 1;
    return reply(0, "") || reply_pool() ? -1 : 0;
  }
  if (head[2] != KILN_HX_RUN || !*loaded) {
    reply(1, *loaded ? "unknown request" : "RUN before LOAD");
    return -1;
  }
  uint32_t r;
  if (read_u32(&r)) return -1;
  if (r >= g_num_regions) {
    reply(1, "RUN names a region past the region table");
    return -1;
  }
  int status = run(r);
  if (status == -2) return -1; /* inputs truncated: the host is gone */
  if (status != 0) return reply(1, g_message) || reply_pool() ? -1 : 0;
  if (reply(0, "") || send_outputs(r) || reply_pool()) return -1;
  return 0;
}

int kiln_hexagon_serve(void) {
  if (kiln_hexagon_init_vtcm(kiln_hexagon_vtcm_capacity) != 0) {
    kiln_put(2, "kiln-hexagon: error: cannot map memory for the VTCM pool\n");
    return 1;
  }
  int loaded = 0;
  for (;;) {
    int r = serve_one(&loaded);
    if (r > 0) return 0;
    if (r < 0) return 1;
  }
}
