/* .npy reading and writing without libc. */
#include "runtime/hexagon/npy.h"

static const char kMagic[6] = {(char)0x93, 'N', 'U', 'M', 'P', 'Y'};

uint32_t kiln_npy_element_bytes(const kiln_hx_param* p) {
  return p->code == KILN_HX_BOOL ? 1u : (uint32_t)p->bits / 8u;
}

/* The descr without its byte-order character: "i1", "f4", "b1", ... */
static void type_code(const kiln_hx_param* p, char out[4]) {
  out[0] = p->code == KILN_HX_FLOAT  ? 'f'
           : p->code == KILN_HX_UINT ? 'u'
           : p->code == KILN_HX_BOOL ? 'b'
                                     : 'i';
  uint32_t bytes = kiln_npy_element_bytes(p);
  out[1] = (char)('0' + bytes);
  out[2] = 0;
}

static void describe(kiln_text* err, const char* path, const kiln_hx_param* p) {
  kiln_text_str(err, path);
  kiln_text_str(err, " (parameter %");
  kiln_text_str(err, p->name);
  kiln_text_str(err, "): ");
}

static void put_shape(kiln_text* t, const int64_t* shape, uint32_t ndim) {
  kiln_text_str(t, "(");
  for (uint32_t i = 0; i < ndim; ++i) {
    if (i) kiln_text_str(t, ", ");
    kiln_text_i64(t, shape[i]);
  }
  kiln_text_str(t, ")");
}

/* Reads exactly n bytes; 0 on success. */
static int read_all(int fd, void* dst, uint64_t n) {
  uint8_t* d = dst;
  while (n > 0) {
    long chunk = n > (1u << 30) ? (1 << 30) : (long)n;
    long r = kiln_sys_read(fd, d, (size_t)chunk);
    if (r <= 0) return -1;
    d += r;
    n -= (uint64_t)r;
  }
  return 0;
}

static int write_all(int fd, const void* src, uint64_t n) {
  const uint8_t* s = src;
  while (n > 0) {
    long chunk = n > (1u << 30) ? (1 << 30) : (long)n;
    long w = kiln_sys_write(fd, s, (size_t)chunk);
    if (w <= 0) return -1;
    s += w;
    n -= (uint64_t)w;
  }
  return 0;
}

/* The value after 'key': in the header dict, or NULL. Never reads past the
 * header's terminating NUL. */
static const char* find_key(const char* h, const char* key) {
  size_t k = kiln_strlen(key);
  for (const char* p = h; *p; ++p) {
    if (*p != '\'' && *p != '"') continue;
    size_t i = 0;
    while (i < k && p[1 + i] && p[1 + i] == key[i]) ++i;
    if (i != k || p[1 + k] != *p) continue;
    const char* v = p + k + 2;
    while (*v == ' ') ++v;
    if (*v != ':') continue;
    ++v;
    while (*v == ' ') ++v;
    return v;
  }
  return 0;
}

enum { kMaxHeader = 4096, kMaxDims = 16 };

