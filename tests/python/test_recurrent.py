"""An ONNX LSTM (bidirectional, sequence_lens, initial states, peepholes)
built with onnx.helper, run through kiln and compared with a numpy loop
written here from the ONNX LSTM equations."""
import numpy as np
import pytest

import kiln

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def numpy_lstm(x, w, r, b, lens, h0, c0, p):
    """ONNX LSTM, layout 0, gates i, o, f, c; the second direction reversed."""
    seq, batch, _ = x.shape
    dirs, four_h, _ = w.shape
    hidden = four_h // 4
    y = np.zeros((seq, dirs, batch, hidden), np.float64)
    y_h = np.zeros((dirs, batch, hidden), np.float64)
    y_c = np.zeros((dirs, batch, hidden), np.float64)
    for d in range(dirs):
        wi, wo, wf, wc = np.split(w[d].astype(np.float64), 4)
        ri, ro, rf, rc = np.split(r[d].astype(np.float64), 4)
        bias = b[d, :four_h].astype(np.float64) + b[d, four_h:]
        bi, bo, bf, bc = np.split(bias, 4)
        pi, po, pf = np.split(p[d].astype(np.float64), 3)
        for n in range(batch):
            h = h0[d, n].astype(np.float64)
            c = c0[d, n].astype(np.float64)
            steps = range(lens[n]) if d == 0 else reversed(range(lens[n]))
            for t in steps:
                xt = x[t, n].astype(np.float64)
                i = sigmoid(wi @ xt + ri @ h + bi + pi * c)
                f = sigmoid(wf @ xt + rf @ h + bf + pf * c)
                g = np.tanh(wc @ xt + rc @ h + bc)
                c = f * c + i * g
                o = sigmoid(wo @ xt + ro @ h + bo + po * c)
                h = o * np.tanh(c)
                y[t, d, n] = h
            y_h[d, n] = h
            y_c[d, n] = c
    return y, y_h, y_c


def test_bidirectional_lstm_matches_numpy(tmp_path):
    rng = np.random.default_rng(7)
    seq, batch, inp, hidden, dirs = 4, 3, 2, 3, 2

    def rand(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)

    x = rand(seq, batch, inp)
    w, r, b = rand(dirs, 4 * hidden, inp), rand(dirs, 4 * hidden, hidden), rand(dirs, 8 * hidden)
    p = rand(dirs, 3 * hidden)
    h0, c0 = rand(dirs, batch, hidden), rand(dirs, batch, hidden)
    lens = np.array([4, 2, 3], np.int32)

    node = helper.make_node("LSTM", ["x", "w", "r", "b", "lens", "h0", "c0", "p"], ["y", "y_h", "y_c"],
                            hidden_size=hidden, direction="bidirectional")
    graph = helper.make_graph(
        [node], "lstm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
         helper.make_tensor_value_info("lens", TensorProto.INT32, lens.shape),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, h0.shape),
         helper.make_tensor_value_info("c0", TensorProto.FLOAT, c0.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (seq, dirs, batch, hidden)),
         helper.make_tensor_value_info("y_h", TensorProto.FLOAT, (dirs, batch, hidden)),
         helper.make_tensor_value_info("y_c", TensorProto.FLOAT, (dirs, batch, hidden))],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(r, "r"),
                     numpy_helper.from_array(b, "b"), numpy_helper.from_array(p, "p")])
    path = tmp_path / "lstm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(path))

    want = numpy_lstm(x, w, r, b, lens, h0, c0, p)
    assert np.all(want[0][3, :, 1] == 0)  # past the second sequence's length
    mod = kiln.load(path)
    inputs = {"x": x, "lens": lens, "h0": h0, "c0": c0}
    got_interp = kiln.interpret(mod, inputs=inputs)
    got_compiled = kiln.compile(mod).run(inputs=inputs)
    for got in (got_interp, got_compiled):
        assert len(got) == 3
        for g, e in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-5, atol=1e-5)
