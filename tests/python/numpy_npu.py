"""A prototype NPU written in Python for the tests: numpy kernels for the ops
its patterns claim, run node by node over the offloaded function's graph."""
import numpy as np


def conv2d(x, w, attrs):
    assert attrs.get("groups", 1) == 1 and list(attrs.get("dilation", [1, 1])) == [1, 1]
    pad = list(attrs.get("padding", [0, 0, 0, 0]))
    if len(pad) == 2:
        pad = pad * 2
    top, left, bottom, right = pad
    sh, sw = attrs.get("strides", [1, 1])
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c, h, wd = xp.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    # im2col: (n, c*kh*kw, oh*ow), then one matrix product.
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for ky in range(kh):
        for kx in range(kw):
            cols[:, :, ky, kx] = xp[:, :, ky:ky + sh * oh:sh, kx:kx + sw * ow:sw]
    out = w.reshape(o, -1) @ cols.reshape(n, c * kh * kw, oh * ow)
    return out.reshape(n, o, oh, ow).astype(x.dtype)


KERNELS = {
    "nn.conv2d": lambda a, attrs: conv2d(a[0], a[1], attrs),
    "nn.relu": lambda a, attrs: np.maximum(a[0], 0),
    "add": lambda a, attrs: a[0] + a[1],
    "nn.dense": lambda a, attrs: a[0] @ a[1].T,
    "matmul": lambda a, attrs: a[0] @ a[1],
}


class NumpyNpu:
    """The runtime: run(function, inputs) returns the outputs."""

    def __init__(self):
        self.runs = 0
        self.functions = {}

    def init(self, functions, options):
        self.functions = dict(functions)

    def run(self, function, inputs):
        self.runs += 1
        values = dict(function.constants)
        values.update({name: x for (name, _, _), x in zip(function.inputs, inputs)})
        for node in function.nodes:
            args = [values[v] for v in node["inputs"]]
            out_name, _, dtype = node["outputs"][0]
            values[out_name] = np.asarray(KERNELS[node["op"]](args, node["attrs"]), dtype=dtype)
        return [values[name] for name in function.outputs]
