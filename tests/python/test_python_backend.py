"""A backend defined in Python: patterns with Python checks, a numpy runtime."""
import threading

import numpy as np
import pytest

import kiln
from conftest import random
from numpy_npu import NumpyNpu


def stride_one(match, options):
    """The prototype computes only unit-stride convolutions."""
    conv = match.find_call("nn.conv2d")
    if list(conv.attrs["strides"]) != [1, 1]:
        return f"strides {list(conv.attrs['strides'])} are not supported (1 only)"
    return None


@pytest.fixture
def py_npu():
    runtime = NumpyNpu()
    npu = kiln.Backend("py_npu", runtime)
    conv = kiln.is_op("nn.conv2d", kiln.wildcard(), kiln.is_constant())
    npu.pattern("conv2d_bias_relu", kiln.is_op("nn.relu", kiln.is_op("add", conv, kiln.is_constant())),
                check=stride_one, priority=20)
    npu.pattern("conv2d_relu", kiln.is_op("nn.relu", conv), check=stride_one, priority=15)
    npu.pattern("dense", kiln.is_op("nn.dense", kiln.wildcard(), kiln.is_constant()), priority=10)
    yield npu, runtime
    if "py_npu" in kiln._kiln.python_backends():
        npu.unregister()


@pytest.fixture(scope="module")
def small_cnn(source_dir):
    return kiln.load(source_dir / "examples/small_cnn/small_cnn.kir")


def test_patterns_listed(py_npu):
    names = [(p.name, p.priority, p.python, p.has_check) for p in kiln.patterns("py_npu")]
    assert names == [("py_npu.conv2d_bias_relu", 20, True, True), ("py_npu.conv2d_relu", 15, True, True),
                     ("py_npu.dense", 10, True, False)]
    assert "py_npu" in kiln.backends()


def test_small_cnn_partitions_and_runs(py_npu, small_cnn):
    npu, runtime = py_npu
    image = random((1, 3, 32, 32), 21)
    (want,) = kiln.interpret(small_cnn, image)
    compiled = kiln.compile(small_cnn, backends=["py_npu"])
    report = compiled.report
    by_op = {}
    for d in report.ops:
        by_op.setdefault(d.op, []).append(d)
    # The first conv (stride 1, its bias and the folded batch norm) is offloaded,
    # the strided one is left on the host with the check's reason, the dense too.
    offloaded = {d.pattern for d in report.ops if d.offloaded}
    assert "py_npu.conv2d_bias_relu" in offloaded and "py_npu.dense" in offloaded
    strided = [d for d in by_op["nn.conv2d"] if not d.offloaded]
    assert len(strided) == 1
    assert "strides [2, 2] are not supported (1 only)" in strided[0].reason
    assert "strides [2, 2] are not supported" in report.explain()

    (got,) = compiled.run(image=image)
    assert runtime.runs >= 2  # dispatched to Python
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert any(e["backend"] == "py_npu" and e["engine"] == "PYTHON" for e in compiled.events)
    # verify=True compares the Python backend's regions with the reference kernels.
    compiled.run(image=image, verify=True)
    assert [c.ok for c in compiled.checks if c.backend == "py_npu"] == [True] * 2


def test_kmod_with_python_backend(py_npu, small_cnn, tmp_path):
    path = tmp_path / "cnn.kmod"
    image = random((1, 3, 32, 32), 22)
    (want,) = kiln.compile(small_cnn, backends=["py_npu"], path=path).run(image)
    (got,) = kiln.Module.load(path).run(image)
    assert np.array_equal(got, want)
    # Without the backend registered, the .kmod cannot run: the error names it.
    py_npu[0].unregister()
    with pytest.raises(kiln.Error, match="py_npu"):
        kiln.Module.load(path)


def test_partition_unoptimized_module(py_npu, small_cnn):
    parted, report = kiln.partition(small_cnn, backends=["py_npu"])
    # Without graph optimizations the batch norm sits between conv+bias and
    # relu, so only the second (strided) conv + relu could match, and its
    # check refuses it.
    reasons = [d.reason for d in report.ops if d.op == "nn.conv2d"]
    assert any("strides [2, 2] are not supported" in r for r in reasons)
    image = random((1, 3, 32, 32), 23)
    np.testing.assert_allclose(kiln.interpret(parted, image)[0], kiln.interpret(small_cnn, image)[0],
                               rtol=1e-6, atol=1e-7)


