"""Tensorization candidates: iterator roles, rejections with reasons, and rewritten programs that
tensorize, build and equal numpy exactly (x86 VNNI on the host, ARM sdot under qemu)."""
import numpy as np
import pytest

import intrinsics  # noqa: F401  (registers the families)
import tensorize as tvm
from search import apply_candidate, get_tensorize_candidates
from tensorize.runtime.aarch64 import INSTALL_HINT, run_aarch64, tools_available
from tensorize.script import tir as T
from tensorize.target import host_cpu
from tests.workloads import conv2d_nhwc_int8, int8_gemm

VNNI = "dot_16x4_vnni"
SDOT = "dot_4x4_i8i8s32_sdot"
HOST = "llvm -mcpu=native"
ARM = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod"
needs_vnni = pytest.mark.skipif("avx512vnni" not in host_cpu()[1], reason="the host CPU lacks avx512vnni")


# -- workloads --------------------------------------------------------------------------------------
def gemm_kn(M, N, K):
    """B stored (K, N) and the product written B * A: roles come from the indices, not the spelling."""
    @T.prim_func
    def func(A: T.Buffer((M, K), "uint8"), B: T.Buffer((K, N), "int8"), C: T.Buffer((M, N), "int32")):
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0
                C[vi, vj] = C[vi, vj] + T.Cast("int32", B[vk, vj]) * T.Cast("int32", A[vi, vk])

    return func


def batch_matmul(Bt, M, N, K):
    @T.prim_func
    def func(A: T.Buffer((Bt, M, K), "uint8"), B: T.Buffer((Bt, N, K), "int8"), C: T.Buffer((Bt, M, N), "int32")):
        for b, i, j, k in T.grid(Bt, M, N, K):
            with T.block("C"):
                vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
                with T.init():
                    C[vb, vi, vj] = 0
                C[vb, vi, vj] = C[vb, vi, vj] + T.Cast("int32", A[vb, vi, vk]) * T.Cast("int32", B[vb, vj, vk])

    return func


def depthwise_nhwc(H, W, C, KH, KW):
    OH, OW = H - KH + 1, W - KW + 1

    @T.prim_func
    def dep(data: T.Buffer((1, H, W, C), "uint8"), kernel: T.Buffer((KH, KW, C), "int8"),
            out: T.Buffer((1, OH, OW, C), "int32")):
        for n, h, w, c, rh, rw in T.grid(1, OH, OW, C, KH, KW):
            with T.block("dep"):
                vn, vh, vw, vc, vrh, vrw = T.axis.remap("SSSSRR", [n, h, w, c, rh, rw])
                with T.init():
                    out[vn, vh, vw, vc] = 0
                out[vn, vh, vw, vc] = out[vn, vh, vw, vc] + T.Cast("int32", data[vn, vh + vrh, vw + vrw, vc]) \
                    * T.Cast("int32", kernel[vrh, vrw, vc])

    return dep


def conv_reference(data, kernel):
    KH, KW = kernel.shape[:2]
    N, H, W, _ = data.shape
    ref = np.zeros((N, H - KH + 1, W - KW + 1, kernel.shape[3]), np.int64)
    for rh in range(KH):
        for rw in range(KW):
            window = data[:, rh:rh + H - KH + 1, rw:rw + W - KW + 1, :].astype(np.int64)
            ref += window @ kernel[rh, rw].astype(np.int64)
    return ref


def tensorized(func, block, intrin, pick=0):
    sch = tvm.tir.Schedule(func)
    cands = get_tensorize_candidates(sch, sch.get_block(block), intrin)
    assert cands, cands.reason
    loop = apply_candidate(sch, cands[pick])
    sch.tensorize(loop, intrin)
    return sch, cands


def ints(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, shape, dtype=dtype)


def run_host(sch, *arrays, out_shape):
    f = tvm.build(sch.mod, target=HOST)
    out = tvm.nd.array(np.full(out_shape, 7, "int32"))  # the init must overwrite garbage
    f(*[tvm.nd.array(a) for a in arrays], out)
    return f, out.numpy()


