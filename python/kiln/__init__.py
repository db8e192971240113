"""kiln from Python: models in, numpy arrays out.

Graph level::

    mod = kiln.load("model.onnx", input_shapes={"x": (1, 3, 48, 192)})  # or .kir
    parted, report = kiln.partition(mod, backends=["example_npu"])
    print(report.explain())
    compiled = kiln.compile(mod, backends=["example_npu"], path="model.kmod")
    (y,) = kiln.Module.load("model.kmod").run(x=x)

Tensor level::

    from kiln import te
    A = te.placeholder((2048,), "int8", name="A")
    C = te.compute((2048,), lambda i: A[i] + 1, name="C")
    s = te.create_schedule([C])
    f = kiln.lower(s, [A, C], name="add_one")
    built = kiln.build(f, target="llvm")      # or "hexagon-v68"
    (c,) = built(numpy.arange(2048, dtype=numpy.int8))

Errors are kiln.Error (or a subclass) with .message and .file/.line/.column.
docs/python.md is the guide.
"""

import atexit as _atexit
import os as _os
import tempfile as _tempfile

import numpy as _np

from . import _kiln
from ._kiln import (
    BuiltFunction,
    CallbackError,
    CompileSummary,
    Error,
    IRModule,
    Match,
    MatchedExpr,
    OffloadedFunction,
    OpDecision,
    ParseError,
    PartitionReport,
    Pattern,
    PrimFunc,
    RegionCheck,
    UnsupportedError,
    alternatives,
    annotate,
    backends,
    is_constant,
    optional_op,
    targets,
    wildcard,
)
from . import te
from .backend import Backend, register_backend, register_pattern, unregister_backend

__all__ = [
    "Backend", "BuiltFunction", "CallbackError", "CompileSummary", "Error", "Function", "IRModule", "Match",
    "MatchedExpr", "Module", "OffloadedFunction", "OpDecision", "ParseError", "PartitionReport", "Pattern",
    "PatternInfo", "PrimFunc", "RegionCheck", "UnsupportedError", "alternatives", "annotate", "asarray", "backends",
    "build", "compile", "empty", "inspect", "interpret", "is_constant", "is_op", "load", "lower", "optional_op", "parse",
    "parse_prim", "partition", "patterns", "register_backend", "register_pattern", "targets", "te",
    "unregister_backend", "wildcard",
]

# Python backends hold Python objects in kiln's process-wide registries:
# drop them while the interpreter can still release them.
_atexit.register(_kiln._unregister_python_backends)


# ---------------------------------------------------------------- arrays

def empty(shape, dtype="float32"):
    """An uninitialised numpy array whose memory kiln uses without a copy
    (C-contiguous and 64-byte aligned, as compiled kernels expect)."""
    dtype = _np.dtype(dtype)
    shape = tuple(int(d) for d in (shape if _np.iterable(shape) else (shape,)))
    nbytes = int(_np.prod(shape, dtype=_np.int64)) * dtype.itemsize
    raw = _np.empty(nbytes + 64, dtype=_np.uint8)
    offset = (-raw.ctypes.data) % 64
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def asarray(array, dtype=None):
    """`array` itself when kiln can use its memory as it is, else such a copy."""
    a = _np.asarray(array, dtype=dtype)
    if a.flags.c_contiguous and a.ctypes.data % 64 == 0:
        return a
    out = empty(a.shape, a.dtype)
    out[...] = a
    return out


# ---------------------------------------------------------------- graph level

def load(path, input_shapes=None):
    """Loads a model: .kir text (with its .npz side file) or .onnx. ONNX
    inputs with symbolic dimensions need input_shapes={"name": (d0, ...)}
    (the model's input name, or kiln's). The module keeps the model's input
    and output names: IRModule.model_names."""
    shapes = {str(k): [int(d) for d in v] for k, v in (input_shapes or {}).items()}
    return _kiln.load(str(path), shapes)


def parse(text, filename="<string>"):
    """Parses .kir text (graph and prim functions) into an IRModule."""
    return _kiln.parse(text, filename)


def parse_prim(text, filename="<string>"):
    """Parses text holding prim functions only; returns the PrimFuncs."""
    return _kiln.parse_prim(text, filename)


def interpret(module, *args, entry="main", inputs=None, **named):
    """Runs a graph function on the reference interpreter (the ground truth);
    returns its outputs (tuples flattened) as a list of numpy arrays. Inputs
    by position or by name, the model's own (ONNX) name or kiln's; `inputs`
    (a dict) takes names that are not Python identifiers."""
    kwargs = dict(inputs or {})
    kwargs.update(named)
    return module.interpret(entry, tuple(args), kwargs)