def test_exception_in_check_is_a_clear_error(py_npu, small_cnn):
    npu, _ = py_npu

    def broken(match, options):
        raise ValueError("the check broke")

    npu.pattern("dense", kiln.is_op("nn.dense", kiln.wildcard(), kiln.is_constant()), check=broken, priority=10)
    with pytest.raises(kiln.CallbackError) as info:
        kiln.compile(small_cnn, backends=["py_npu"])
    e = info.value
    assert "check of py_npu.dense raised ValueError: the check broke" in str(e)
    assert "test_python_backend.py" in str(e)  # where it was raised
    assert isinstance(e.__cause__, ValueError)
    # The registry still works after the failure.
    npu.pattern("dense", kiln.is_op("nn.dense", kiln.wildcard(), kiln.is_constant()), priority=10)
    kiln.compile(small_cnn, backends=["py_npu"])


def test_check_returning_a_non_string(py_npu, small_cnn):
    npu, _ = py_npu
    npu.pattern("dense", kiln.is_op("nn.dense", kiln.wildcard(), kiln.is_constant()),
                check=lambda m, o: 42, priority=10)
    with pytest.raises(kiln.Error, match="returned int; a check returns None"):
        kiln.partition(small_cnn, backends=["py_npu"])


def test_exception_in_runtime_is_a_clear_error(small_cnn):
    class Broken:
        def run(self, function, inputs):
            raise RuntimeError("device on fire")

    with kiln.Backend("py_broken", Broken()) as b:
        b.pattern("dense", kiln.is_op("nn.dense", kiln.wildcard(), kiln.is_constant()))
        compiled = kiln.compile(small_cnn, backends=["py_broken"])
        with pytest.raises(kiln.CallbackError) as info:
            compiled.run(random((1, 3, 32, 32), 24))
        assert "backend py_broken: run of" in str(info.value)
        assert "RuntimeError: device on fire" in str(info.value)
        assert isinstance(info.value.__cause__, RuntimeError)


def test_runtime_returning_a_wrong_shape(small_cnn):
    class WrongShape:
        def run(self, function, inputs):
            return [np.zeros((3,), np.float32)]

    with kiln.Backend("py_wrong", WrongShape) as b:  # a class: one instance per module
        b.pattern("dense", kiln.is_op("nn.dense", kiln.wildcard(), kiln.is_constant()))
        compiled = kiln.compile(small_cnn, backends=["py_wrong"])
        with pytest.raises(kiln.Error, match=r"py_wrong_main_0: output 0 is \(3,\) float32, expected \(1, 10\) float32"):
            compiled.run(random((1, 3, 32, 32), 25))


def test_bad_registrations():
    with pytest.raises(kiln.Error, match="built into kiln"):
        kiln.register_backend("example_npu", NumpyNpu())
    with pytest.raises(kiln.Error, match="register the backend nobody first"):
        kiln.register_pattern("nobody.relu", kiln.is_op("nn.relu", kiln.wildcard()))
    with pytest.raises(kiln.Error, match="no run"):
        kiln.register_backend("py_norun", object())
    with pytest.raises(kiln.Error, match="unknown op|nn.nosuch"):
        kiln.is_op("nn.nosuch", kiln.wildcard())
    with pytest.raises(kiln.Error, match="no Python backend"):
        kiln.unregister_backend("example_npu")


def test_runs_from_many_threads(py_npu, small_cnn):
    """Python threads running a module whose backend calls back into Python:
    each run releases the GIL, each callback takes it; none may deadlock."""
    compiled = kiln.compile(small_cnn, backends=["py_npu"])
    images = [random((1, 3, 32, 32), 30 + i) for i in range(4)]
    wants = [kiln.interpret(small_cnn, im)[0] for im in images]
    results = [None] * 4

    def work(i):
        for _ in range(3):
            results[i] = compiled.run(images[i])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a run is stuck"
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


RELU = """
def @main(%x: Tensor[(4, 16), float32]) -> Tensor[(4, 16), float32] {
  %y = nn.relu(%x)
  return %y
}
"""


class Recorder:
    """Records where its inputs live; relu with numpy."""

    def __init__(self):
        self.addresses = []

    def run(self, function, inputs):
        self.addresses.append(inputs[0].ctypes.data)
        assert not inputs[0].flags.writeable  # kiln's memory: read-only for the backend
        return np.maximum(inputs[0], 0)


