"""x86 AVX-512 intrinsics: tensorized GEMMs and a conv2d, checked against numpy, and their assembly."""
import re

import numpy as np
import pytest

import tensorize as tvm
from tensorize.script import tir as T
from tensorize.target import host_cpu
from tensorize.codegen.python.interpreter import run_prim_func
from tests.intrinsics.x86_models import EXTERNS
from tests.workloads import conv2d_nhwc_int8, int8_gemm

import intrinsics  # noqa: F401  (registers the families)
from intrinsics.x86 import (
    AVX512_BF16_DOT_16x2_INTRIN,
    AVX512_DOT_16x4_EXACT_INTRIN,
    AVX512_DOT_16x4_INTRIN,
    AVX512_FMA_16_F32_INTRIN,
    VNNI_DOT_16x4_INTRIN,
)

FEATURES = host_cpu()[1]
TARGET = "llvm -mcpu=native"


def needs(feature):
    return pytest.mark.skipif(feature not in FEATURES, reason=f"the host CPU lacks {feature}")


def pack_b(b):
    """(N, K) -> (N/16, K/4, 16, 4), the layout transform_layout gives B."""
    n, k = b.shape
    return np.ascontiguousarray(b.reshape(n // 16, 16, k // 4, 4).transpose(0, 2, 1, 3))


def vnni_schedule(M, N, K, intrin=VNNI_DOT_16x4_INTRIN, tiled=False):
    sch = tvm.tir.Schedule(int8_gemm(M, N, K))
    block = sch.get_block("C")
    sch.transform_layout(block, ("read", 1), lambda j, k: (j // 16, k // 4, j % 16, k % 4))
    i, j, k = sch.get_loops(block)
    j_o, j_i = sch.split(j, [None, 16])
    k_o, k_i = sch.split(k, [None, 4])
    if tiled:
        i_o, i_i = sch.split(i, [None, 8])
        j_oo, j_oi = sch.split(j_o, [None, 4])
        sch.reorder(i_o, j_oo, k_o, i_i, j_oi, j_i, k_i)
        sch.parallel(sch.fuse(i_o, j_oo))
    else:
        sch.reorder(j_o, k_o, j_i, k_i)
    sch.tensorize(j_i, intrin)
    return sch


def run_int8_gemm(sch, M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (M, K), dtype=np.uint8)
    b = rng.integers(-128, 128, (N, K), dtype=np.int8)
    f = tvm.build(sch.mod, target=TARGET)
    c = tvm.nd.array(np.full((M, N), 7, "int32"))  # init must overwrite garbage
    f(tvm.nd.array(a), tvm.nd.array(pack_b(b)), c)
    return f, c.numpy(), a.astype(np.int32) @ b.astype(np.int32).T


@needs("avx512vnni")
def test_vnni_gemm_64_exact_and_asm():
    sch = vnni_schedule(64, 64, 64)
    f, got, ref = run_int8_gemm(sch, 64, 64, 64)
    np.testing.assert_array_equal(got, ref)
    asm = f.get_source("asm")
    assert re.search(r"vpdpbusd\s+.*zmm", asm), "the tensorized GEMM must use vpdpbusd on zmm registers"
    # The views' vector accesses must stay contiguous loads after lowering, never gathers/scatters.
    assert "gather" not in asm and "scatter" not in asm


@needs("avx512vnni")
def test_vnni_gemm_1024_parallel_exact():
    sch = vnni_schedule(1024, 1024, 1024, tiled=True)
    _, got, ref = run_int8_gemm(sch, 1024, 1024, 1024, seed=1)
    np.testing.assert_array_equal(got, ref)


@needs("avx512bw")
def test_avx512_u8s8_fallback_matches_numpy_without_saturation():
    # pmaddubsw saturates int16 pair sums: keep |a0*b0 + a1*b1| < 2**15 (a < 128) so the result is exact.
    sch = vnni_schedule(32, 32, 64, intrin=AVX512_DOT_16x4_INTRIN)
    rng = np.random.default_rng(3)
    a = rng.integers(0, 128, (32, 64), dtype=np.uint8)
    b = rng.integers(-128, 128, (32, 64), dtype=np.int8)
    # A CPU without VNNI: on one with it LLVM fuses the sequence back into vpdpbusd.
    f = tvm.build(sch.mod, target="llvm -mcpu=skylake-avx512")
    c = tvm.nd.array(np.zeros((32, 32), "int32"))
    f(tvm.nd.array(a), tvm.nd.array(pack_b(b)), c)
    np.testing.assert_array_equal(c.numpy(), a.astype(np.int32) @ b.astype(np.int32).T)
    asm = f.get_source("asm")
    assert "vpmaddubsw" in asm and "vpmaddwd" in asm and "vpdpbusd" not in asm


def test_avx512_exact_u8s8_impl_on_the_instruction_models():
    # The 7-bit split keeps every int16 pair sum in range: exact where the _sat sequence is not.
    exact, sat = (tvm.tir.TensorIntrin.get(n).impl for n in (AVX512_DOT_16x4_EXACT_INTRIN, AVX512_DOT_16x4_INTRIN))
    rng = np.random.default_rng(11)
    for trial in range(30):
        a = rng.integers(0, 256, 4, dtype=np.uint8) if trial else np.full(4, 255, np.uint8)
        b = rng.integers(-128, 128, (16, 4), dtype=np.int8)
        if trial == 0:
            b[0], b[1] = -128, 127
        ref = b.astype(np.int64) @ a.astype(np.int64)
        c = np.zeros(16, np.int32)
        run_prim_func(exact, a, b, c, externs=EXTERNS)
        np.testing.assert_array_equal(c, ref)
        if trial == 0:
            run_prim_func(sat, a, b, c := np.zeros(16, np.int32), externs=EXTERNS)
            assert c[0] == -65536 and ref[0] == -130560  # the _sat sequence clips each pair at -32768


def test_avx512_exact_u8s8_compiles_to_zmm_vpmaddubsw_without_vnni():
    sch = vnni_schedule(32, 32, 64, intrin=AVX512_DOT_16x4_EXACT_INTRIN)
    asm = tvm.build(sch.mod, target="llvm -mcpu=skylake-avx512").get_source("asm")  # compiled, not run
    assert re.search(r"vpmaddubsw\s+.*zmm", asm) and re.search(r"vpmaddwd\s+.*zmm", asm) and "vpdpbusd" not in asm


@needs("avx512bw")
def test_avx512_exact_u8s8_gemm_matches_numpy_over_the_full_range():
    sch = vnni_schedule(64, 64, 64, intrin=AVX512_DOT_16x4_EXACT_INTRIN)
    rng = np.random.default_rng(12)
    a = rng.integers(0, 256, (64, 64), dtype=np.uint8)
    b = rng.integers(-128, 128, (64, 64), dtype=np.int8)
    a[0], b[0], b[1] = 255, -128, 127
    f = tvm.build(sch.mod, target=TARGET)
    c = tvm.nd.array(np.full((64, 64), 7, "int32"))
    f(tvm.nd.array(a), tvm.nd.array(pack_b(b)), c)
    np.testing.assert_array_equal(c.numpy(), a.astype(np.int32) @ b.astype(np.int32).T)


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


@needs("avx512f")
def test_fma_f32_gemm_matches_numpy_and_uses_zmm_fma():
    M, N, K = 96, 64, 80
    sch = tvm.tir.Schedule(f32_gemm(M, N, K))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i_o, i_i = sch.split(i, [None, 6])
    j_o, j_i = sch.split(j, [None, 16])
    sch.reorder(i_o, j_o, k, i_i, j_i)
    sch.tensorize(j_i, AVX512_FMA_16_F32_INTRIN)
    f = tvm.build(sch.mod, target=TARGET)
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)
    c = tvm.nd.array(np.zeros((M, N), "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    assert re.search(r"vfmadd\d+ps\s+.*zmm", f.get_source("asm"))


def bf16_bits(x):
    """float32 -> bfloat16 bits (round to nearest even), as uint16."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


@needs("avx512bf16")
def test_bf16_dot_matches_numpy_in_f32():
    N, K = 64, 128

    @T.prim_func
    def gemv(A: T.Buffer((K,), "bfloat16"), B: T.Buffer((N, K), "bfloat16"), C: T.Buffer((N,), "float32")):
        for i, k in T.grid(N, K):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = T.float32(0)
                C[vi] = C[vi] + T.Cast("float32", A[vk]) * T.Cast("float32", B[vi, vk])

    sch = tvm.tir.Schedule(gemv)
    block = sch.get_block("C")
    sch.transform_layout(block, ("read", 1), lambda i, k: (i // 16, k // 2, i % 16, k % 2))
    i, k = sch.get_loops(block)
    i_o, i_i = sch.split(i, [None, 16])
    k_o, k_i = sch.split(k, [None, 2])
    sch.reorder(i_o, k_o, i_i, k_i)
    sch.tensorize(i_i, AVX512_BF16_DOT_16x2_INTRIN)
    f = tvm.build(sch.mod, target=TARGET)
    assert "vdpbf16ps" in f.get_source("asm")
    rng = np.random.default_rng(5)
    a, b = bf16_bits(rng.standard_normal(K)), bf16_bits(rng.standard_normal((N, K)))
    b_packed = np.ascontiguousarray(b.reshape(N // 16, 16, K // 2, 2).transpose(0, 2, 1, 3))
    c = tvm.nd.array(np.zeros(N, "float32"))
    f(tvm.nd.array(a, dtype="bfloat16"), tvm.nd.array(b_packed, dtype="bfloat16"), c)
    ref = bf16_to_f32(b).astype(np.float64) @ bf16_to_f32(a).astype(np.float64)
    np.testing.assert_allclose(c.numpy(), ref, rtol=1e-4, atol=1e-4)


@needs("avx512vnni")
def test_conv2d_nhwc_int8_vnni_after_reindex_and_layout():
    N, H, W, CI, CO, KH, KW = 1, 10, 10, 32, 32, 3, 3
    sch = tvm.tir.Schedule(conv2d_nhwc_int8(N, H, W, CI, CO, KH, KW))
    block = sch.get_block("conv")
    # The kernel becomes the intrinsic's B: reindex gives a copy indexed by the block iterators
    # (co, rh, rw, ci), then the copy is packed with output channels on the 16 lanes and 4 input channels
    # per lane; the copy block does the packing at run time.
    sch.reindex(block, ("read", 1))
    sch.transform_layout(block, ("read", 1), lambda co, rh, rw, ci: (rh, rw, co // 16, ci // 4, co % 16, ci % 4))
    n, h, w, co, rh, rw, ci = sch.get_loops(block)
    co_o, co_i = sch.split(co, [None, 16])
    ci_o, ci_i = sch.split(ci, [None, 4])
    # The kernel window and the outer input channels stay reduction iterators of the outer block.
    sch.reorder(n, h, w, co_o, rh, rw, ci_o, co_i, ci_i)
    sch.tensorize(co_i, VNNI_DOT_16x4_INTRIN)
    f = tvm.build(sch.mod, target=TARGET)
    assert "vpdpbusd" in f.get_source("asm")
    rng = np.random.default_rng(6)
    data = rng.integers(0, 256, (N, H, W, CI), dtype=np.uint8)
    kernel = rng.integers(-128, 128, (KH, KW, CI, CO), dtype=np.int8)
    out = tvm.nd.array(np.zeros((N, H - KH + 1, W - KW + 1, CO), "int32"))
    f(tvm.nd.array(data), tvm.nd.array(kernel), out)
    ref = np.zeros(out.shape, np.int64)
    for rh in range(KH):
        for rw in range(KW):
            window = data[:, rh:rh + H - KH + 1, rw:rw + W - KW + 1, :].astype(np.int64)
            ref += window @ kernel[rh, rw].astype(np.int64)
    np.testing.assert_array_equal(out.numpy(), ref)


def test_registry_metadata_and_plugin_loading():
    intrin = tvm.tir.TensorIntrin.get(VNNI_DOT_16x4_INTRIN)
    assert intrin.meta.features == ("avx512vnni",)
    assert [(o.name, o.dtype, o.shape, o.written) for o in intrin.meta.operands] == [
        ("A", "uint8", (4,), False), ("B", "int8", (16, 4), False), ("C", "int32", (16,), True)]
    assert [(it.extent, it.kind) for it in intrin.meta.iters] == [(16, "S"), (4, "R")]
    assert intrin.meta.supported_by(tvm.target.Target("llvm -mcpu=znver4 -mattr=+avx512f,+avx512vnni"))
    assert not intrin.meta.supported_by(tvm.target.Target("llvm -mattr=+avx2"))
    assert not intrin.meta.supported_by(tvm.target.Target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod"))
    with pytest.raises(tvm.TVMError, match="avx512vnni"):  # an x86 feature on AArch64 is refused, not ignored
        tvm.target.Target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod,+avx512vnni")
    names = tvm.tir.TensorIntrin.list_names()
    for name in (VNNI_DOT_16x4_INTRIN, AVX512_DOT_16x4_INTRIN, AVX512_FMA_16_F32_INTRIN, AVX512_BF16_DOT_16x2_INTRIN):
        assert name in names