int kiln_npy_read(const char* path, const kiln_hx_param* p, void* data, uint64_t nbytes, kiln_text* err) {
  int fd = kiln_sys_open(path, 0);
  if (fd < 0) {
    describe(err, path, p);
    kiln_text_str(err, "cannot open the file");
    return -1;
  }
  uint8_t pre[12];
  char header[kMaxHeader + 1];
  int rc = -1;
  if (read_all(fd, pre, 10) != 0) goto truncated;
  for (int i = 0; i < 6; ++i)
    if ((char)pre[i] != kMagic[i]) {
      describe(err, path, p);
      kiln_text_str(err, "not a .npy file (bad magic)");
      goto done;
    }
  uint32_t len;
  if (pre[6] == 1) {
    len = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
  } else if (pre[6] == 2 || pre[6] == 3) {
    if (read_all(fd, pre + 10, 2) != 0) goto truncated;
    len = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
  } else {
    describe(err, path, p);
    kiln_text_str(err, "unsupported .npy version ");
    kiln_text_u64(err, pre[6]);
    goto done;
  }
  if (len > kMaxHeader) {
    describe(err, path, p);
    kiln_text_str(err, "header longer than 4096 bytes");
    goto done;
  }
  if (read_all(fd, header, len) != 0) goto truncated;
  header[len] = 0;

  const char* descr = find_key(header, "descr");
  const char* order = find_key(header, "fortran_order");
  const char* shape = find_key(header, "shape");
  if (!descr || !order || !shape || (*descr != '\'' && *descr != '"') || *shape != '(') {
    describe(err, path, p);
    kiln_text_str(err, "malformed header (needs descr, fortran_order and shape)");
    goto done;
  }
  if (*order != 'F') {
    describe(err, path, p);
    kiln_text_str(err, "Fortran-order arrays are not supported; save it in C order");
    goto done;
  }
  char want[4];
  type_code(p, want);
  /* The quoted descr: its characters up to the closing quote (at most 7). */
  char got[8] = {0};
  size_t got_len = 0;
  while (got_len < 7 && descr[1 + got_len] && descr[1 + got_len] != descr[0]) {
    got[got_len] = descr[1 + got_len];
    ++got_len;
  }
  int one_byte = want[1] == '1';
  char bo = got[0];
  int order_ok = bo == '<' || bo == '|' || (one_byte && (bo == '=' || bo == '>'));
  if (got_len != 3 || !order_ok || got[1] != want[0] || got[2] != want[1]) {
    describe(err, path, p);
    kiln_text_str(err, "element type ");
    kiln_text_str(err, got);
    kiln_text_str(err, " does not match the parameter's ");
    kiln_text_str(err, one_byte ? "|" : "<");
    kiln_text_str(err, want);
    goto done;
  }
  int64_t dims[kMaxDims];
  uint32_t ndim = 0;
  const char* s = shape + 1;
  for (;;) {
    while (*s == ' ' || *s == ',') ++s;
    if (*s == ')') break;
    if (*s < '0' || *s > '9' || ndim == kMaxDims) {
      describe(err, path, p);
      kiln_text_str(err, "malformed shape in the header");
      goto done;
    }
    /* Extents beyond 10^15 cannot match any parameter; stop before overflow. */
    int64_t v = 0;
    for (int digits = 0; *s >= '0' && *s <= '9'; ++digits, ++s)
      if (digits < 16) v = v * 10 + (*s - '0');
    dims[ndim++] = v;
  }
  int same = ndim == p->ndim;
  for (uint32_t i = 0; same && i < ndim; ++i) same = dims[i] == p->shape[i];
  /* The build flattens buffers: a (64, 32) file fills a (2048) parameter. */
  if (!same && p->ndim == 1) {
    int64_t count = 1;
    for (uint32_t i = 0; i < ndim && count >= 0; ++i)
      count = dims[i] > ((int64_t)1 << 31) || count > ((int64_t)1 << 31) ? -1 : count * dims[i];
    same = count == p->shape[0];
  }
  if (!same) {
    describe(err, path, p);
    kiln_text_str(err, "shape ");
    put_shape(err, dims, ndim);
    kiln_text_str(err, " does not match the parameter's ");
    put_shape(err, p->shape, p->ndim);
    goto done;
  }
  if (read_all(fd, data, nbytes) != 0) goto truncated;
  rc = 0;
  goto done;
truncated:
  describe(err, path, p);
  kiln_text_str(err, "the file is truncated");
done:
  kiln_sys_close(fd);
  return rc;
}

int kiln_npy_write(const char* path, const kiln_hx_param* p, const void* data, uint64_t nbytes,
                   kiln_text* err) {
  char dict[512];
  kiln_text h;
  kiln_text_init(&h, dict, sizeof dict);
  char code[4];
  type_code(p, code);
  kiln_text_str(&h, "{'descr': '");
  kiln_text_str(&h, code[1] == '1' ? "|" : "<");
  kiln_text_str(&h, code);
  kiln_text_str(&h, "', 'fortran_order': False, 'shape': (");
  for (uint32_t i = 0; i < p->ndim; ++i) {
    kiln_text_i64(&h, p->shape[i]);
    kiln_text_str(&h, p->ndim == 1 ? "," : i + 1 < p->ndim ? ", " : "");
  }
  kiln_text_str(&h, "), }");
  /* Pad with spaces and a newline so the data starts 64-byte aligned. */
  size_t total = 10 + h.len + 1;
  while (total % 64) {
    kiln_text_str(&h, " ");
    ++total;
  }
  kiln_text_str(&h, "\n");
  uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(h.len & 0xff), (uint8_t)(h.len >> 8)};
  int fd = kiln_sys_open(path, 1);
  if (fd < 0) {
    describe(err, path, p);
    kiln_text_str(err, "cannot create the output file");
    return -1;
  }
  int rc = write_all(fd, pre, 10) || write_all(fd, dict, h.len) || write_all(fd, data, nbytes);
  kiln_sys_close(fd);
  if (rc) {
    describe(err, path, p);
    kiln_text_str(err, "writing the output file failed");
    return -1;
  }
  return 0;
}
