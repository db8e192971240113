"""PP-OCR cls through the Python API against `kiln run`: the same bits."""
import pathlib
import subprocess

import numpy as np
import pytest

import kiln
from conftest import build_dir

CLS = "e2e-npm/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx"


def cls_model():
    # tests/e2e/ppocr.sh downloads the models into a build tree; any will do.
    for root in (build_dir(), pathlib.Path(__file__).resolve().parents[2] / "build"):
        if (root / CLS).exists():
            return root / CLS
    return None


def test_cls_matches_kiln_run_bitwise(tmp_path, kiln_binary):
    model = cls_model()
    if model is None:
        print(f"skipping: {CLS} is absent (tests/e2e/ppocr.sh downloads it with npm)")
        pytest.skip(f"{CLS} is absent (tests/e2e/ppocr.sh downloads it with npm)")
    x = np.random.default_rng(0).uniform(0, 1, (1, 3, 48, 192)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([str(kiln_binary), "run", str(model), "--input-shape", "x=1,3,48,192", "--input",
                    f"x={tmp_path / 'x.npy'}", "--out", str(tmp_path / "out")], check=True, capture_output=True)
    want = np.load(tmp_path / "out" / "output_0.npy")

    mod = kiln.load(model, input_shapes={"x": (1, 3, 48, 192)})
    (got,) = kiln.compile(mod).run(x=x)
    assert got.shape == want.shape == (1, 2)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()
    # And the compiled path agrees with the reference interpreter.
    (ref,) = kiln.interpret(mod, x=x)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
