// Parallel loops (`for ... parallel`): what the lowering passes and codegen
// agree on.
//
// The iterations of a parallel loop may run at once on several threads, in
// contiguous chunks, one task per chunk (codegen outlines the body and calls
// the runtime's KilnBackendParallelFor). Buffers allocated inside the body
// are allocated by each task. A `return c` inside the body ends only the task
// that runs it; the loop then fails with c (the first failing chunk's code).
// A failure must not release buffers allocated outside the loop from inside
// it: other tasks may still be using them, and every failing task would free
// them again. So the loop's failure exit is after it:
//
//   for %i from 0 extent 8 parallel {
//     ... return -1 ...                 (inside: only this task's releases)
//   }
//   if ne(parallel_status(), 0) {       (the failure check)
//     evaluate call_extern<int32>("HexagonBackendFreeVTCM", %A_buf_data)
//     return parallel_status()
//   }
//
// parallel_status() is the code the function's most recent parallel loop
// failed with, 0 when it did not (a `return 0` inside the body ends its task
// and is not a failure). The allocation lowerings put the check after a
// parallel loop that can return and lies in a buffer's scope, with that
// buffer's release; codegen returns the loop's code itself after a loop that
// has no check right after it.
#pragma once

#include "tir/tir.h"

namespace kiln::tir {

bool is_parallel_loop(const Stmt& s);
// True when a return statement occurs anywhere in `s`.
bool contains_return(const Stmt& s);
// if ne(parallel_status(), 0) { return parallel_status() }
Stmt parallel_failure_check();
// A statement made by parallel_failure_check, whatever was put before its return.
bool is_parallel_failure_check(const Stmt& s);

// The variables the body of `loop` reads but neither it nor the loop
// defines, in the order of their first use: what a task of the loop needs
// from outside (loop variables of enclosing loops, lets, buffer data, scalar
// parameters).
std::vector<const VarNode*> loop_body_inputs(const ForNode& loop);

}  // namespace kiln::tir
