"""ONNX models through kiln.load: shapes bound from Python, values checked."""
import numpy as np
import pytest

import kiln
from conftest import random

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def save_model(path, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(path))
    return path


def test_onnx_with_a_symbolic_batch(tmp_path):
    w = random((4, 3), 50)
    path = save_model(
        tmp_path / "mm.onnx",
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(w, "w")])
    with pytest.raises(kiln.Error, match="batch"):
        kiln.load(path)  # the symbolic dimension must be bound
    mod = kiln.load(path, input_shapes={"x": (5, 4)})
    assert mod.params() == [("x", (5, 4), "float32")]
    x = random((5, 4), 51)
    (z,) = kiln.compile(mod, backends=["example_npu"]).run(x=x)
    np.testing.assert_allclose(z, np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)


def test_onnx_unsupported_op(tmp_path):
    path = save_model(
        tmp_path / "bad.onnx", [helper.make_node("NoSuchOperator", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(kiln.UnsupportedError, match="NoSuchOperator"):
        kiln.load(path)


def names_model(tmp_path):
    """y = a + b, z = a * b for inputs named "onnx::Add_0" and "0"."""
    return save_model(
        tmp_path / "names.onnx",
        [helper.make_node("Add", ["onnx::Add_0", "0"], ["out/y:0"]),
         helper.make_node("Mul", ["onnx::Add_0", "0"], ["19"])],
        [helper.make_tensor_value_info("onnx::Add_0", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("0", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("out/y:0", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("19", TensorProto.FLOAT, ["batch", 3])])


def test_onnx_names_are_the_interface(tmp_path):
    path = names_model(tmp_path)
    mod = kiln.load(path, input_shapes={"onnx::Add_0": (2, 3), "%v0": (2, 3)})  # ONNX or kiln name
    assert mod.model_names == {"inputs": {"onnx__Add_0": "onnx::Add_0", "v0": "0"}, "outputs": ["out/y:0", "19"]}
    a, b = random((2, 3), 60), random((2, 3), 61)
    ref = kiln.interpret(mod, inputs={"onnx::Add_0": a, "0": b})
    np.testing.assert_allclose(ref[0], a + b, rtol=1e-6)
    np.testing.assert_allclose(ref[1], a * b, rtol=1e-6)
    compiled = kiln.compile(mod, path=tmp_path / "names.kmod")
    loaded = kiln.Module.load(tmp_path / "names.kmod")
    assert loaded.model_names == mod.model_names
    for m in (compiled, loaded):
        y, z = m.run(inputs={"onnx::Add_0": a, "0": b})
        np.testing.assert_array_equal(y, ref[0])
        np.testing.assert_array_equal(z, ref[1])
        y, z = m.run(onnx__Add_0=a, v0=b)  # kiln's names keep working
        np.testing.assert_array_equal(y, ref[0])
    with pytest.raises(kiln.Error, match=r"has no input 'onnx::Add_1' \(inputs: onnx::Add_0, 0\)"):
        compiled.run(inputs={"onnx::Add_1": a, "0": b})
    with pytest.raises(kiln.Error, match="no value for input '0'"):
        compiled.run(inputs={"onnx::Add_0": a})


def test_kiln_run_writes_outputs_under_their_onnx_names(tmp_path, kiln_binary):
    import json
    import subprocess
    path = names_model(tmp_path)
    a, b = random((2, 3), 62), random((2, 3), 63)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    out = tmp_path / "out"
    r = subprocess.run([str(kiln_binary), "run", str(path), "--input-shape", "onnx::Add_0=2,3", "--input-shape",
                        "0=2,3", "--input", f"onnx::Add_0={tmp_path / 'a.npy'}", "--input", f"0={tmp_path / 'b.npy'}",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'output_0 "out/y:0": (2, 3) float32' in r.stdout
    np.testing.assert_allclose(np.load(out / "out_y_0.npy"), a + b, rtol=1e-6)
    np.testing.assert_allclose(np.load(out / "19.npy"), a * b, rtol=1e-6)
    np.testing.assert_array_equal(np.load(out / "output_1.npy"), np.load(out / "19.npy"))
    index = json.loads((out / "outputs.json").read_text())
    assert [(o["index"], o["name"], o["file"]) for o in index["outputs"]] == [(0, "out/y:0", "out_y_0.npy"),
                                                                             (1, "19", "19.npy")]


def test_non_max_suppression_returns_the_actual_rows(tmp_path):
    # Box 1 overlaps box 0 (IoU 0.818 > 0.5); by score: 3, 0, (1 suppressed), 2.
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3], [0, 4, 1, 5]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7, 0.95]]], np.float32)
    graph = helper.make_graph(
        [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou"], ["selected"])], "g",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 4, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 4])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, ["n", 3])],
        initializer=[numpy_helper.from_array(np.array([4], np.int64), "max_out"),
                     numpy_helper.from_array(np.array([0.5], np.float32), "iou")])
    path = tmp_path / "nms.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), str(path))
    mod = kiln.load(path)
    want = np.array([[0, 0, 3], [0, 0, 0], [0, 0, 2]], np.int64)
    (interpreted,) = kiln.interpret(mod, boxes=boxes, scores=scores)
    (compiled,) = kiln.compile(mod).run(boxes=boxes, scores=scores)
    for got in (interpreted, compiled):
        assert got.shape == (3, 3)  # the type's bound is 4 rows
        np.testing.assert_array_equal(got, want)
