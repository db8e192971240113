"""The Python examples run and check their own values (exit status 0)."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR


def run_example(name, *args):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, str(SOURCE_DIR / "examples/python" / name), *args], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_byoc_tutorial():
    out = run_example("byoc_tutorial.py")
    assert "OK: every model matches the reference" in out
    assert "py_npu.conv2d_relu_fused" in out


@pytest.mark.skipif(shutil.which("qemu-hexagon-static") is None, reason="qemu-hexagon-static is not installed")
def test_vtcm_alloc_on_hexagon():
    out = run_example("vtcm_alloc.py", "--target", "hexagon-v68")
    assert "int8: VTCM allocations of [2048, 2048] bytes" in out
    assert "float32: VTCM allocations of [8192, 8192] bytes" in out
    assert "call HexagonBackendAllocateVTCM" in out
    assert "C is right on Hexagon v68 under qemu-hexagon-static" in out
