/* .npy input and output for the Hexagon runtime's harness.
 *
 * Version 1.0-3.0 files, little-endian, C order; the element type and shape
 * must be exactly the parameter's. Errors are written into `err` (what is
 * wrong, with the file and the parameter) and the call returns non-zero.
 */
#ifndef KILN_RUNTIME_HEXAGON_NPY_H_
#define KILN_RUNTIME_HEXAGON_NPY_H_

#include <stddef.h>
#include <stdint.h>

#include "runtime/hexagon/harness.h"
#include "runtime/hexagon/sys.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of one element of `p` in memory (bool: one byte). */
uint32_t kiln_npy_element_bytes(const kiln_hx_param* p);
/* Reads PATH into data (nbytes: the parameter's whole size). */
int kiln_npy_read(const char* path, const kiln_hx_param* p, void* data, uint64_t nbytes, kiln_text* err);
/* Writes data as a .npy of the parameter's type and shape. */
int kiln_npy_write(const char* path, const kiln_hx_param* p, const void* data, uint64_t nbytes,
                   kiln_text* err);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_HEXAGON_NPY_H_ */
