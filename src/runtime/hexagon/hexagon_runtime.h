/* Internals shared by the Hexagon runtime's files. */
#ifndef KILN_RUNTIME_HEXAGON_HEXAGON_RUNTIME_H_
#define KILN_RUNTIME_HEXAGON_HEXAGON_RUNTIME_H_

#include <stdint.h>

#include "runtime/vtcm_pool_core.h"

/* Maps `capacity` bytes for the VTCM pool; 0, or -1 when the system refuses. */
int kiln_hexagon_init_vtcm(uint64_t capacity);
/* The pool, or NULL before kiln_hexagon_init_vtcm. */
const kiln_vtcm_pool* kiln_hexagon_vtcm_pool(void);

/* The DSP session's server on stdin/stdout (serve.c); the process's exit status. */
int kiln_hexagon_serve(void);

#endif /* KILN_RUNTIME_HEXAGON_HEXAGON_RUNTIME_H_ */
