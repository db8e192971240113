/* Strings and messages in fixed buffers: no system calls, so the same code
 * also builds for the host (the harness's .npy reader is fuzzed there). */
#include "runtime/hexagon/sys.h"

size_t kiln_strlen(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

int kiln_streq(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

/* The decimal digits of v, in buf[24], returning where they start. */
const char* kiln_decimal(uint64_t v, char* buf) {
  int i = 23;
  buf[i] = 0;
  do {
    buf[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return buf + i;
}

void kiln_text_init(kiln_text* t, char* buf, size_t size) {
  t->buf = buf;
  t->size = size;
  t->len = 0;
  buf[0] = 0;
}

void kiln_text_str(kiln_text* t, const char* s) {
  while (*s && t->len + 1 < t->size) t->buf[t->len++] = *s++;
  t->buf[t->len] = 0;
}

void kiln_text_u64(kiln_text* t, uint64_t v) {
  char buf[24];
  kiln_text_str(t, kiln_decimal(v, buf));
}

void kiln_text_i64(kiln_text* t, int64_t v) {
  if (v < 0) {
    kiln_text_str(t, "-");
    kiln_text_u64(t, (uint64_t)0 - (uint64_t)v);
    return;
  }
  kiln_text_u64(t, (uint64_t)v);
}
