/* Linux system calls and text output for the freestanding Hexagon runtime.
 *
 * The runtime runs as a static Linux executable (under qemu-hexagon-static,
 * or on a device's Linux-side test harness); it has no libc. System calls
 * use Hexagon's `trap0(#1)` with the number in r6 and arguments in r0..r5
 * (the asm-generic numbering).
 */
#ifndef KILN_RUNTIME_HEXAGON_SYS_H_
#define KILN_RUNTIME_HEXAGON_SYS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

long kiln_sys_read(int fd, void* buf, size_t n);
long kiln_sys_write(int fd, const void* buf, size_t n);
/* O_RDONLY, or O_WRONLY | O_CREAT | O_TRUNC with mode 0644. */
int kiln_sys_open(const char* path, int for_writing);
int kiln_sys_close(int fd);
/* Anonymous private read-write pages; NULL when the system refuses. */
void* kiln_sys_map(size_t nbytes);
__attribute__((noreturn)) void kiln_sys_exit(int code);

/* Whole writes to stdout (1) or stderr (2). */
void kiln_put(int fd, const char* s);
void kiln_put_u64(int fd, uint64_t v);
void kiln_put_i64(int fd, int64_t v);

/* A message built into a fixed buffer (text.c); text past the end is dropped. */
typedef struct kiln_text {
  char* buf;
  size_t size; /* > 0 */
  size_t len;
} kiln_text;
void kiln_text_init(kiln_text* t, char* buf, size_t size);
void kiln_text_str(kiln_text* t, const char* s);
void kiln_text_u64(kiln_text* t, uint64_t v);
void kiln_text_i64(kiln_text* t, int64_t v);

/* text.c: no system calls. */
size_t kiln_strlen(const char* s);
/* The decimal digits of v in buf[24]; returns where they start. */
const char* kiln_decimal(uint64_t v, char* buf);
int kiln_streq(const char* a, const char* b);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_HEXAGON_SYS_H_ */
