"""Parallel loops on OpenMP, LLVM intrinsics by name, sources, and AArch64 cross-compilation."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.ir import expr as E
from tensorize.ir import op
from tensorize.ir import stmt as S
from tensorize.ir.expr import Broadcast, Ramp
from tensorize.target import Target

from tests.codegen.codegen_kernels import buffers, build, func, loop


def _row_sums(kind):
    n, m = 64, 256
    A, B = buffers(("A", (n * m,), "float32"), ("B", (n,), "float32"))
    acc = buffers(("acc", (1,), "float32"))[0]

    def body_of(i):
        return S.Allocate(acc.data, "float32", [1], True, S.SeqStmt([
            S.BufferStore(acc, 0.0, [0]),
            loop(m, lambda j: S.BufferStore(acc, acc[0] + A[i * m + j], [0]), name="j"),
            S.BufferStore(B, acc[0], [i])]))

    return build(func([A, B], loop(n, body_of, kind=kind))), n, m


def test_parallel_loop_matches_serial_and_uses_gomp():
    par, n, m = _row_sums(S.ForKind.PARALLEL)
    ser, _, _ = _row_sums(S.ForKind.SERIAL)
    a = np.random.default_rng(0).standard_normal(n * m).astype("float32")
    b1, b2 = np.zeros(n, "float32"), np.zeros(n, "float32")
    par(a, b1)
    ser(a, b2)
    np.testing.assert_array_equal(b1, b2)
    np.testing.assert_allclose(b1, a.reshape(n, m).sum(axis=1), rtol=1e-4, atol=1e-4)
    ll = par.get_source("ll")
    assert "GOMP_parallel" in ll and "omp_get_thread_num" in ll
    assert "GOMP_parallel" not in ser.get_source("ll")


def test_parallel_loop_runs_on_several_threads(monkeypatch):
    monkeypatch.setenv("TVM_NUM_THREADS", "2")
    T = buffers(("T", (64,), "int32"))[0]
    body = loop(64, lambda i: S.BufferStore(T, op.call_extern("int32", "omp_get_thread_num"), [i]), kind=S.ForKind.PARALLEL)
    mod = build(func([T], body))
    t = np.full(64, -1, "int32")
    mod(t)
    assert set(t.tolist()) == {0, 1}  # static schedule: first half on thread 0, second half on thread 1
    np.testing.assert_array_equal(t, np.repeat([0, 1], 32))


def test_nested_parallel_runs_inner_serially_and_uneven_extent():
    n, m = 7, 5
    A = buffers(("A", (n * m,), "int32"))[0]
    body = loop(n, lambda i: loop(m, lambda j: S.BufferStore(A, i * 10 + j, [i * m + j]), kind=S.ForKind.PARALLEL, name="j"),
                kind=S.ForKind.PARALLEL)
    mod = build(func([A], body))
    a = np.zeros(n * m, "int32")
    mod(a)
    np.testing.assert_array_equal(a.reshape(n, m), np.arange(n)[:, None] * 10 + np.arange(m))
    assert mod.get_source("ll").count("call void @GOMP_parallel") == 1


def test_assert_inside_parallel_loop_reports_error():
    A = buffers(("A", (16,), "int32"))[0]
    limit = E.Var("limit")
    body = loop(16, lambda i: S.AssertStmt(i < limit, E.StringImm("index over the limit"), S.BufferStore(A, i, [i])),
                kind=S.ForKind.PARALLEL)
    mod = build(func([A, limit], body))
    a = np.zeros(16, "int32")
    mod(a, 16)
    np.testing.assert_array_equal(a, np.arange(16))
    with pytest.raises(tvm.TVMError, match="index over the limit"):
        mod(a, 8)


def test_llvm_pure_intrin_by_name():
    A, B, C = buffers(("A", (8,), "float32"), ("B", (8,), "float32"), ("C", (8,), "float32"))
    idx = Ramp(0, 1, 8)
    body = S.BufferStore(C, op.call_llvm_pure_intrin("float32x8", "llvm.fma.v8f32", A[idx], B[idx], Broadcast(1.0, 8)), [idx])
    mod = build(func([A, B, C], body))
    a, b = np.arange(8, dtype="float32"), np.full(8, 2, "float32")
    c = np.zeros(8, "float32")
    mod(a, b, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


@pytest.mark.skipif(not Target("llvm -mcpu=native").has_feature("avx512vnni"), reason="host lacks AVX512-VNNI")
def test_vnni_vpdpbusd_intrinsic():
    # C[16] += sum_k A[4i+k] (u8) * B[4i+k] (s8): one vpdpbusd on 512-bit vectors.
    A, B, C = buffers(("A", (64,), "uint8"), ("B", (64,), "int8"), ("C", (16,), "int32"))
    c_idx, ab_idx = Ramp(0, 1, 16), Ramp(0, 1, 64)
    value = op.call_llvm_pure_intrin("int32x16", "llvm.x86.avx512.vpdpbusd.512", C[c_idx],
                                     op.reinterpret("int8x64", A[ab_idx]),
                                     B[ab_idx])
    mod = build(func([A, B, C], S.BufferStore(C, value, [c_idx])))
    rng = np.random.default_rng(5)
    a = rng.integers(0, 255, 64).astype("uint8")
    b = rng.integers(-128, 127, 64).astype("int8")
    c = rng.integers(-1000, 1000, 16).astype("int32")
    expected = c + (a.astype("int32") * b.astype("int32")).reshape(16, 4).sum(axis=1)
    mod(a, b, c)
    np.testing.assert_array_equal(c, expected)
    assert "vpdpbusd" in mod.get_source("asm")


def test_sources_and_export_library(tmp_path):
    A, B = buffers(("A", (1024,), "float32"), ("B", (1024,), "float32"))
    mod = build(func([A, B], loop(1024, lambda i: S.BufferStore(B, A[i] * 3.0 + 1.0, [i])), {"tir.noalias": True}),
                target="llvm -mcpu=skylake-avx512")
    ll, asm = mod.get_source("ll"), mod.get_source("asm")
    assert "define" in ll and "@main(ptr noalias" in ll and "x86_64" in ll
    assert "<8 x float>" in ll or "<16 x float>" in ll  # the loop vectorizer ran
    assert "main:" in asm and "vfmadd" in asm and ("%ymm" in asm or "%zmm" in asm)
    path = tmp_path / "lib.so"
    mod.export_library(str(path))
    import ctypes

    lib = ctypes.CDLL(str(path))
    # The C entry expects pointers aligned to the buffers' data_alignment (64 bytes): tvm.nd arrays are.
    a, b = tvm.nd.array(np.arange(1024, dtype="float32")), tvm.nd.empty((1024,), "float32")
    assert lib.main(ctypes.c_void_p(a.data_ptr), ctypes.c_void_p(b.data_ptr)) == 0
    np.testing.assert_array_equal(b.numpy(), a.numpy() * 3 + 1)


AARCH64 = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod,+i8mm,+sve"


def test_aarch64_cross_compile_object_and_asm(tmp_path):
    A, B, C = buffers(("A", (256,), "float32"), ("B", (256,), "float32"), ("C", (256,), "float32"))
    idx = lambda i: Ramp(i * 4, 1, 4)  # noqa: E731
    body = loop(64, lambda i: S.BufferStore(C, A[idx(i)] + B[idx(i)], [idx(i)]))
    mod = build(func([A, B, C], body), target=AARCH64)
    asm = mod.get_source("asm")
    assert "fadd\tv" in asm and ".4s" in asm
    obj = mod.object_code()
    assert obj[:4] == b"\x7fELF" and obj[18] == 183  # e_machine EM_AARCH64
    mod.export_library(str(tmp_path / "k.o"))
    assert (tmp_path / "k.o").read_bytes()[:4] == b"\x7fELF"
    with pytest.raises(tvm.TVMError, match="cannot run"):
        mod(np.zeros(256, "float32"), np.zeros(256, "float32"), np.zeros(256, "float32"))


def test_aarch64_sdot_intrinsic_in_asm():
    A, B, C = buffers(("A", (16,), "int8"), ("B", (16,), "int8"), ("C", (4,), "int32"))
    value = op.call_llvm_pure_intrin("int32x4", "llvm.aarch64.neon.sdot.v4i32.v16i8", C[Ramp(0, 1, 4)],
                                     A[Ramp(0, 1, 16)], B[Ramp(0, 1, 16)])
    mod = build(func([A, B, C], S.BufferStore(C, value, [Ramp(0, 1, 4)])), target=AARCH64)
    assert "sdot\tv" in mod.get_source("asm")


def test_named_cpus_imply_their_features():
    from tensorize.target import Target

    assert Target("llvm -mcpu=znver4").has_feature("avx512vnni")
    assert not Target("llvm -mcpu=haswell").has_feature("avx512f")
    assert not Target("llvm -mcpu=znver4 -mattr=-avx512vnni").has_feature("avx512vnni")
    arm = Target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1")
    assert arm.has_feature("sve") and arm.has_feature("i8mm") and arm.has_feature("dotprod")
    assert not Target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72").has_feature("dotprod")
    assert Target("llvm -mtriple=aarch64-linux-gnu -mattr=+sve -msve-vector-bits=256").attrs["msve-vector-bits"] == 256