# -- roles and descriptions -------------------------------------------------------------------------
def test_gemm_roles_mapping_and_description():
    sch = tvm.tir.Schedule(int8_gemm(64, 64, 64))
    cands = get_tensorize_candidates(sch, sch.get_block("C"), VNNI)
    assert cands.reason is None and len(cands) == 1
    cand = cands[0]
    assert dict(cand.operands) == {"A": "A", "B": "B", "C": "C"}
    assert [(m.desc_iter, m.kind, m.block_iter_names, m.intrin_extent) for m in cand.mappings] == [
        ("vi", "S", ("vj",), 16), ("vk", "R", ("vk",), 4)]
    assert cand.outer_iter_names == ("vi",) and not cand.needs_padding
    text = cand.describe()
    assert "vi (S, 16) <- vj (64)" in text and "B[vj, vk] -> [vj // 16, vk // 4, vj % 16, vk % 4]" in text


def test_operand_order_and_commuted_product_do_not_matter():
    sch = tvm.tir.Schedule(gemm_kn(32, 32, 32))
    cand = get_tensorize_candidates(sch, "C", VNNI)[0]
    assert dict(cand.operands) == {"A": "A", "B": "B", "C": "C"}
    assert [m.block_iter_names for m in cand.mappings] == [("vj",), ("vk",)]


# -- x86 VNNI: programs that build and equal numpy ---------------------------------------------------
@needs_vnni
def test_vnni_gemm_64_exact_and_uses_vpdpbusd():
    sch, _ = tensorized(int8_gemm(64, 64, 64), "C", VNNI)
    text = sch.mod.script()
    assert "B_reindex" in text and "A_reindex" not in text, "only B needs repacking; A and C are used in place"
    rng = np.random.default_rng(0)
    a, b = ints(rng, (64, 64), "uint8"), ints(rng, (64, 64), "int8")
    f, got = run_host(sch, a, b, out_shape=(64, 64))
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32).T)
    assert "vpdpbusd" in f.get_source("asm")


@needs_vnni
def test_vnni_gemm_non_divisible_is_padded_exact_and_trace_replays():
    sch, cands = tensorized(int8_gemm(50, 60, 70), "C", VNNI)
    cand = cands[0]
    assert [(m.extent, m.padded_extent) for m in cand.mappings] == [(60, 64), (70, 72)]
    assert cand.needs_padding and cand.padded_fraction == pytest.approx(64 * 72 / (60 * 70) - 1)
    assert "(60 -> 64)" in cand.describe()
    rng = np.random.default_rng(1)
    a, b = ints(rng, (50, 70), "uint8"), ints(rng, (60, 70), "int8")
    _, got = run_host(sch, a, b, out_shape=(50, 60))
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32).T)
    replay = tvm.tir.Schedule(int8_gemm(50, 60, 70))
    sch.trace.apply_to_schedule(replay)
    tvm.ir.assert_structural_equal(replay.mod, sch.mod)


@needs_vnni
def test_vnni_gemm_with_b_stored_k_major():
    sch, _ = tensorized(gemm_kn(32, 48, 40), "C", VNNI)
    rng = np.random.default_rng(2)
    a, b = ints(rng, (32, 40), "uint8"), ints(rng, (40, 48), "int8")
    _, got = run_host(sch, a, b, out_shape=(32, 48))
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


def test_conv2d_candidates_fuse_the_window_and_channels_or_keep_the_window_outside():
    sch = tvm.tir.Schedule(conv2d_nhwc_int8(1, 8, 8, 8, 16, 3, 3))
    cands = get_tensorize_candidates(sch, "conv", VNNI)
    k_choices = {m.block_iter_names for c in cands for m in c.mappings if m.desc_iter == "vk"}
    assert ("vrh", "vrw", "vci") in k_choices and ("vci",) in k_choices
    fused = next(c for c in cands if c.mappings[1].block_iter_names == ("vrh", "vrw", "vci"))
    assert fused.mappings[1].extent == 72 and fused.outer_iter_names == ("vn", "vh", "vw")
    assert cands[0] is fused, "with no padding either way, fusing the whole role comes first"


