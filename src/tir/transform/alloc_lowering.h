// What the allocation lowerings (lower-scratchpad-alloc, lower-workspace-alloc)
// share: an allocation becomes a runtime call, a null check that records an
// error naming the buffer and returns -1, and a release on every path out of
// the buffer's scope. Internal to src/tir/transform.
#pragma once

#include <string>

#include "tir/tir.h"

namespace kiln::tir {

// True when the statement always ends in a return (the code after it is dead).
bool always_returns(const Stmt& s);

// "buffer %A_buf (2048 bytes, scope local.vtcm)"
std::string describe_buffer(const BufferNode& b);

// If `data` is null: KilnBackendPrependLastError(what) (the runtime's own
// reason stays after it) and return -1.
Stmt null_check(const Var& data, const std::string& what);

// `body` with `release` before each of its returns and, unless it always
// returns, once more at its end. Returns inside a parallel loop end one task
// only, so the release goes into the loop's failure check instead, which is
// added after the loop when it is not there yet (tir/parallel.h).
Stmt release_on_every_exit(const Stmt& body, const Stmt& release);

// let data = allocate_call; null check; decl_buffer buffer { body, released on every exit }
Stmt lowered_allocation(const Buffer& buffer, const Expr& allocate_call, const Stmt& body,
                        const Stmt& release);

}  // namespace kiln::tir
