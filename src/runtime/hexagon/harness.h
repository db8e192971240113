/* The table a Hexagon executable's generated harness hands to the runtime.
 *
 * `kiln build --target hexagon-vNN --emit exe` (and `kiln run --target
 * hexagon-vNN`) put the compiled prim functions, this table and kiln's
 * Hexagon runtime into one static executable. The table describes every prim
 * function: its packed entry `NAME__packed(void** args)` and its parameters
 * (element type, and for buffers the constant shape). The runtime's main
 * reads the command line against it:
 *
 *   EXE ENTRY ARG...      one ARG per scalar parameter: a 0-d .npy file;
 *                         two per buffer parameter: an input .npy file or
 *                         "-" (zero-filled), then an output .npy path or "-"
 *
 * and prints the VTCM pool's figures when the call returns.
 *
 * Codegen emits the table as LLVM globals with this exact layout (32-bit
 * pointers on Hexagon); plain C, shared by both sides.
 */
#ifndef KILN_RUNTIME_HEXAGON_HARNESS_H_
#define KILN_RUNTIME_HEXAGON_HARNESS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element type codes: the same values as tir::DataType::Code. */
enum {
  KILN_HX_INT = 0,
  KILN_HX_UINT = 1,
  KILN_HX_FLOAT = 2,
  KILN_HX_BOOL = 3,
  KILN_HX_HANDLE = 4,
};

typedef struct kiln_hx_param {
  const char* name;
  uint8_t code;      /* KILN_HX_* */
  uint8_t bits;      /* element bits (bool: 1, stored as a byte) */
  uint8_t is_buffer; /* 1: a buffer (pointer argument); 0: a scalar */
  uint8_t ndim;
  const int64_t* shape; /* ndim extents, for buffers */
} kiln_hx_param;

typedef struct kiln_hx_entry {
  const char* name;
  int32_t (*packed)(void** args);
  uint32_t num_params;
  const kiln_hx_param* params;
} kiln_hx_entry;

/* Defined by the generated harness. */
extern const kiln_hx_entry kiln_hexagon_entries[];
extern const uint32_t kiln_hexagon_num_entries;
extern const uint64_t kiln_hexagon_vtcm_capacity; /* the target's VTCM bytes */

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_HEXAGON_HARNESS_H_ */
