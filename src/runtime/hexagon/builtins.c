/* What compiled code may call beyond the runtime ABI: the memory functions a
 * freestanding C environment must provide, Hexagon's integer division helpers
 * (Hexagon has no divide instruction; LLVM calls __hexagon_[u]{div,mod}{si,di}3)
 * sqrtf (LLVM calls it __hexagon_sqrtf) and expf. Compiled with -ffreestanding, so clang does not turn these
 * loops back into calls to themselves.
 *
 * Division by zero returns 0 (quotient) or the dividend (remainder) instead
 * of trapping: no kiln kernel divides by zero on purpose, and a runaway
 * kernel must end with wrong numbers, not hang the emulator.
 */
#include <stddef.h>
#include <stdint.h>

void* memcpy(void* restrict dst, const void* restrict src, size_t n) {
  uint8_t* d = dst;
  const uint8_t* s = src;
  while (n--) *d++ = *s++;
  return dst;
}

void* memmove(void* dst, const void* src, size_t n) {
  uint8_t* d = dst;
  const uint8_t* s = src;
  if (d < s) {
    while (n--) *d++ = *s++;
  } else {
    while (n--) d[n] = s[n];
  }
  return dst;
}

void* memset(void* dst, int c, size_t n) {
  uint8_t* d = dst;
  while (n--) *d++ = (uint8_t)c;
  return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
  const uint8_t* x = a;
  const uint8_t* y = b;
  for (size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

/* LLVM's Hexagon backend calls this for copies it knows are 8-byte aligned
 * multiples of 8 bytes, at least 32. */
void* __hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void* dst, const void* src, size_t n) {
  return memcpy(dst, src, n);
}

/* ---------------------------------------------------------------- division */

/* Restoring division, one quotient bit per step. */
static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t* rem) {
  if (d == 0) {
    *rem = n;
    return 0;
  }
  uint64_t q = 0, r = 0;
  for (int i = 63; i >= 0; --i) {
    r = (r << 1) | ((n >> i) & 1);
    if (r >= d) {
      r -= d;
      q |= (uint64_t)1 << i;
    }
  }
  *rem = r;
  return q;
}

static uint32_t udivmod32(uint32_t n, uint32_t d, uint32_t* rem) {
  if (d == 0) {
    *rem = n;
    return 0;
  }
  uint32_t q = 0, r = 0;
  for (int i = 31; i >= 0; --i) {
    r = (r << 1) | ((n >> i) & 1);
    if (r >= d) {
      r -= d;
      q |= (uint32_t)1 << i;
    }
  }
  *rem = r;
  return q;
}

static uint32_t abs32(int32_t v) { return v < 0 ? 0u - (uint32_t)v : (uint32_t)v; }
static uint64_t abs64(int64_t v) { return v < 0 ? 0u - (uint64_t)v : (uint64_t)v; }

uint32_t __hexagon_udivsi3(uint32_t n, uint32_t d) {
  uint32_t r;
  return udivmod32(n, d, &r);
}

uint32_t __hexagon_umodsi3(uint32_t n, uint32_t d) {
  uint32_t r;
  udivmod32(n, d, &r);
  return r;
}

/* C semantics: the quotient truncates toward zero, the remainder has the
 * dividend's sign. */
int32_t __hexagon_divsi3(int32_t n, int32_t d) {
  uint32_t r;
  uint32_t q = udivmod32(abs32(n), abs32(d), &r);
  return (n < 0) != (d < 0) ? (int32_t)(0u - q) : (int32_t)q;
}

int32_t __hexagon_modsi3(int32_t n, int32_t d) {
  uint32_t r;
  udivmod32(abs32(n), abs32(d), &r);
  return n < 0 ? (int32_t)(0u - r) : (int32_t)r;
}

uint64_t __hexagon_udivdi3(uint64_t n, uint64_t d) {
  uint64_t r;
  return udivmod64(n, d, &r);
}

uint64_t __hexagon_umoddi3(uint64_t n, uint64_t d) {
  uint64_t r;
  udivmod64(n, d, &r);
  return r;
}

int64_t __hexagon_divdi3(int64_t n, int64_t d) {
  uint64_t r;
  uint64_t q = udivmod64(abs64(n), abs64(d), &r);
  return (n < 0) != (d < 0) ? (int64_t)(0u - q) : (int64_t)q;
}

int64_t __hexagon_moddi3(int64_t n, int64_t d) {
  uint64_t r;
  udivmod64(abs64(n), abs64(d), &r);
  return n < 0 ? (int64_t)(0u - r) : (int64_t)r;
}

/* ---------------------------------------------------------------- sqrtf */

/* Correctly rounded square root of a float, from its bits: the integer
 * square root of the (normalised, exponent-even) significand shifted left,
 * rounded to nearest even through the remainder. */
