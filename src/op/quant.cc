// Placeholder until the ops of this group land.
#include "op/op.h"

namespace kiln {
void register_quant_ops(OpRegistry&) {}
}  // namespace kiln
