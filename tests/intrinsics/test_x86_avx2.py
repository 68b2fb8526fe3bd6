"""x86 AVX2 intrinsics: the instructions alone, hand-scheduled and candidate-generated GEMMs (with
padding), checked against numpy: exactly for integers, over the full uint8/int8 ranges."""
import re

import numpy as np
import pytest

import intrinsics  # noqa: F401  (registers the families)
import tensorize as tvm
from intrinsics.x86_avx2 import (AVX2_DOT_8x4_INTRIN, AVX2_DOT_8x4_SAT_INTRIN, AVX2_FMA_8_F32_INTRIN,
                                 AVXVNNI_DOT_8x4_INTRIN)
from search import apply_candidate, get_tensorize_candidates
from tensorize.ir.tensor_intrin import TensorIntrin
from tensorize.script import tir as T
from tensorize.target import Target, host_cpu
from tensorize.codegen.python.interpreter import run_prim_func
from tests.intrinsics.x86_models import EXTERNS, saturating_reference
from tests.workloads import int8_gemm

FEATURES = host_cpu()[1]
TARGET = "llvm -mcpu=native"


def needs(feature):
    return pytest.mark.skipif(feature not in FEATURES, reason=f"the host CPU lacks {feature}")


def f32_gemm(M, N, K):
    @T.prim_func
    def gemm(A: T.Buffer((M, K), "float32"), B: T.Buffer((K, N), "float32"), C: T.Buffer((M, N), "float32")):
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return gemm


def full_range_u8s8(rng, M, N, K):
    """Random u8 A and s8 B with the extreme rows/columns that break int16 saturation (255, -128, 127)."""
    a = rng.integers(0, 256, (M, K), dtype=np.uint8)
    b = rng.integers(-128, 128, (N, K), dtype=np.int8)
    a[0, :], b[0, :], b[1, :] = 255, -128, 127
    return a, b


