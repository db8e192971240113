// Default schedules: how a lowered kernel's loops run, chosen from the
// stages' shapes without search.
//
// Today one rule set serves every op family (default_schedule.cc): the
// outer spatial loops of each stage are fused until there is enough work
// to split across threads and run in parallel; a reduction's loops are
// ordered spatial, reduce, then the innermost spatial loop, so the inner
// loop walks contiguous memory and vectorizes (conv: n, oc, oh | ic, ky, kx
// | ow; matmul: i | k | j); the innermost loop carries the vectorize hint.
#pragma once

#include "tir/te/te.h"

namespace kiln::schedule {

// Schedules every computed (not inlined) stage of `s`.
void apply_default_schedule(tir::te::Schedule& s);

}  // namespace kiln::schedule
