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