float sqrtf(float x) {
  union {
    float f;
    uint32_t u;
  } v = {x};
  uint32_t sign = v.u >> 31, exp = (v.u >> 23) & 0xff, man = v.u & 0x7fffff;
  if (exp == 0xff) {
    if (man != 0 || !sign) return x; /* NaN, +inf */
    v.u = 0x7fc00000;                /* sqrt(-inf) = NaN */
    return v.f;
  }
  if (exp == 0 && man == 0) return x; /* +-0 */
  if (sign) {
    v.u = 0x7fc00000;
    return v.f;
  }
  int32_t e;
  if (exp == 0) { /* subnormal: normalise */
    e = -126;
    while (!(man & 0x800000)) {
      man <<= 1;
      --e;
    }
  } else {
    e = (int32_t)exp - 127;
    man |= 0x800000;
  }
  /* value = man * 2^(e-23); make e even so the root's exponent is e/2. */
  uint64_t m = man;
  if (e & 1) {
    m <<= 1;
    --e;
  }
  /* sqrt(m * 2^-23) with 24 result bits: isqrt(m << 25) has 25 bits. */
  uint64_t n = m << 25, root = 0, bit = (uint64_t)1 << 50;
  while (bit > n) bit >>= 2;
  while (bit) {
    if (n >= root + bit) {
      n -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  /* root has 25 significant bits (1.xxx * 2^24); round off the last one. */
  uint32_t r = (uint32_t)root;
  uint32_t half = r & 1;
  r >>= 1;
  if (half && (n != 0 || (r & 1))) ++r; /* above half, or a tie to even */
  int32_t re = e / 2;
  if (r & 0x1000000) { /* rounding carried into a new bit */
    r >>= 1;
    ++re;
  }
  v.u = ((uint32_t)(re + 127) << 23) | (r & 0x7fffff);
  return v.f;
}

float __hexagon_sqrtf(float x) { return sqrtf(x); }

/* ---------------------------------------------------------------- rounding
 *
 * floorf, ceilf and roundevenf (what LLVM calls for the floor, ceil and
 * round ops), from the bits: a float of magnitude 2^23 or more (and inf,
 * NaN) is already an integer; below, the fraction bits are cleared and the
 * result adjusted by one. The sign of zero is kept. */
static float integral_part(float x, int mode) { /* mode: -1 floor, +1 ceil, 0 to nearest even */
  union {
    float f;
    uint32_t u;
  } v = {x};
  uint32_t exp = (v.u >> 23) & 0xff, sign = v.u & 0x80000000u;
  if (exp >= 127 + 23) return x; /* integral, inf or NaN */
  union {
    float f;
    uint32_t u;
  } t;
  if (exp < 127) { /* |x| < 1 */
    if ((v.u & 0x7fffffffu) == 0) return x;
    int up = mode > 0 ? !sign : mode < 0 ? (int)(sign >> 31) : exp == 126 && (v.u & 0x7fffff) != 0;
    t.u = up ? (sign | 0x3f800000u) : sign; /* +-1 or +-0 */
    return t.f;
  }
  uint32_t frac_bits = 127 + 23 - exp, mask = (1u << frac_bits) - 1, frac = v.u & mask;
  t.u = v.u & ~mask; /* truncated toward zero */
  if (frac == 0) return x;
  int away; /* one more unit away from zero */
  if (mode == 0) {
    uint32_t half = 1u << (frac_bits - 1);
    away = frac > half || (frac == half && ((t.u >> frac_bits) & 1));
  } else {
    away = mode < 0 ? sign != 0 : sign == 0;
  }
  if (away) t.u += 1u << frac_bits; /* carries into the exponent correctly */
  return t.f;
}

float floorf(float x) { return integral_part(x, -1); }
float ceilf(float x) { return integral_part(x, 1); }
float roundevenf(float x) { return integral_part(x, 0); }

/* ---------------------------------------------------------------- expf */

static float scale_by_power_of_two(float y, int32_t k) {
  union {
    float f;
    uint32_t u;
  } p;
  /* In two steps when 2^k alone is not a normal float. */
  while (k > 127) {
    p.u = (uint32_t)(127 + 127) << 23;
    y *= p.f;
    k -= 127;
  }
  while (k < -126) {
    p.u = (uint32_t)(127 - 100) << 23;
    y *= p.f;
    k += 100;
  }
  p.u = (uint32_t)(k + 127) << 23;
  return y * p.f;
}

/* e^x within about one ulp: x = k ln2 + r with |r| <= ln2/2 (ln2 split in a
 * short high part, exact in k * hi, and a low correction), e^r from a degree-6
 * polynomial (Cephes' single-precision coefficients), times 2^k. */
float expf(float x) {
  if (x != x) return x;                                 /* NaN */
  if (x > 88.72283935546875f) return x * 1e30f * 1e30f; /* overflow: +inf */
  if (x < -103.972084045410156f) return 0.0f;           /* underflow */
  float t = x * 1.44269504088896341f;
  int32_t k = (int32_t)(t < 0 ? t - 0.5f : t + 0.5f);
  float r = x - (float)k * 0.693359375f;
  r = r - (float)k * -2.12194440e-4f;
  float z = r * r;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * z + r + 1.0f;
  return scale_by_power_of_two(y, k);
}
