"""Tensor level: tensor expressions, schedules, lowering, builds and runs."""
import shutil

import numpy as np
import pytest

import kiln
from kiln import te

N = 2048


def vtcm_add(dtype):
    A = te.placeholder((N,), dtype, name="A")
    B = te.placeholder((N,), dtype, name="B")
    C = te.compute((N,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C)
    s.cache_read(A, "local.vtcm", [C])
    s.cache_read(B, "local.vtcm", [C])
    s[C].vectorize(s[C].leaf(0))
    return kiln.lower(s, [A, B, C], name="alloc_vtcm")


def inputs(dtype):
    i = np.arange(N)
    return (i % 64 - 32).astype(dtype), ((i * 5) % 50).astype(dtype)


def test_lowered_vtcm_allocations_are_in_bytes():
    for dtype, elem_bytes in (("int8", 1), ("float32", 4)):
        f = vtcm_add(dtype)
        text = str(f)
        assert 'scope="local.vtcm"' in text
        lowered = str(f.lower_for_build("hexagon-v68"))
        assert lowered.count(f"\"HexagonBackendAllocateVTCM\", uint32({N * elem_bytes}), uint32(128)") == 2, lowered
        assert f"({N * elem_bytes} bytes, scope local.vtcm)" in lowered
        assert lowered.count("\"HexagonBackendFreeVTCM\"") == 3  # both at the end, A on B's failure path
        assert "isnull" in lowered


def test_vtcm_add_on_the_host():
    f = kiln.build(vtcm_add("int8"), target="llvm")
    a, b = inputs(np.int8)
    c = f(a, b)
    assert c.dtype == np.int8
    assert np.array_equal(c, (a + b).astype(np.int8))
    assert "high-water 4096 B" in f.vtcm_pool and " 0 live)" in f.vtcm_pool
    sources = {i["symbol"]: i["source"] for i in f.imports}
    assert sources["HexagonBackendAllocateVTCM"] == "runtime ABI"
    assert sources["HexagonBackendFreeVTCM"] == "runtime ABI"
    assert "HexagonBackendAllocateVTCM" in f.ll


def test_matmul_schedule_matches_numpy():
    M, K, Nn = 32, 48, 64
    A = te.placeholder((M, K), "float32", name="A")
    B = te.placeholder((K, Nn), "float32", name="B")
    k = te.reduce_axis(K, "k")
    C = te.compute((M, Nn), lambda i, j: te.sum(A[i, k] * B[k, j], axis=[k]), name="C")
    s = te.create_schedule(C)
    i, j, kk = s[C].leaves
    io, ii = s[C].split(i, 8)
    jo, ji = s[C].split(j, 16)
    s[C].reorder(io, jo, kk, ii, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    f = kiln.lower(s, [A, B, C], name="matmul")
    assert [l[2] for l in s[C].loops()] == ["parallel", "serial", "serial", "serial", "vectorized"]
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, Nn)).astype(np.float32)
    c = kiln.build(f)(a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_compute_at_tile_and_cache_write():
    A = te.placeholder((64,), "float32", name="A")
    B = te.compute((64,), lambda i: te.exp(A[i]) * 2.0, name="B")
    C = te.compute((64,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C)
    At = s.cache_read(A, "global.vtcm", [B])
    io, ii = s[C].split(s[C].leaf(0), 16)
    s[B].compute_at(s[C], io)
    s[At].compute_at(s[C], io)
    f = kiln.lower(s, [A, C], name="tiled")
    assert "Buffer[(16), float32" in str(f)
    a = np.linspace(-2, 2, 64).astype(np.float32)
    np.testing.assert_allclose(kiln.build(f)(a), np.exp(a) * 2 + 1, rtol=1e-5)

    A2 = te.placeholder((32,), "int32", name="A2")
    D = te.compute((32,), lambda i: te.select(A2[i] > 3, A2[i] * 3, -A2[i]), name="D")
    s2 = te.create_schedule(D)
    s2.cache_write(D, "local")
    a2 = np.arange(32, dtype=np.int32) - 10
    np.testing.assert_array_equal(kiln.build(kiln.lower(s2, [A2, D], "sel"))(a2), np.where(a2 > 3, a2 * 3, -a2))


def test_inline_and_max_reduction():
    A = te.placeholder((8, 16), "float32", name="A")
    R = te.compute((8, 16), lambda i, j: te.maximum(A[i, j], 0.0), name="R")
    k = te.reduce_axis(16, "k")
    M = te.compute((8,), lambda i: te.max(R[i, k], axis=[k]), name="M")
    s = te.create_schedule(M)
    s[R].compute_inline()
    f = kiln.lower(s, [A, M], name="relu_max")
    a = np.random.default_rng(1).uniform(-1, 1, (8, 16)).astype(np.float32)
    np.testing.assert_array_equal(kiln.build(f)(a), np.maximum(a, 0).max(axis=1))


def test_parsed_prim_function_builds(source_dir, tmp_path):
    mod = kiln.load(source_dir / "examples/vtcm/vtcm_add.kir")
    (f,) = mod.prim_functions
    built = kiln.build(f)
    outs = built.run(**{p["name"]: np.ones(p["shape"], p["dtype"]) for p in f.params if p["read"] and not p["written"]})
    assert all(np.all(v == 2) for v in outs.values())
    built.save(tmp_path / "k.o")
    built.save(tmp_path / "k.ll")
    assert (tmp_path / "k.o").stat().st_size > 0
    assert "define" in (tmp_path / "k.ll").read_text()


@pytest.mark.skipif(shutil.which("qemu-hexagon-static") is None, reason="qemu-hexagon-static is not installed")
def test_vtcm_add_on_hexagon_under_qemu(tmp_path):
    f = kiln.build(vtcm_add("int8"), target="hexagon-v68")
    assert "call HexagonBackendAllocateVTCM" in f.asm
    sources = {i["symbol"]: i["source"] for i in f.imports}
    assert sources["HexagonBackendAllocateVTCM"] == "runtime ABI"
    a, b = inputs(np.int8)
    c = f(a, b)
    assert np.array_equal(c, (a + b).astype(np.int8))
    assert "high-water 4096 B" in f.vtcm_pool and " 0 live)" in f.vtcm_pool


# ---------------------------------------------------------------- errors

def test_schedule_errors():
    A = te.placeholder((10,), "float32", name="A")
    C = te.compute((10,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C)
    with pytest.raises(kiln.Error, match="divide"):
        s[C].split(s[C].leaf(0), 3)
    with pytest.raises(kiln.Error, match="scope"):
        s[C].set_scope("local.nowhere")
    with pytest.raises(kiln.Error, match="A"):
        kiln.lower(s, [C], name="missing_placeholder")
    with pytest.raises(kiln.Error, match="hexagon-v99|known|target"):
        kiln.build(kiln.lower(s, [A, C], name="ok"), target="hexagon-v99")
    with pytest.raises(kiln.Error, match="truth value"):
        bool(A[0] > 1.0)
    with pytest.raises(kiln.Error, match="dtype"):
        te.placeholder((4,), "int12", name="X")
    with pytest.raises(ZeroDivisionError):
        te.compute((4,), lambda i: 1 / 0, name="boom")  # the user's exception, unchanged


def test_vtcm_capacity_error():
    A = te.placeholder((1 << 20,), "float32", name="A")
    C = te.compute((1 << 20,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C)
    s.cache_read(A, "local.vtcm", [C])
    f = kiln.lower(s, [A, C], name="too_big")
    with pytest.raises(kiln.Error, match="A.*4194304|4194304.*A"):
        kiln.build(f, target="hexagon-v66")


def test_unresolved_import_is_a_build_error():
    A = te.placeholder((4,), "int32", name="A")
    C = te.compute((4,), lambda i: te.call_extern("int32", "my_missing_fn", [A[i]]), name="C")
    f = kiln.lower(te.create_schedule(C), [A, C], name="uses_missing")
    with pytest.raises(kiln.Error, match="my_missing_fn"):
        kiln.build(f)


def test_wrong_prim_inputs():
    f = kiln.build(vtcm_add("int8"))
    with pytest.raises(kiln.Error, match="takes 2 inputs"):
        f(np.zeros(N, np.int8))
    with pytest.raises(kiln.Error, match="A"):
        f(np.zeros(N, np.float32), np.zeros(N, np.int8))


def test_set_scope_of_an_intermediate():
    A = te.placeholder((256,), "int8", name="A")
    B = te.compute((256,), lambda i: A[i] * 2, name="B")
    C = te.compute((256,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C)
    s[B].set_scope("global.vtcm")
    f = kiln.lower(s, [A, C], name="scoped")
    assert 'allocate %B: Buffer[(256), int8, scope="global.vtcm"' in str(f)
    built = kiln.build(f)
    a = (np.arange(256) % 100 - 50).astype(np.int8)
    np.testing.assert_array_equal(built(a), (a * 2 + 1).astype(np.int8))
    assert "high-water 256 B" in built.vtcm_pool


def test_inspect_a_saved_object(tmp_path):
    built = kiln.build(vtcm_add("int8"), target="hexagon-v68")
    built.save(tmp_path / "k.o")
    info = kiln.inspect(tmp_path / "k.o")
    assert info["hexagon"]
    assert "alloc_vtcm" in info["exports"]
    sources = {i["symbol"]: i["source"] for i in info["imports"]}
    assert sources["HexagonBackendAllocateVTCM"] == "runtime ABI"
    assert sources.get("memcpy") == "Hexagon runtime"
    with pytest.raises(kiln.Error, match="nothere"):
        kiln.inspect(tmp_path / "nothere.o")


def test_fuse_unroll_and_split_with_tail():
    A = te.placeholder((6, 10), "float32", name="A")
    C = te.compute((6, 10), lambda i, j: A[i, j] * 3.0 - 1.0, name="C")
    s = te.create_schedule(C)
    i, j = s[C].leaves
    fused = s[C].fuse(i, j)
    outer, inner = s[C].split(fused, 8, tail=True)  # 60 = 7 * 8 + 4
    s[C].unroll(inner)
    assert [(l[1], l[2]) for l in s[C].loops()] == [(8, "serial"), (8, "unrolled")]
    f = kiln.lower(s, [A, C], name="fused")
    a = np.arange(60, dtype=np.float32).reshape(6, 10)
    np.testing.assert_array_equal(kiln.build(f)(a), a * 3 - 1)