@needs_vnni
@pytest.mark.parametrize("fuse_window", [True, False])
def test_vnni_conv2d_nhwc_exact(fuse_window):
    # CI = 6: the reduction is padded (54 -> 56 fused, 6 -> 8 channels alone); CO = 20 pads to 32.
    func = conv2d_nhwc_int8(1, 7, 7, 6, 20, 3, 3)
    sch = tvm.tir.Schedule(func)
    cands = get_tensorize_candidates(sch, "conv", VNNI)
    want = ("vrh", "vrw", "vci") if fuse_window else ("vci",)
    pick = next(k for k, c in enumerate(cands) if c.mappings[1].block_iter_names == want)
    sch, _ = tensorized(func, "conv", VNNI, pick=pick)
    rng = np.random.default_rng(3)
    data, kernel = ints(rng, (1, 7, 7, 6), "uint8"), ints(rng, (3, 3, 6, 20), "int8")
    f, got = run_host(sch, data, kernel, out_shape=(1, 5, 5, 20))
    np.testing.assert_array_equal(got, conv_reference(data, kernel))
    assert "vpdpbusd" in f.get_source("asm")


@pytest.mark.skipif("avx2" not in host_cpu()[1], reason="the host CPU lacks avx2")
@pytest.mark.parametrize("fuse_window, ci, co", [(True, 8, 16), (False, 8, 16), (False, 6, 16), (False, 8, 20)])
def test_avx2_conv2d_nhwc_exact_and_input_used_in_place_when_it_can(fuse_window, ci, co):
    intrin = "dot_8x4_u8i8s32_avx2"
    func = conv2d_nhwc_int8(1, 7, 7, ci, co, 3, 3)
    sch = tvm.tir.Schedule(func)
    cands = get_tensorize_candidates(sch, "conv", intrin)
    want = ("vrh", "vrw", "vci") if fuse_window else ("vci",)
    cand = next(c for c in cands if c.mappings[1].block_iter_names == want)
    sch.tensorize(apply_candidate(sch, cand), intrin)
    # channels alone, nothing padded: the dot reads data[n, h + rh, w + rw, ci:ci + 4] where it is (no im2col)
    in_place = not fuse_window and ci % 4 == 0 and co % 8 == 0
    assert ("data_reindex" not in sch.mod.script()) == in_place
    rng = np.random.default_rng(ci)
    data, kernel = ints(rng, (1, 7, 7, ci), "uint8"), ints(rng, (3, 3, ci, co), "int8")
    _, got = run_host(sch, data, kernel, out_shape=(1, 5, 5, co))
    np.testing.assert_array_equal(got, conv_reference(data, kernel))


@needs_vnni
def test_vnni_batch_matmul_keeps_the_batch_outside_exact():
    sch = tvm.tir.Schedule(batch_matmul(3, 16, 32, 24))
    cand = get_tensorize_candidates(sch, "C", VNNI)[0]
    assert cand.outer_iter_names == ("vb", "vi")
    sch, _ = tensorized(batch_matmul(3, 16, 32, 24), "C", VNNI)
    rng = np.random.default_rng(4)
    a, b = ints(rng, (3, 16, 24), "uint8"), ints(rng, (3, 32, 24), "int8")
    _, got = run_host(sch, a, b, out_shape=(3, 16, 32))
    np.testing.assert_array_equal(got, np.einsum("bik,bjk->bij", a.astype(np.int64), b.astype(np.int64)))


# -- rejections ---------------------------------------------------------------------------------------
def test_depthwise_conv_has_no_vnni_candidate_and_says_why():
    sch = tvm.tir.Schedule(depthwise_nhwc(8, 8, 32, 3, 3))
    cands = get_tensorize_candidates(sch, "dep", VNNI)
    assert cands == [] and cands.reason is not None
    assert "no block iterator plays the role of the desc's vi (S, indexing {B, C})" in cands.reason
    assert "vc: S {A, B, C}" in cands.reason, "the reason lists the block's roles"


