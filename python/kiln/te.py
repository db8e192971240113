"""Tensor expressions and schedules from Python.

    A = te.placeholder((2048,), "int8", name="A")
    B = te.placeholder((2048,), "int8", name="B")
    C = te.compute((2048,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule([C])
    s.cache_read(A, "local.vtcm", [C])      # A is copied into VTCM for C
    s[C].vectorize(s[C].leaf(0))
    f = kiln.lower(s, [A, B, C], name="alloc_vtcm")

Reductions: k = te.reduce_axis(64, "k"); te.compute((m, n), lambda i, j:
te.sum(A[i, k] * B[k, j], axis=[k])). Schedules: split (with tail=True when
the factor does not divide), fuse, reorder, vectorize, unroll, parallel,
set_scope, compute_at, compute_inline, compute_root, cache_read and
cache_write. Python numbers take the type of the other operand; integer
division and mod truncate toward zero (C semantics).
"""

from ._kiln.te import (  # noqa: F401
    Expr,
    ReduceAxis,
    Reduction,
    Schedule,
    Stage,
    Tensor,
    call_extern,
    cast,
    compute,
    const,
    intrinsic,
    max,
    maximum,
    minimum,
    placeholder,
    reduce_axis,
    select,
    sum,
    var,
)


def create_schedule(outputs):
    """A schedule for the output tensors (one tensor or a list)."""
    if isinstance(outputs, Tensor):
        outputs = [outputs]
    return Schedule(list(outputs))


def _unary(name):
    def f(x):
        return intrinsic(name, [x])
    f.__name__ = name
    f.__doc__ = f"The {name} intrinsic of the tensor IR."
    return f


abs = _unary("abs")  # noqa: A001
sqrt = _unary("sqrt")
exp = _unary("exp")
log = _unary("log")
tanh = _unary("tanh")
erf = _unary("erf")
sin = _unary("sin")
cos = _unary("cos")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001


def pow(x, y):  # noqa: A001
    return intrinsic("pow", [x, y])
