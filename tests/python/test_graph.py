"""Graph level: load, parse, print, patterns, partition, compile, run."""
import json

import numpy as np
import pytest

import kiln
from conftest import ramp, random

MATMUL_RELU = """
def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(4, 8), float32]) -> Tensor[(2, 8), float32] {
  %y = matmul(%x, %w)
  %z = nn.relu(%y)
  return %z
}
"""


def test_parse_print_round_trip():
    mod = kiln.parse(MATMUL_RELU)
    text = str(mod)
    assert "%y = matmul(%x, %w" in text and "%z = nn.relu(%y)" in text
    assert str(kiln.parse(text)) == text
    assert mod.functions == ["main"]
    assert mod.params() == [("x", (2, 4), "float32"), ("w", (4, 8), "float32")]


def test_interpret_matches_numpy():
    mod = kiln.parse(MATMUL_RELU)
    x, w = random((2, 4), 1), random((4, 8), 2)
    (z,) = kiln.interpret(mod, x, w)
    np.testing.assert_allclose(z, np.maximum(x @ w, 0), rtol=1e-6, atol=1e-6)
    (z2,) = kiln.interpret(mod, w=w, x=x)
    assert np.array_equal(z, z2)


def test_load_kir_with_side_file(source_dir):
    mod = kiln.load(source_dir / "examples/small_cnn/small_cnn.kir")
    assert mod.params() == [("image", (1, 3, 32, 32), "float32")]
    (probs,) = kiln.interpret(mod, image=ramp((1, 3, 32, 32)))
    assert probs.shape == (1, 10)
    assert abs(float(probs.sum()) - 1.0) < 1e-5  # a softmax


def test_patterns_of_example_npu():
    ps = kiln.patterns("example_npu")
    by_name = {p.name: p for p in ps}
    assert by_name["example_npu.matmul_relu_fused"].priority == 20
    assert by_name["example_npu.conv2d"].priority == 10
    assert by_name["example_npu.relu"].priority == 5
    priorities = [p.priority for p in ps]
    assert priorities == sorted(priorities, reverse=True)  # claim order
    assert all(p.backend == "example_npu" and not p.python for p in ps)
    assert "example_npu" in kiln.backends()


def test_partition_report():
    mod = kiln.parse(MATMUL_RELU)
    parted, report = kiln.partition(mod, backends=["example_npu"])
    assert report.offloaded_count == 2 and report.region_count == 1
    assert [d.pattern for d in report.ops] == ["example_npu.matmul_relu_fused"] * 2
    assert all(d.backend == "example_npu" and d.offloaded for d in report.ops)
    assert report.find("z").region == report.ops[0].region
    region = report.ops[0].region
    attrs = parted.function_attrs(region)
    assert attrs["Codegen"] == "example_npu" and attrs["global_symbol"] == region
    assert "2 of 2 ops offloaded" in report.summary()
    assert json.loads(report.to_json())
    # The partitioned module still computes the same values.
    x, w = random((2, 4), 3), random((4, 8), 4)
    assert np.array_equal(kiln.interpret(parted, x, w)[0], kiln.interpret(mod, x, w)[0])


def test_partition_min_region_size_and_strict():
    mod = kiln.parse(MATMUL_RELU)
    _, report = kiln.partition(mod, backends=["example_npu"], min_region_size=3)
    assert report.offloaded_count == 0
    assert all(d.reason for d in report.ops)
    with pytest.raises(kiln.Error, match="host"):
        kiln.partition(mod, backends=["example_npu"], min_region_size=3, strict=True)