class PatternInfo:
    """One registered pattern: name ("<backend>.<pattern>"), priority, ..."""

    __slots__ = ("name", "backend", "short_name", "priority", "description", "pattern", "annotations",
                 "has_check", "python")

    def __init__(self, d):
        for k in self.__slots__:
            setattr(self, k, d[k])

    def __repr__(self):
        return f"<PatternInfo {self.name} priority={self.priority}>"


def patterns(backend=None):
    """The patterns of one backend (or of all), in the order they claim ops:
    higher priority first, then registration order."""
    return [PatternInfo(d) for d in _kiln.patterns(backend or "")]


def is_op(op, *args, **attrs):
    """A pattern matching a call of `op` whose arguments match `args` and whose
    attributes have the values given (is_op("clip", wildcard(), a_min=0.0))."""
    return _kiln.is_op(op, list(args), attrs)


def _options(options):
    return {str(k): str(v) for k, v in (options or {}).items()}


def _backend_list(backends):
    if isinstance(backends, str):
        return [backends]
    return [str(b) for b in backends]


def partition(module, backends, merge=True, min_region_size=1, strict=False, bind_constants=True, options=None):
    """Partitions `module` for `backends`. Returns (partitioned IRModule,
    PartitionReport); the report explains every op (who took it, or why not).
    strict=True raises kiln.Error listing what would stay on the host."""
    return _kiln.partition(module, _backend_list(backends), bool(merge), int(min_region_size), bool(strict),
                           bool(bind_constants), _options(options))


def compile(module, backends=(), path=None, merge=True, min_region_size=1, strict=False, bind_constants=True,
            options=None, entry="main", strict_compile=False, compile_host=True, layout="blocked",
            float16_precision="per-op"):
    """The model compile pipeline (what `kiln compile` runs): graph
    optimizations, partitioning for `backends`, backend codegen, host ops
    compiled to native kernels. Returns a kiln.Module ready to run; with
    `path`, also writes it as a .kmod file. `layout`: "blocked" (host convs
    in channel blocks where that pays, docs/compile.md) or "nchw" (what
    `--layout` sets). `float16_precision`: "per-op" (each float16 op's
    result rounded, as the reference kernels) or "excess" (float32 between
    ops, what `--float16-precision` sets)."""
    exe, summary = _kiln.compile(module, _backend_list(backends), bool(merge), int(min_region_size), bool(strict),
                                 bool(bind_constants), _options(options), entry, bool(strict_compile),
                                 bool(compile_host), str(layout), str(float16_precision))
    compiled = Module(exe, summary)
    if path is not None:
        compiled.save(path)
    return compiled


class Module:
    """A compiled module on kiln's VM (from kiln.compile or Module.load)."""

    def __init__(self, vm, summary=None):
        self._vm = vm
        self.summary = summary  # CompileSummary (None for a loaded .kmod)

    @classmethod
    def load(cls, path):
        """Loads a .kmod file with the runtime alone."""
        return cls(_kiln.Module.load(str(path)))

    def save(self, path):
        """Writes the module as one .kmod file."""
        self._vm.save(str(path))

    @property
    def report(self):
        """The partition report of the compile (None for a loaded .kmod)."""
        return self.summary.report if self.summary is not None else None

    @property
    def inputs(self):
        """(name, shape, dtype) of each input."""
        return self._vm.inputs

    @property
    def model_names(self):
        """The model's own (ONNX) names: {"inputs": {kiln input name: model
        name}, "outputs": [model name of output 0, ...]}; run() takes either
        name of an input (names such as "onnx::Flatten_0" go in `inputs`)."""
        return self._vm.model_names

    @property
    def offload_summary(self):
        return self._vm.offload_summary

    @property
    def backends(self):
        return self._vm.backends

    @property
    def events(self):
        """The dispatch events of the last run (host ops and backend dispatches)."""
        return self._vm.events

    @property
    def checks(self):
        """The verify=True comparisons of the last run (RegionCheck each)."""
        return self._vm.checks

    def run(self, *args, verify=False, profile=None, dispatch_log=None, atol=1e-5, rtol=1e-4, inputs=None,
            **named):
        """Runs on numpy arrays given in order or by name: the model's own
        (ONNX) name or kiln's (`inputs`, a dict, takes names that are not
        Python identifiers or clash with these keywords); returns the outputs
        as a list of numpy arrays. Inputs that are C-contiguous and 64-byte
        aligned (kiln.empty, kiln.asarray) are used without a copy.

        verify=True also runs every offloaded function and compiled kernel on
        the reference kernels and raises kiln.Error naming the first mismatch
        (see .checks); profile=PATH writes a Chrome trace (Perfetto);
        dispatch_log=PATH writes one JSON line per backend dispatch."""
        kwargs = dict(inputs or {})
        kwargs.update(named)
        return self._vm.run(tuple(args), kwargs, bool(verify), float(atol), float(rtol),
                            str(profile) if profile else "", str(dispatch_log) if dispatch_log else "")

    __call__ = run

    def __repr__(self):
        names = ", ".join(f"{n}{tuple(s)} {d}" for n, s, d in self.inputs)
        return f"<kiln.Module ({names})>"


