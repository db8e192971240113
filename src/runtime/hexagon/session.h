/* The DSP session: one Hexagon executable serving many calls.
 *
 * The host side of the hexagon backend (src/backends/hexagon/runtime/) starts
 * `qemu-hexagon-static -cpu v67 EXE --serve` once per loaded module and talks
 * to it over the process's stdin and stdout, the way a host talks to a DSP
 * over an RPC session. Plain C, shared by both sides. Every number is
 * little-endian (both sides are); u32 and u64 are uint32_t and uint64_t.
 *
 * Slots are the session's buffers, allocated once by LOAD: region inputs,
 * outputs, intermediates and constants. A region is a list of steps, each a
 * call of one compiled kernel (by its harness entry name) on slots.
 *
 *   host -> DSP, once:  LOAD
 *     u32 magic, u32 version, u32 KILN_HX_LOAD
 *     u32 num_slots;   num_slots x { u64 bytes; u32 has_data }
 *     u32 num_regions; num_regions x {
 *       u32 num_inputs; u32 slot[num_inputs]
 *       u32 num_outputs; u32 slot[num_outputs]
 *       u32 num_steps; num_steps x { u32 name_bytes; name; u32 num_args; u32 slot[num_args] } }
 *     then the bytes of every slot with has_data (constants), in slot order
 *   host -> DSP, many: RUN
 *     u32 magic, u32 version, u32 KILN_HX_RUN, u32 region,
 *     then the bytes of each of the region's input slots
 *   host -> DSP, last: QUIT
 *     u32 magic, u32 version, u32 KILN_HX_QUIT
 *
 *   DSP -> host, one reply per request:
 *     u32 magic, u32 status (0: ok), u32 message_bytes, message
 *     (RUN, status 0 only) the bytes of each of the region's output slots
 *     u64 vtcm_capacity, u64 vtcm_high_water, u64 vtcm_allocations,
 *     u64 vtcm_failed_allocations, u64 vtcm_used (after the call)
 *
 * A failed LOAD or a malformed request ends the session (the DSP replies,
 * then exits with status 1); a kernel's failure fails that RUN only.
 */
#ifndef KILN_RUNTIME_HEXAGON_SESSION_H_
#define KILN_RUNTIME_HEXAGON_SESSION_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  KILN_HX_SESSION_MAGIC = 0x5358484b, /* "KHXS" */
  KILN_HX_SESSION_VERSION = 1,
  KILN_HX_LOAD = 1,
  KILN_HX_RUN = 2,
  KILN_HX_QUIT = 3,
  /* Limits of one session (the DSP side's fixed tables). */
  KILN_HX_MAX_SLOTS = 16384,
  KILN_HX_MAX_REGIONS = 4096,
  KILN_HX_MAX_STEPS = 16384,
  KILN_HX_MAX_ARGS = 65536,
  KILN_HX_MAX_NAME = 256,
};

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_HEXAGON_SESSION_H_ */
