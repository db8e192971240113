#!/usr/bin/python3
"""The VTCM forum question, answered from Python by running it.

A and B are 2048-element int8 tensors; the schedule copies both into VTCM
(scope local.vtcm) before C = A + B. This script prints the scheduled tensor
IR, the IR after the build passes (each VTCM buffer allocated with its size
in BYTES, a null check naming it, the frees), the Hexagon assembly lines
that call HexagonBackendAllocateVTCM, where every import of the kernel
resolves, and then links the kernel with kiln's Hexagon runtime, runs it on
Hexagon v68 under qemu-hexagon-static and checks C. The float32 variant
shows that the sizes are bytes, not elements (8192 for 2048 floats).

Run after `make`:
    PYTHONPATH=build/python /usr/bin/python3 examples/python/vtcm_alloc.py [--target hexagon-v68|llvm]
It exits with 1 when a check fails.
"""
import argparse
import re
import sys

import numpy as np

import kiln
from kiln import te

N = 2048


def vtcm_kernel(dtype):
    A = te.placeholder((N,), dtype, name="A")
    B = te.placeholder((N,), dtype, name="B")
    C = te.compute((N,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C)
    s.cache_read(A, "local.vtcm", [C])
    s.cache_read(B, "local.vtcm", [C])
    s[C].vectorize(s[C].leaf(0))
    return kiln.lower(s, [A, B, C], name="alloc_vtcm")


def fail(message):
    print("WRONG:", message)
    return False


def run(dtype, target, show):
    f = vtcm_kernel(dtype)
    elem_bytes = np.dtype(dtype).itemsize
    ok = True
    if show:
        print("== scheduled tensor IR\n" + str(f))
    lowered = str(f.lower_for_build(target))
    sizes = [int(s) for s in re.findall(r"\"HexagonBackendAllocateVTCM\", uint32\((\d+)\)", lowered)]
    if show:
        print(f"== after the build passes for {target} (sizes in bytes)\n{lowered}")
    print(f"{dtype}: VTCM allocations of {sizes} bytes for {N} elements of {elem_bytes} byte(s)")
    if sizes != [N * elem_bytes] * 2:
        ok = fail(f"expected two allocations of {N * elem_bytes} bytes")

    built = kiln.build(f, target=target)
    if target.startswith("hexagon"):
        calls = [line.strip() for line in built.asm.splitlines() if line.strip().startswith("call ")]
        if show:
            print(f"== {target} assembly: the calls")
            for line in calls:
                print("  " + line)
        if not any("HexagonBackendAllocateVTCM" in line for line in calls):
            ok = fail("no call HexagonBackendAllocateVTCM in the assembly")
    # The tensor IR's extern calls, then the object's undefined symbols (which
    # add what LLVM calls itself, such as memcpy for the copies into VTCM).
    for title, imports in (("the kernel's imports", built.imports),
                           ("the object file's undefined symbols", built.object_imports())):
        print(f"== {title} and where each resolves")
        for imp in imports:
            print(f"  {imp['symbol']:28s} -> {imp['source']}{' ' + imp['library'] if imp['library'] else ''}")
            if imp["source"] == "UNRESOLVED":
                ok = fail(f"{imp['symbol']} does not resolve")

    i = np.arange(N)
    a = (i % 64 - 32).astype(dtype)
    b = ((i * 5) % 50).astype(dtype)
    c = built(a, b)
    where = "Hexagon v68 under qemu-hexagon-static" if target.startswith("hexagon") else "the host (JIT)"
    if not np.array_equal(c, (a + b).astype(dtype)):
        ok = fail(f"C differs from A + B on {where}")
    else:
        print(f"C is right on {where}: all {N} elements equal A + B")
    print(f"VTCM pool ({'the Hexagon runtime' if target.startswith('hexagon') else 'the host runtime'}): "
          f"{built.vtcm_pool}")
    if f"high-water {2 * N * elem_bytes} B" not in built.vtcm_pool or " 0 live)" not in built.vtcm_pool:
        ok = fail("the pool should have held both buffers at once and freed them")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="hexagon-v68", help="hexagon-v66|v68|v69|v73 or llvm")
    args = parser.parse_args()
    ok = run("int8", args.target, show=True)
    ok = run("float32", "llvm", show=False) and ok
    print("\nOK" if ok else "\nFAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except kiln.Error as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
