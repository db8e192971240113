"""Shared fixtures of the Python API tests.

Run by ctest (python_tests) with PYTHONPATH set to the build's python/
folder; by hand:
    PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python
"""
import os
import pathlib

import numpy as np
import pytest

import kiln

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[2]


def build_dir():
    """The build tree the kiln package was imported from (KILN_BUILD_DIR wins)."""
    if os.environ.get("KILN_BUILD_DIR"):
        return pathlib.Path(os.environ["KILN_BUILD_DIR"])
    return pathlib.Path(kiln.__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE_DIR


@pytest.fixture(scope="session")
def kiln_binary():
    path = build_dir() / "kiln"
    if not path.exists():
        pytest.skip(f"the kiln command is not built ({path})")
    return path


def ramp(shape, scale=0.25, dtype=np.float32):
    """Deterministic values of both signs, so a relu matters."""
    n = int(np.prod(shape))
    return (scale * ((np.arange(n) * 7) % 13 - 6)).astype(dtype).reshape(shape)


def random(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(dtype)