def pack_b(b, lanes=8):
    """(N, K) -> (N/lanes, K/4, lanes, 4), the layout ``transform_layout`` gives B."""
    n, k = b.shape
    return np.ascontiguousarray(b.reshape(n // lanes, lanes, k // 4, 4).transpose(0, 2, 1, 3))


def dot_schedule(M, N, K, intrin):
    sch = tvm.tir.Schedule(int8_gemm(M, N, K))
    block = sch.get_block("C")
    sch.transform_layout(block, ("read", 1), lambda j, k: (j // 8, k // 4, j % 8, k % 4))
    i, j, k = sch.get_loops(block)
    j_o, j_i = sch.split(j, [None, 8])
    k_o, k_i = sch.split(k, [None, 4])
    sch.reorder(j_o, k_o, j_i, k_i)
    sch.tensorize(j_i, intrin)
    return sch


def run(f, *arrays, out_shape, out_dtype, fill=7):
    out = tvm.nd.array(np.full(out_shape, fill, out_dtype))  # the init must overwrite what is there
    f(*[tvm.nd.array(a) for a in arrays], out)
    return out.numpy()


# -- the impls alone --------------------------------------------------------------------------------
@needs("avx2")
@pytest.mark.parametrize("seed", range(3))
def test_dot_8x4_impl_is_exact_over_the_full_range(seed):
    f = tvm.build(TensorIntrin.get(AVX2_DOT_8x4_INTRIN).impl, target=TARGET)
    rng = np.random.default_rng(seed)
    for trial in range(50):
        a = rng.integers(0, 256, 4, dtype=np.uint8)
        b = rng.integers(-128, 128, (8, 4), dtype=np.int8)
        if trial == 0:
            a[:], b[:4], b[4:] = 255, -128, 127  # the largest pair sums, both signs
        c0 = rng.integers(-2**30, 2**30, 8).astype(np.int32)
        c = tvm.nd.array(c0.copy())
        f(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_array_equal(c.numpy(), c0 + b.astype(np.int32) @ a.astype(np.int32))


@needs("avx2")
@pytest.mark.parametrize("name", [AVX2_DOT_8x4_INTRIN, AVX2_DOT_8x4_SAT_INTRIN])
def test_instruction_models_agree_with_the_hardware(name):
    # The numpy models of vpmaddubsw/vpmaddwd (used to check the AVX-512 impls on hosts without
    # AVX-512) give what this CPU computes, saturation included.
    impl = TensorIntrin.get(name).impl
    f = tvm.build(impl, target=TARGET)
    rng = np.random.default_rng(7)
    for trial in range(20):
        a = rng.integers(0, 256, 4, dtype=np.uint8) if trial else np.full(4, 255, np.uint8)
        b = rng.integers(-128, 128, (8, 4), dtype=np.int8)
        c0 = rng.integers(-2**20, 2**20, 8).astype(np.int32)
        hw, model = tvm.nd.array(c0.copy()), c0.copy()
        f(tvm.nd.array(a), tvm.nd.array(b), hw)
        run_prim_func(impl, a, b, model, externs=EXTERNS)
        np.testing.assert_array_equal(hw.numpy(), model)


# -- hand-scheduled GEMMs ---------------------------------------------------------------------------
@needs("avx2")
def test_dot_8x4_gemm_64_exact_over_the_full_range_with_vpmaddwd():
    M = N = K = 64
    f = tvm.build(dot_schedule(M, N, K, AVX2_DOT_8x4_INTRIN).mod, target=TARGET)
    a, b = full_range_u8s8(np.random.default_rng(0), M, N, K)
    got = run(f, a, pack_b(b), out_shape=(M, N), out_dtype="int32")
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32).T)
    asm = f.get_source("asm")
    if "avxvnni" not in FEATURES:  # with AVX-VNNI LLVM may fuse vpmaddubsw + vpmaddwd into vpdpbusd
        assert re.search(r"vpmaddwd\s+.*ymm", asm), "the dot must add its int16 pairs with vpmaddwd on ymm"


@needs("avx2")
def test_dot_8x4_sat_is_exact_below_128_and_saturates_like_the_instruction():
    M, N, K = 32, 32, 64
    f = tvm.build(dot_schedule(M, N, K, AVX2_DOT_8x4_SAT_INTRIN).mod, target=TARGET)
    assert "vpmaddubsw" in f.get_source("asm") or "vpdpbusd" in f.get_source("asm")
    rng = np.random.default_rng(1)
    a = rng.integers(0, 128, (M, K), dtype=np.uint8)
    b = rng.integers(-128, 128, (N, K), dtype=np.int8)
    got = run(f, a, pack_b(b), out_shape=(M, N), out_dtype="int32")
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32).T)
    a, b = full_range_u8s8(rng, M, N, K)
    got = run(f, a, pack_b(b), out_shape=(M, N), out_dtype="int32")
    exact = a.astype(np.int32) @ b.astype(np.int32).T
    if "avxvnni" not in FEATURES:  # with AVX-VNNI LLVM may fuse the sequence into an exact vpdpbusd
        np.testing.assert_array_equal(got, saturating_reference(a, b))
        assert got[0, 0] != exact[0, 0]  # 255 * -128 * 2 per pair saturates to -32768
    assert TensorIntrin.get(AVX2_DOT_8x4_SAT_INTRIN).meta.extra["saturates_int16"] is True


@needs("fma")
def test_fma_8_gemm_64_matches_numpy_and_uses_ymm_fma():
    M = N = K = 64
    sch = tvm.tir.Schedule(f32_gemm(M, N, K))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i_o, i_i = sch.split(i, [None, 4])
    j_o, j_i = sch.split(j, [None, 8])
    sch.reorder(i_o, j_o, k, i_i, j_i)
    sch.tensorize(j_i, AVX2_FMA_8_F32_INTRIN)
    f = tvm.build(sch.mod, target=TARGET)
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)
    got = run(f, a, b, out_shape=(M, N), out_dtype="float32")
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    assert re.search(r"vfmadd\d+ps\s+.*ymm", f.get_source("asm"))


