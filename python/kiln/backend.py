"""Backends written in Python, for prototyping a new accelerator.

A Python backend is a name, patterns (with optional checks written in
Python) and a runtime object whose run(function, inputs) computes the
offloaded function's outputs, with numpy for instance::

    class NumpyRuntime:
        def run(self, function, inputs):       # function: kiln.OffloadedFunction
            ...                                # inputs: read-only numpy arrays
            return [output]                    # numpy arrays, in order

    npu = kiln.Backend("py_npu", NumpyRuntime)
    npu.pattern("relu", kiln.is_op("nn.relu", kiln.wildcard()), priority=5)

    @npu.check("dense")                        # or pattern(..., check=fn)
    def small_enough(match, options):
        return None if match.calls[0].shape[-1] <= 64 else "too wide"

kiln's generic codegen turns each offloaded function into a kiln.graph
(every attribute kept) that the runtime receives as function.nodes;
function.constants holds the weights. Moving the backend to C++ later
keeps the same patterns and the same graph.
"""

from . import _kiln


def register_backend(name, runtime, description=""):
    """Registers (or replaces) a Python backend. `runtime` is an object with
    run(function, inputs) (and optionally init(functions, options)), or a
    class, instantiated once per loaded module."""
    _kiln.register_backend(str(name), runtime, description or f"{name} (Python)")


def register_pattern(name, pattern, check=None, priority=0, description=""):
    """Registers (or replaces) the pattern "<backend>.<pattern>" of a Python
    backend. check(match, options) returns None to accept the match or a
    string saying why not, which the partition report shows."""
    _kiln.register_pattern(str(name), pattern, check, int(priority), description)


def unregister_backend(name):
    """Drops a Python backend: its patterns, codegen and runtime."""
    _kiln.unregister_backend(str(name))


class Backend:
    """A Python backend being defined: Backend(name, runtime), then its
    patterns. Usable as a context manager that unregisters it on exit."""

    def __init__(self, name, runtime, description=""):
        self.name = str(name)
        register_backend(self.name, runtime, description)

    def pattern(self, short_name, pattern, check=None, priority=0, description=""):
        """Registers the pattern "<backend>.<short_name>"."""
        full = f"{self.name}.{short_name}"
        self._patterns = getattr(self, "_patterns", {})
        self._patterns[short_name] = (pattern, priority, description)
        register_pattern(full, kiln_annotate_root(pattern), check, priority, description)
        return self

    def check(self, short_name):
        """A decorator setting the check of a pattern registered before."""
        def decorate(fn):
            pattern, priority, description = self._patterns[short_name]
            register_pattern(f"{self.name}.{short_name}", kiln_annotate_root(pattern), fn, priority, description)
            return fn
        return decorate

    def unregister(self):
        unregister_backend(self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unregister()
        return False


def kiln_annotate_root(pattern):
    """The pattern annotated "root" (the match's top), unless it already is."""
    if "root" in pattern.annotations():
        return pattern
    return _kiln.annotate("root", pattern)
