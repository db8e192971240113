#!/usr/bin/python3
"""The bring-your-own-codegen tutorial from Python, for MatmulReLU and
Conv2dReLU:

  1. list the patterns the example NPU registered (names and priorities)
  2. partition each model for it and explain every decision
  3. compile to one .kmod file (backend codegen, host code), load it back
  4. run it on numpy arrays and check the VALUES against the reference
     interpreter
  5. do the same with an NPU prototyped in Python: patterns with a check
     written in Python, and a runtime that computes with numpy

Run after `make`:
    PYTHONPATH=build/python /usr/bin/python3 examples/python/byoc_tutorial.py
It exits with 1 when any value differs from the reference.
"""
import pathlib
import sys
import tempfile

import numpy as np

import kiln

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = [
    (ROOT / "examples/matmul_relu.kir", "matmul_relu_fused"),
    (ROOT / "examples/conv2d_relu.kir", "conv2d_relu_fused"),
]


def ramp(shape, scale=0.25):
    """Deterministic inputs of both signs, so the relu matters."""
    n = int(np.prod(shape))
    return (scale * ((np.arange(n) * 7) % 13 - 6)).astype(np.float32).reshape(shape)


def check(name, got, want, atol=1e-5):
    err = float(np.max(np.abs(got - want)))
    print(f"{name}: max abs difference from the reference {err:.3g} over {want.size} values")
    return err <= atol and got.shape == want.shape


def run_model(path, backend, expected_pattern, workdir):
    print(f"\n== {path.name} on {backend}")
    mod = kiln.load(path)
    parted, report = kiln.partition(mod, backends=[backend])
    print(report.explain(), end="")
    print("offload:", report.summary())
    if report.region_count != 1 or {d.pattern for d in report.ops} != {f"{backend}.{expected_pattern}"}:
        print(f"FAIL: expected one region from {backend}.{expected_pattern}")
        return False

    kmod = workdir / f"{path.stem}.{backend}.kmod"
    kiln.compile(mod, backends=[backend], path=kmod)
    module = kiln.Module.load(kmod)  # what a deployment does: the runtime alone
    print(f"built {kmod.name}; inputs {module.inputs}")

    inputs = {name: ramp(shape) for name, shape, _ in module.inputs}
    (got,) = module.run(**inputs)
    for e in module.events:
        if e["backend"] != "host":
            print(f"dispatch: {e['function']} on {e['backend']} ({e['engine']}): {e['op']}")
    (want,) = kiln.interpret(mod, **inputs)
    return check(path.name, got, want)


# ---------------------------------------------------------------- an NPU in Python

def conv2d(x, w, attrs):
    pad = list(attrs["padding"])
    top, left, bottom, right = pad * 2 if len(pad) == 2 else pad
    sh, sw = attrs["strides"]
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    o, c, kh, kw = w.shape
    oh, ow = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    out = np.zeros((x.shape[0], o, oh, ow), dtype=np.float32)
    for ky in range(kh):
        for kx in range(kw):
            window = xp[:, :, ky:ky + sh * oh:sh, kx:kx + sw * ow:sw]   # (n, c, oh, ow)
            out += np.einsum("nchw,oc->nohw", window, w[:, :, ky, kx])
    return out


KERNELS = {
    "matmul": lambda args, attrs: args[0] @ args[1],
    "nn.conv2d": lambda args, attrs: conv2d(args[0], args[1], attrs),
    "nn.relu": lambda args, attrs: np.maximum(args[0], 0),
}


class NumpyNpu:
    """The runtime: each offloaded function arrives as a kiln.graph (every
    node with its op, inputs and attributes); run computes it with numpy."""

    def run(self, function, inputs):
        values = dict(function.constants)
        values.update({name: x for (name, _, _), x in zip(function.inputs, inputs)})
        for node in function.nodes:
            values[node["name"]] = KERNELS[node["op"]]([values[v] for v in node["inputs"]], node["attrs"])
        return [values[name] for name in function.outputs]


def plain_conv(match, options):
    """The prototype supports groups=1 and no dilation; the reason shows in the report."""
    conv = match.find_call("nn.conv2d")
    if conv.attrs["groups"] != 1 or list(conv.attrs["dilation"]) != [1, 1]:
        return "only plain convolutions (groups=1, dilation 1)"
    return None


def main():
    print("example_npu patterns (priority, name), in claim order:")
    for p in kiln.patterns("example_npu"):
        print(f"  {p.priority:3d}  {p.name}")

    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        for path, pattern in MODELS:
            ok = run_model(path, "example_npu", pattern, workdir) and ok

        with kiln.Backend("py_npu", NumpyNpu()) as npu:
            x = kiln.wildcard()
            npu.pattern("matmul_relu_fused", kiln.is_op("nn.relu", kiln.is_op("matmul", x, x)), priority=20)
            npu.pattern("conv2d_relu_fused", kiln.is_op("nn.relu", kiln.is_op("nn.conv2d", x, x)),
                        check=plain_conv, priority=20)
            print("\npy_npu patterns:", [(p.name, p.priority) for p in kiln.patterns("py_npu")])
            for path, pattern in MODELS:
                ok = run_model(path, "py_npu", pattern, workdir) and ok

    print("\nOK: every model matches the reference" if ok else "\nFAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except kiln.Error as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