LANEDOT_AVX2 = "lanedot_8x4_u8i8s32_avx2"
needs_avx2 = pytest.mark.skipif("avx2" not in host_cpu()[1], reason="the host CPU lacks avx2")


def depthwise_reference(data, kernel):
    KH, KW = kernel.shape[:2]
    OH, OW = data.shape[1] - KH + 1, data.shape[2] - KW + 1
    return sum(data[:, rh:rh + OH, rw:rw + OW, :].astype(np.int64) * kernel[rh, rw].astype(np.int64)
               for rh in range(KH) for rw in range(KW))


def test_depthwise_window_maps_onto_a_lanewise_dot_padded_9_to_12():
    sch = tvm.tir.Schedule(depthwise_nhwc(10, 10, 16, 3, 3))
    cands = get_tensorize_candidates(sch, "dep", LANEDOT_AVX2)
    assert cands.reason is None
    first = cands[0]
    assert dict(first.operands) == {"A": "data", "B": "kernel", "C": "out"}
    assert [(m.desc_iter, m.block_iter_names, m.intrin_extent, m.extent, m.padded_extent) for m in first.mappings] == [
        ("vi", ("vc",), 8, 16, 16), ("vk", ("vrh", "vrw"), 4, 9, 12)]
    assert "vk (R, 4) <- vrh * vrw (9 -> 12)" in first.describe()
    assert first.outer_iter_names == ("vn", "vh", "vw")
    # the other variants keep one window axis outside (3 taps padded to 4)
    assert {m.block_iter_names for c in cands[1:] for m in c.mappings if m.desc_iter == "vk"} == {("vrh",), ("vrw",)}


@needs_avx2
@pytest.mark.parametrize("pick", [0, 1])
def test_lanewise_dot_depthwise_is_exact(pick):
    sch = tvm.tir.Schedule(depthwise_nhwc(11, 9, 24, 3, 3))
    cands = get_tensorize_candidates(sch, "dep", LANEDOT_AVX2)
    sch.tensorize(apply_candidate(sch, cands[pick]), LANEDOT_AVX2)
    assert "data_reindex" in sch.mod.script(), "the window is gathered once into (channel, tap) order"
    rng = np.random.default_rng(pick)
    data, kernel = ints(rng, (1, 11, 9, 24), "uint8"), ints(rng, (3, 3, 24), "int8")  # full ranges: no saturation
    _, got = run_host(sch, data, kernel, out_shape=(1, 9, 7, 24))
    np.testing.assert_array_equal(got, depthwise_reference(data, kernel))


@pytest.mark.parametrize("intrin, target, register", [
    ("lanedot_16x4_u8i8s32_vnni", "llvm -mcpu=znver4", "zmm"),
    ("lanedot_8x4_u8i8s32_avxvnni", "llvm -mcpu=alderlake -mattr=+avxvnni", "ymm")])
def test_vnni_lanewise_dots_compile_to_vpdpbusd(intrin, target, register):
    sch = tvm.tir.Schedule(depthwise_nhwc(10, 10, 32, 3, 3))
    sch.tensorize(apply_candidate(sch, get_tensorize_candidates(sch, "dep", intrin)[0]), intrin)
    asm = tvm.build(sch.mod, target=target).get_source("asm")  # compiled, not run
    assert "vpdpbusd" in asm and register in asm


def test_dtype_mismatch_is_rejected_with_the_cast_it_would_need():
    sch = tvm.tir.Schedule(int8_gemm(32, 32, 32, a_dtype="int8"))
    cands = get_tensorize_candidates(sch, "C", VNNI)
    assert cands == []
    assert "dtype mismatch" in cands.reason and "uint8" in cands.reason and "int8" in cands.reason
    assert "cast" in cands.reason