# ---------------------------------------------------------------- tensor level

def lower(schedule, args, name="main"):
    """The prim function of a schedule: `args` (placeholders and outputs, in
    order) become its buffer parameters. print() it to see the tensor IR."""
    return _kiln.lower(schedule, list(args), name)


class Function:
    """A prim function built for a target: run it on numpy arrays (JIT on the
    host; linked with kiln's Hexagon runtime and run under qemu-hexagon-static
    for hexagon-*), read its assembly or LLVM IR, save objects."""

    def __init__(self, built, link_libs=()):
        self._built = built
        self._built_link_libs = list(link_libs)
        self.vtcm_pool = ""  # the VTCM pool's figures after the last run
        self.log = ""        # Hexagon: what the executable printed in the last run

    name = property(lambda self: self._built.name)
    target = property(lambda self: self._built.target)
    lowered = property(lambda self: self._built.lowered, doc="The PrimFunc after the build passes.")
    params = property(lambda self: self._built.params, doc="name, read, written, shape, dtype of each parameter.")
    imports = property(lambda self: self._built.imports,
                       doc="Each extern symbol the code calls, its callers and where it resolves.")

    @property
    def asm(self):
        return self._built.get_source("asm")

    @property
    def ll(self):
        return self._built.get_source("ll")

    def get_source(self, kind="asm"):
        return self._built.get_source(kind)

    def save(self, path, kind=None):
        """Writes ll, asm, obj, so (host) or exe (Hexagon), by `kind` or by the
        extension (.ll, .s, .o, .so, .elf)."""
        self._built.save(str(path), kind or "")

    def object_imports(self):
        """The undefined symbols of the object file as built (LLVM's own calls,
        such as memcpy, included) and where each resolves."""
        with _tempfile.TemporaryDirectory() as tmp:
            path = _os.path.join(tmp, f"{self.name}.o")
            self.save(path, "obj")
            return inspect(path, self._built_link_libs)["imports"]

    def run(self, work_dir=None, timeout=300, **inputs):
        """Runs with inputs by parameter name; returns {name: array} of the
        buffers the function writes (zero-filled first unless given)."""
        outs, self.vtcm_pool, self.log = self._built.run(inputs, str(work_dir or ""), int(timeout))
        return outs

    def __call__(self, *args):
        """Inputs in parameter order (the buffers the function only reads);
        returns the written buffers in order: one array, or a tuple."""
        needs = [p["name"] for p in self.params if p["read"] and not p["written"]]
        if len(args) != len(needs):
            raise Error(f"@{self.name} takes {len(needs)} inputs ({', '.join(needs)}), {len(args)} given")
        outs = self.run(**dict(zip(needs, args)))
        values = tuple(outs.values())
        return values[0] if len(values) == 1 else values

    def __repr__(self):
        return f"<kiln.Function @{self.name} for {self.target}>"


def build(func, target="llvm", link_libs=(), vtcm_capacity=None):
    """Builds a PrimFunc for `target` ("llvm", "hexagon-v66|v68|v69|v73"):
    the build passes run, and every import must resolve (the runtime ABI, the
    target's runtime or a library in link_libs), or kiln.Error names it."""
    if isinstance(func, _kiln.IRModule):
        prims = func.prim_functions
        if len(prims) != 1:
            raise Error(f"the module has {len(prims)} prim functions; pass one of module.prim_functions")
        func = prims[0]
    libs = [str(p) for p in link_libs]
    return Function(_kiln.build(func, str(target), libs, vtcm_capacity), libs)


def inspect(path, link_libs=()):
    """What `kiln inspect` shows of an object file or shared library: its
    exports, and each import with where it resolves ("runtime ABI", "Hexagon
    runtime", "C library", "library", or "UNRESOLVED")."""
    return _kiln.inspect(str(path), [str(p) for p in link_libs])
