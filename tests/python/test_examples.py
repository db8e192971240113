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


def test_exit_with_a_python_backend_still_registered(tmp_path):
    """The interpreter exits cleanly while kiln's registries and a module
    still hold Python objects (a check, a runtime)."""
    script = tmp_path / "leave.py"
    script.write_text(
        "import numpy as np, kiln\n"
        "class Rt:\n"
        "    def run(self, f, inputs):\n"
        "        return np.maximum(inputs[0], 0)\n"
        "kiln.register_backend('py_exit', Rt())\n"
        "kiln.register_pattern('py_exit.relu', kiln.is_op('nn.relu', kiln.wildcard()), check=lambda m, o: None)\n"
        "mod = kiln.parse('def @main(%x: Tensor[(4), float32]) -> Tensor[(4), float32] {\\n"
        "  %y = nn.relu(%x)\\n  return %y\\n}\\n')\n"
        "compiled = kiln.compile(mod, backends=['py_exit'])\n"
        "(y,) = compiled.run(np.array([-1, 2, -3, 4], np.float32))\n"
        "assert y.tolist() == [0, 2, 0, 4]\n"
        "print('done')\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "done" and "Fatal" not in r.stderr