def test_a_block_that_is_not_einsum_like_is_rejected():
    @T.prim_func
    def two_stores(A: T.Buffer((16, 16), "uint8"), C: T.Buffer((16, 16), "int32")):
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.Cast("int32", A[vi, vj])
                C[vj, vi] = T.Cast("int32", A[vi, vj])

    sch = tvm.tir.Schedule(two_stores)
    cands = get_tensorize_candidates(sch, "C", VNNI)
    assert cands == [] and "not a single buffer store" in cands.reason


def test_apply_refuses_a_block_that_changed():
    sch = tvm.tir.Schedule(int8_gemm(64, 64, 64))
    cand = get_tensorize_candidates(sch, "C", VNNI)[0]
    other = tvm.tir.Schedule(int8_gemm(64, 64, 32))
    with pytest.raises(ValueError, match="generate candidates again"):
        apply_candidate(other, cand)


# -- ARM sdot under qemu ------------------------------------------------------------------------------
def test_sdot_gemm_candidates():
    sch = tvm.tir.Schedule(int8_gemm(20, 24, 36, a_dtype="int8"))
    cands = get_tensorize_candidates(sch, "C", SDOT)
    assert cands and [(m.block_iter_names, m.intrin_extent) for m in cands[0].mappings] == [
        (("vj",), 4), (("vk",), 4)]
    # The u8 x s8 VNNI desc does not accept this s8 x s8 GEMM.
    assert get_tensorize_candidates(sch, "C", VNNI).reason is not None


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available(), reason=f"needs qemu and an aarch64 cross compiler: {INSTALL_HINT}")
def test_sdot_gemm_runs_exactly_under_qemu():
    M, N, K = 20, 22, 30  # N and K are padded to multiples of 4
    sch, _ = tensorized(int8_gemm(M, N, K, a_dtype="int8"), "C", SDOT)
    f = tvm.build(sch.mod, target=ARM)
    assert "sdot\tv" in f.get_source("asm")
    rng = np.random.default_rng(5)
    a, b = ints(rng, (M, K), "int8"), ints(rng, (N, K), "int8")
    c = np.full((M, N), 7, "int32")
    run_aarch64(f, "main", a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32).T)


@pytest.mark.skipif("avx512f" not in host_cpu()[1], reason="the host CPU lacks avx512f")
def test_f32_fma_candidate_keeps_i_and_k_outside_and_uses_b_in_place():
    @T.prim_func
    def f32_gemm(A: T.Buffer((32, 24), "float32"), B: T.Buffer((24, 40), "float32"), C: T.Buffer((32, 40), "float32")):
        for i, j, k in T.grid(32, 40, 24):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    sch, cands = tensorized(f32_gemm, "C", "fma_16_f32_avx512")
    assert cands[0].outer_iter_names == ("vi", "vk") and cands[0].mappings[0].padded_extent == 48
    rng = np.random.default_rng(8)
    a, b = rng.random((32, 24), "float32"), rng.random((24, 40), "float32")
    f = tvm.build(sch.mod, target=HOST)
    c = tvm.nd.array(np.zeros((32, 40), "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5)


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available(), reason=f"needs qemu and an aarch64 cross compiler: {INSTALL_HINT}")
def test_smmla_gemm_tiles_every_operand_and_runs_exactly_under_qemu():
    M, N, K = 10, 12, 20
    sch, cands = tensorized(int8_gemm(M, N, K, a_dtype="int8"), "C", "matmul_2x2x8_i8i8s32_smmla")
    assert "A[vi, vk] -> [vi // 2, vk // 8, vi % 2, vk % 8]" in cands[0].describe()
    f = tvm.build(sch.mod, target="llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+i8mm")
    rng = np.random.default_rng(9)
    a, b = ints(rng, (M, K), "int8"), ints(rng, (N, K), "int8")
    c = np.zeros((M, N), "int32")
    run_aarch64(f, "main", a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32).T)