def test_compile_run_save_load(tmp_path):
    mod = kiln.parse(MATMUL_RELU)
    x, w = random((2, 4), 5), random((4, 8), 6)
    (want,) = kiln.interpret(mod, x, w)
    path = tmp_path / "mm.kmod"
    compiled = kiln.compile(mod, backends=["example_npu"], path=path)
    assert compiled.report.offloaded_count == 2
    (got,) = compiled.run(x=x, w=w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    loaded = kiln.Module.load(path)
    assert loaded.backends == ["example_npu"]
    assert loaded.inputs == [("x", (2, 4), "float32"), ("w", (4, 8), "float32")]
    (again,) = loaded.run(x, w)
    assert np.array_equal(again, got)
    assert any(e["backend"] == "example_npu" for e in loaded.events)


def test_host_compile_matches_reference(source_dir):
    mod = kiln.load(source_dir / "examples/small_cnn/small_cnn.kir")
    image = random((1, 3, 32, 32), 7)
    (want,) = kiln.interpret(mod, image)
    compiled = kiln.compile(mod)
    assert compiled.summary.lowered_ops > 0
    (got,) = compiled.run(image=image)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_verify_and_profile(tmp_path, source_dir):
    mod = kiln.load(source_dir / "examples/small_cnn/small_cnn.kir")
    compiled = kiln.compile(mod, backends=["example_npu"])
    trace = tmp_path / "trace.json"
    (got,) = compiled.run(random((1, 3, 32, 32), 8), verify=True, profile=trace)
    assert compiled.checks and all(c.ok for c in compiled.checks)
    assert any(not c.host_kernel for c in compiled.checks)
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any("example_npu" in json.dumps(e) for e in events)


def test_aligned_inputs_cross_without_copies():
    a = kiln.empty((2, 4), "float32")
    assert a.ctypes.data % 64 == 0 and a.flags.c_contiguous
    a[...] = random((2, 4), 9)
    assert kiln.asarray(a) is a
    strided = np.asfortranarray(random((4, 2), 10)).T  # not C-contiguous: copied, same values
    mod = kiln.parse(MATMUL_RELU)
    w = random((4, 8), 11)
    (z1,) = kiln.compile(mod).run(strided, w)
    (z2,) = kiln.interpret(mod, np.ascontiguousarray(strided), w)
    np.testing.assert_allclose(z1, z2, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- errors

def test_parse_error_has_location():
    with pytest.raises(kiln.ParseError) as info:
        kiln.parse("def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {\n  %y = nn.nosuchop(%x)\n  return %y\n}\n",
                   filename="bad.kir")
    e = info.value
    assert isinstance(e, kiln.Error)
    assert e.file == "bad.kir" and e.line == 2 and e.column > 0
    assert "nosuchop" in e.message


def test_missing_and_bad_files(tmp_path):
    with pytest.raises(kiln.Error, match="nothere"):
        kiln.load(tmp_path / "nothere.kir")
    with pytest.raises(kiln.Error, match=r"\.kir|\.onnx"):
        kiln.load(tmp_path / "model.txt")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    with pytest.raises(kiln.Error):
        kiln.load(bad)
    with pytest.raises(kiln.Error, match="nothere"):
        kiln.Module.load(tmp_path / "nothere.kmod")


def test_corrupted_kmod(tmp_path):
    path = tmp_path / "mm.kmod"
    kiln.compile(kiln.parse(MATMUL_RELU), backends=["example_npu"], path=path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(kiln.Error, match="checksum|corrupt"):
        kiln.Module.load(path)
    path.write_bytes(bytes(data[:40]))
    with pytest.raises(kiln.Error):
        kiln.Module.load(path)


def test_wrong_inputs():
    compiled = kiln.compile(kiln.parse(MATMUL_RELU))
    x, w = random((2, 4), 1), random((4, 8), 2)
    with pytest.raises(kiln.Error, match=r"input x is \(4, 2\) float32, expected \(2, 4\) float32"):
        compiled.run(x.reshape(4, 2), w)
    with pytest.raises(kiln.Error, match=r"float64.*astype"):
        compiled.run(x.astype(np.float64), w)
    with pytest.raises(kiln.Error, match="no input 'y'"):
        compiled.run(x, w, y=w)
    with pytest.raises(kiln.Error, match="no value for input 'w'"):
        compiled.run(x)
    with pytest.raises(kiln.Error, match="given twice"):
        compiled.run(x, x=x, w=w)
    with pytest.raises(kiln.Error, match="numpy array"):
        compiled.run([1, 2], w)


def test_unknown_backend_and_option():
    mod = kiln.parse(MATMUL_RELU)
    with pytest.raises(kiln.Error, match="unknown backend 'nosuch'.*example_npu"):
        kiln.partition(mod, backends=["nosuch"])
    with pytest.raises(kiln.Error, match="nosuch"):
        kiln.compile(mod, backends=["nosuch"])
    with pytest.raises(kiln.Error, match="unknown backend"):
        kiln.patterns("nosuch")
    with pytest.raises(kiln.Error):
        kiln.compile(mod, backends=["example_npu"], options={"example_npu.no_such_key": "1"})


def test_unknown_entry():
    with pytest.raises(kiln.Error, match="no graph function @other"):
        kiln.interpret(kiln.parse(MATMUL_RELU), entry="other")


def test_output_never_aliases_an_input():
    mod = kiln.parse("def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {\n  return %x\n}\n")
    x = kiln.asarray(np.array([1, 2, 3], np.float32))
    (y,) = kiln.compile(mod).run(x)
    assert np.array_equal(y, x) and not np.shares_memory(y, x)
    y[0] = 10
    assert x[0] == 1


def test_save_and_load_kir(tmp_path, source_dir):
    mod = kiln.load(source_dir / "examples/small_cnn/small_cnn.kir")
    mod.save(tmp_path / "cnn.kir")
    again = kiln.load(tmp_path / "cnn.kir")
    assert str(again) == str(mod)
    image = random((1, 3, 32, 32), 12)
    assert np.array_equal(kiln.interpret(again, image)[0], kiln.interpret(mod, image)[0])


def test_both_layouts_give_the_interpreters_values(source_dir):
    """Host convs in channel blocks (the default) or in NCHW: the same
    values as the reference interpreter; any other layout is an error."""
    mod = kiln.load(source_dir / "examples/small_cnn/small_cnn.kir")
    x = random((1, 3, 32, 32), 70)
    (want,) = kiln.interpret(mod, x)
    for layout in ("blocked", "nchw"):
        (got,) = kiln.compile(mod, layout=layout).run(x)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(kiln.Error, match="layout='nhwc' must be 'blocked' or 'nchw'"):
        kiln.compile(mod, layout="nhwc")


def test_float16_precision():
    """A float16 model: per-op rounding gives the interpreter's values, excess
    precision the float32 model's (the same weights) rounded once; any other
    value is an error."""
    rng = np.random.default_rng(72)

    def const(shape, scale):
        values = (rng.uniform(-scale, scale, shape).astype(np.float16).astype(np.float32)).ravel()
        return f"const(Tensor[({', '.join(map(str, shape))}), DTYPE], [{', '.join(map(repr, values.tolist()))}])"

    text = f"""
def @main(%x: Tensor[(1, 4, 12, 12), DTYPE]) -> Tensor[(1, 10), DTYPE] {{
  %c = nn.conv2d(%x, {const((8, 4, 3, 3), 0.3)}, padding=[1, 1, 1, 1])
  %b = add(%c, {const((1, 8, 1, 1), 0.1)})
  %r = nn.relu(%b)
  %p = nn.conv2d(%r, {const((8, 8, 1, 1), 0.4)})
  %g = nn.adaptive_avg_pool2d(%p, output_size=[1, 1])
  %f = flatten(%g)
  %d = nn.dense(%f, {const((10, 8), 0.5)})
  %s = nn.softmax(%d)
  return %s
}}"""
    mod16 = kiln.parse(text.replace("DTYPE", "float16"))
    mod32 = kiln.parse(text.replace("DTYPE", "float32"))
    x = random((1, 4, 12, 12), 71).astype(np.float16)
    (per_op,) = kiln.interpret(mod16, x)
    (wide,) = kiln.interpret(mod32, x.astype(np.float32))
    (got,) = kiln.compile(mod16).run(x)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), per_op.astype(np.float32), rtol=0, atol=4 / 2048)
    (got,) = kiln.compile(mod16, float16_precision="excess").run(x)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), wide.astype(np.float16).astype(np.float32),
                               rtol=0, atol=1 / 2048)
    with pytest.raises(kiln.Error, match="float16_precision='fast' must be 'per-op' or 'excess'"):
        kiln.compile(mod16, float16_precision="fast")


def test_outputs_survive_later_runs(source_dir):
    """Outputs are returned without a copy: they must not live in memory the
    next run reuses (the VM's arena, a backend's buffers)."""
    mod = kiln.load(source_dir / "examples/small_cnn/small_cnn.kir")
    for backends in ([], ["example_npu"]):
        compiled = kiln.compile(mod, backends=backends)
        x1, x2 = random((1, 3, 32, 32), 60), random((1, 3, 32, 32), 61)
        (y1,) = compiled.run(x1)
        kept = y1.copy()
        (y2,) = compiled.run(x2)
        assert np.array_equal(y1, kept) and not np.array_equal(y1, y2)
    mm = kiln.compile(kiln.parse(MATMUL_RELU), backends=["example_npu"])  # output straight from the NPU
    (z1,) = mm.run(random((2, 4), 62), random((4, 8), 63))
    kept = z1.copy()
    mm.run(random((2, 4), 64), random((4, 8), 65))
    assert np.array_equal(z1, kept)


def test_binary_file_as_kir(tmp_path):
    path = tmp_path / "garbage.kir"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(kiln.Error) as info:
        kiln.load(path)
    assert "garbage.kir" in str(info.value)