def test_avxvnni_dot_compiles_to_vex_vpdpbusd():
    sch = dot_schedule(32, 32, 64, AVXVNNI_DOT_8x4_INTRIN)
    asm = tvm.build(sch.mod, target="llvm -mcpu=haswell -mattr=+avxvnni").get_source("asm")  # compiled, not run
    assert re.search(r"\{vex\}\s*vpdpbusd\s+.*ymm", asm), "AVX-VNNI is the VEX encoding of vpdpbusd on ymm"


@needs("avxvnni")
def test_avxvnni_gemm_64_exact_over_the_full_range():
    M = N = K = 64
    f = tvm.build(dot_schedule(M, N, K, AVXVNNI_DOT_8x4_INTRIN).mod, target=TARGET)
    a, b = full_range_u8s8(np.random.default_rng(5), M, N, K)
    got = run(f, a, pack_b(b), out_shape=(M, N), out_dtype="int32")
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32).T)


# -- candidate generator: shapes that do not divide, padded ----------------------------------------
def candidate_schedule(func, intrin):
    sch = tvm.tir.Schedule(func)
    cands = get_tensorize_candidates(sch, sch.get_block("C"), intrin)
    assert cands, cands.reason
    sch.tensorize(apply_candidate(sch, cands[0]), intrin)
    return sch, cands[0]


@needs("avx2")
def test_dot_8x4_candidate_pads_a_non_dividing_gemm_and_is_exact():
    M, N, K = 13, 30, 70  # N and K are not multiples of 8 and 4
    sch, cand = candidate_schedule(int8_gemm(M, N, K), AVX2_DOT_8x4_INTRIN)
    assert cand.needs_padding and [m.padded_extent for m in cand.mappings] == [32, 72]
    f = tvm.build(sch.mod, target=TARGET)
    a, b = full_range_u8s8(np.random.default_rng(3), M, N, K)
    got = run(f, a, b, out_shape=(M, N), out_dtype="int32")
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32).T)
    assert "vpmaddwd" in f.get_source("asm")


@needs("fma")
def test_fma_8_candidate_pads_a_non_dividing_gemm():
    M, N, K = 20, 45, 33
    sch, cand = candidate_schedule(f32_gemm(M, N, K), AVX2_FMA_8_F32_INTRIN)
    assert cand.needs_padding and cand.mappings[0].padded_extent == 48
    f = tvm.build(sch.mod, target=TARGET)
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)
    got = run(f, a, b, out_shape=(M, N), out_dtype="float32")
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    assert re.search(r"vfmadd\d+ps\s+.*ymm", f.get_source("asm"))


# -- registration ------------------------------------------------------------------------------------
def test_registered_with_features_and_offered_to_avx2_targets():
    dot = TensorIntrin.get(AVX2_DOT_8x4_INTRIN)
    assert dot.meta.features == ("avx2",) and dot.meta.arch == "x86_64"
    assert [(o.dtype, o.shape, o.written) for o in dot.meta.operands] == [
        ("uint8", (4,), False), ("int8", (8, 4), False), ("int32", (8,), True)]
    assert [(it.extent, it.kind) for it in dot.meta.iters] == [(8, "S"), (4, "R")]
    assert TensorIntrin.get(AVX2_FMA_8_F32_INTRIN).meta.features == ("fma",)
    haswell, generic = Target("llvm -mcpu=haswell"), Target("llvm -mcpu=x86-64")
    for name in (AVX2_DOT_8x4_INTRIN, AVX2_DOT_8x4_SAT_INTRIN, AVX2_FMA_8_F32_INTRIN):
        meta = TensorIntrin.get(name).meta
        assert meta.supported_by(haswell) and not meta.supported_by(generic)
        assert not meta.supported_by(Target("llvm -mtriple=aarch64-linux-gnu"))
