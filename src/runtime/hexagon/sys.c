/* Linux system calls over trap0 and unbuffered text output. */
#include "runtime/hexagon/sys.h"

enum {
  kSysOpenat = 56,
  kSysClose = 57,
  kSysRead = 63,
  kSysWrite = 64,
  kSysExitGroup = 94,
  kSysMmap2 = 222, /* 32-bit asm-generic: mmap2 (offset in pages) */
};
enum { kAtFdcwd = -100, kOWronly = 01, kOCreat = 0100, kOTrunc = 01000 };

static long syscall6(long n, long a, long b, long c, long d, long e, long f) {
  register long r0 __asm__("r0") = a;
  register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c;
  register long r3 __asm__("r3") = d;
  register long r4 __asm__("r4") = e;
  register long r5 __asm__("r5") = f;
  register long r6 __asm__("r6") = n;
  __asm__ volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6) : "memory");
  return r0;
}

long kiln_sys_read(int fd, void* buf, size_t n) {
  return syscall6(kSysRead, fd, (long)buf, (long)n, 0, 0, 0);
}

long kiln_sys_write(int fd, const void* buf, size_t n) {
  return syscall6(kSysWrite, fd, (long)buf, (long)n, 0, 0, 0);
}

int kiln_sys_open(const char* path, int for_writing) {
  long flags = for_writing ? (kOWronly | kOCreat | kOTrunc) : 0;
  return (int)syscall6(kSysOpenat, kAtFdcwd, (long)path, flags, 0644, 0, 0);
}

int kiln_sys_close(int fd) { return (int)syscall6(kSysClose, fd, 0, 0, 0, 0, 0); }

void* kiln_sys_map(size_t nbytes) {
  enum { kProtRw = 3, kMapPrivateAnonymous = 0x22 };
  long p = syscall6(kSysMmap2, 0, (long)nbytes, kProtRw, kMapPrivateAnonymous, -1, 0);
  /* Failures are -errno, in the top page of the address space. */
  if ((unsigned long)p >= (unsigned long)-4096) return NULL;
  return (void*)p;
}

_Noreturn void kiln_sys_exit(int code) {
  for (;;) syscall6(kSysExitGroup, code, 0, 0, 0, 0, 0);
}

void kiln_put(int fd, const char* s) {
  size_t n = kiln_strlen(s);
  while (n > 0) {
    long w = kiln_sys_write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

void kiln_put_u64(int fd, uint64_t v) {
  char buf[24];
  kiln_put(fd, kiln_decimal(v, buf));
}

void kiln_put_i64(int fd, int64_t v) {
  if (v < 0) {
    kiln_put(fd, "-");
    kiln_put_u64(fd, (uint64_t)0 - (uint64_t)v);
    return;
  }
  kiln_put_u64(fd, (uint64_t)v);
}