def test_aligned_inputs_reach_the_backend_without_copies():
    rec = Recorder()
    with kiln.Backend("py_rec", rec) as b:
        b.pattern("relu", kiln.is_op("nn.relu", kiln.wildcard()))
        compiled = kiln.compile(kiln.parse(RELU), backends=["py_rec"])
        x = kiln.empty((4, 16), "float32")
        x[...] = random((4, 16), 40)
        (y,) = compiled.run(x)
        assert rec.addresses[-1] == x.ctypes.data  # the caller's memory itself
        assert np.array_equal(y, np.maximum(x, 0))
        # An unaligned view is copied once into aligned memory; same values.
        raw = np.zeros(4 * 16 + 1, np.float32)
        unaligned = raw[1:].reshape(4, 16)
        unaligned[...] = x
        (y2,) = compiled.run(unaligned)
        assert rec.addresses[-1] % 64 == 0 and rec.addresses[-1] != unaligned.ctypes.data
        assert np.array_equal(y2, y)


def test_exception_in_runtime_init():
    class BadInit:
        def init(self, functions, options):
            raise KeyError("no device")

        def run(self, function, inputs):
            return inputs

    with kiln.Backend("py_badinit", BadInit) as b:
        b.pattern("relu", kiln.is_op("nn.relu", kiln.wildcard()))
        with pytest.raises(kiln.CallbackError, match="backend py_badinit: init raised KeyError") as info:
            kiln.compile(kiln.parse(RELU), backends=["py_badinit"])
        assert isinstance(info.value.__cause__, KeyError)


def test_backend_running_its_own_module_is_an_error():
    holder = {}

    class Reentrant:
        def run(self, function, inputs):
            return holder["module"].run(np.array(inputs[0]))

    with kiln.Backend("py_reenter", Reentrant()) as b:
        b.pattern("relu", kiln.is_op("nn.relu", kiln.wildcard()))
        holder["module"] = kiln.compile(kiln.parse(RELU), backends=["py_reenter"])
        x = random((4, 16), 41)
        with pytest.raises(kiln.CallbackError, match="running on this thread already"):
            holder["module"].run(x)
        holder["module"] = None


def test_init_sees_every_function(py_npu, small_cnn):
    npu, runtime = py_npu
    kiln.compile(small_cnn, backends=["py_npu"])
    assert runtime.functions  # init got the offloaded functions by symbol
    fn = next(iter(runtime.functions.values()))
    assert fn.symbol in runtime.functions and fn.nodes and fn.to_json().startswith("{")


def test_compiles_from_many_threads_with_python_checks(small_cnn):
    """Compiles in several Python threads, each calling Python checks (one of
    which calls kiln itself), while another thread registers patterns."""
    def reentrant_check(match, options):
        kiln.parse(RELU)  # kiln from inside a check: the compiler lock is recursive
        return None

    with kiln.Backend("py_mt", NumpyNpu()) as b:
        b.pattern("dense", kiln.is_op("nn.dense", kiln.wildcard(), kiln.is_constant()), check=reentrant_check)
        image = random((1, 3, 32, 32), 70)
        (want,) = kiln.interpret(small_cnn, image)
        errors, results = [], []

        def compile_and_run():
            try:
                results.append(kiln.compile(small_cnn, backends=["py_mt"]).run(image)[0])
            except Exception as e:  # reported below
                errors.append(e)

        def register():
            for i in range(20):
                b.pattern(f"relu{i}", kiln.is_op("nn.relu", kiln.wildcard()), check=lambda m, o: "not today",
                          priority=1)

        threads = [threading.Thread(target=compile_and_run) for _ in range(3)] + [threading.Thread(target=register)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a compile is stuck"
        assert not errors, errors
        assert len(results) == 3
        for got in results:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_checks_see_the_backend_options(py_npu, small_cnn):
    npu, _ = py_npu
    seen = []

    def units_limit(match, options):
        seen.append(dict(options))
        units = match.find_call("nn.dense").shape[-1]
        limit = int(options.get("max_units", "1000"))
        return None if units <= limit else f"{units} units over max_units={limit}"

    npu.pattern("dense", kiln.is_op("nn.dense", kiln.wildcard(), kiln.is_constant()), check=units_limit, priority=10)
    _, report = kiln.partition(small_cnn, backends=["py_npu"], options={"py_npu.max_units": "4"})
    assert {"max_units": "4"} in seen
    dense = next(d for d in report.ops if d.op == "nn.dense")
    assert not dense.offloaded and "10 units over max_units=4" in dense.reason
    _, report = kiln.partition(small_cnn, backends=["py_npu"], options={"max_units": "16"})  # for every backend
    assert next(d for d in report.ops if d.op == "nn.dense").offloaded
