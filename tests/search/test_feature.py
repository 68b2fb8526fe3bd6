"""Per-store program features: fixed length, named, and responding to the schedule as they should."""
import math

import numpy as np

import intrinsics  # noqa: F401  (registers the tensor intrinsics)
import tensorize as tvm
from search import apply_candidate, get_tensorize_candidates
from search.context import TuneContext
from search.feature import FEATURES, NUM_FEATURES, PerStoreFeature, feature_names
from search.feature.program import collect_program, lower_for_features
from tensorize import te
from tests.workloads import int8_gemm

VNNI_TARGET = "llvm -mcpu=znver4 -mattr=+avx512f,+avx512vnni,+avx512bw"
NAMES = feature_names()


def log(x):
    return np.float32(math.log2(1 + x))


def gemm(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def tiled(n=256, tile=32, vectorize=True, parallel=True):
    """i0 j0 (fused, parallel) k0 i1 k1 j1 j2 (vectorized), the reduction's init decomposed."""
    sch = tvm.tir.Schedule(gemm(n))
    b = sch.get_block("C")
    i, j, k = sch.get_loops(b)
    i0, i1 = sch.split(i, [None, tile])
    j0, j1, j2 = sch.split(j, [None, 8, 8])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, k0, i1, k1, j1, j2)
    fused = sch.fuse(i0, j0)
    if parallel:
        sch.parallel(fused)
    if vectorize:
        sch.vectorize(j2)
    sch.decompose_reduction(b, k0)
    return sch


def features(sch, target="llvm -mcpu=haswell"):
    ctx = TuneContext.create(sch.mod, target, seed=0)
    [vec] = FEATURES.create("per_store").extract(ctx, [sch])
    return vec


def f(vec, name):
    return vec[NAMES.index(name)]


def access_values(vec, field):
    return sorted(float(f(vec, f"access{i}.{field}")) for i in range(5))


def test_length_names_and_dtype():
    assert len(NAMES) == NUM_FEATURES == len(set(NAMES))
    assert 140 <= NUM_FEATURES <= 170
    vec = features(tiled())
    assert vec.shape == (NUM_FEATURES,) and vec.dtype == np.float32 and np.isfinite(vec).all()
    assert FEATURES.names() == ["per_store"] and PerStoreFeature.feature_names() == NAMES


def test_arithmetic_loop_and_footprint_of_a_plain_gemm():
    n = 64
    vec = features(tvm.tir.Schedule(gemm(n)))
    # two stores: the init (under `if k == 0` inside the nest) and the update
    assert f(vec, "loop.num_stores") == 2
    assert f(vec, "arith.float_mad") == log(n ** 3)
    assert f(vec, "arith.float_mul") == 0 and f(vec, "arith.float_addsub") == 0
    assert f(vec, "vec.pos_none") == 2 and f(vec, "parallel.num") == 0
    # every buffer is touched whole: 64 * 64 * 4 bytes, 64 * 64 * 4 / 64 cache lines
    assert log(n * n * 4) in access_values(vec, "unique_bytes")
    assert log(n * n * 4 // 64) in access_values(vec, "unique_lines")
    # loops i, j, k: A[i, k] moves by 1 along k, B[k, j] by n; C is reused across k (n times)
    strides = access_values(vec, "stride")
    assert log(1) in strides and log(n) in strides
    assert log(n) in access_values(vec, "reuse_ct")


def test_vectorizing_the_inner_loop_shows_in_the_vector_features():
    on, off = features(tiled(vectorize=True)), features(tiled(vectorize=False))
    assert f(on, "vec.num") == 2 and f(on, "vec.pos_inner") == 2 and f(on, "vec.len") == 2 * log(8)
    assert f(off, "vec.num") == 0 and f(off, "vec.pos_none") == 2 and f(off, "vec.len") == 0
    changed = {NAMES[i] for i in np.flatnonzero(on != off)}
    assert changed and all(name.startswith("vec.") for name in changed), changed


def test_parallel_loop_features():
    on, off = features(tiled(parallel=True)), features(tiled(parallel=False))
    # 256 / 32 * 256 / 64 = 32 fused outer iterations, around both stores
    assert f(on, "parallel.prod") == 2 * log(32) and f(on, "parallel.pos_outer") == 2
    assert f(off, "parallel.num") == 0 and f(off, "parallel.pos_none") == 2


def test_a_bigger_tile_changes_reuse_and_the_outer_loops():
    small, big = features(tiled(tile=32)), features(tiled(tile=64))
    # B[k, j] is not moved by i1: reused tile times
    assert log(32) in access_values(small, "reuse_ct") and log(64) in access_values(big, "reuse_ct")
    assert f(small, "parallel.prod") == 2 * log(32) and f(big, "parallel.prod") == 2 * log(16)
    assert sum(access_values(big, "bytes_d_reuse_ct")) < sum(access_values(small, "bytes_d_reuse_ct"))
    assert f(big, "intensity.8") > f(small, "intensity.8")


def test_allocation_features():
    sch = tvm.tir.Schedule(gemm(64))
    sch.cache_read(sch.get_block("C"), 0, "global")
    vec = features(sch)
    assert f(vec, "alloc.alloc_count") == 1 and f(vec, "alloc.alloc_size") == log(64 * 64 * 4)
    assert f(features(tvm.tir.Schedule(gemm(64))), "alloc.alloc_count") == 0


def test_vnni_tensorized_gemm_shows_its_intrinsic_calls():
    n = 64
    sch = tvm.tir.Schedule(int8_gemm(n, n, n))
    [cand] = get_tensorize_candidates(sch, sch.get_block("C"), "dot_16x4_vnni")
    sch.tensorize(apply_candidate(sch, cand), "dot_16x4_vnni")
    vec = features(sch, VNNI_TARGET)
    # one vpdpbusd per 16 outputs and 4 reduction steps
    assert f(vec, "intrin.x86_int8_dot") == log(n * n * n // 64)
    assert f(vec, "intrin.other_llvm") == 0 and f(vec, "intrin.float_dot") == 0
    plain = features(tvm.tir.Schedule(int8_gemm(n, n, n)), VNNI_TARGET)
    assert f(plain, "intrin.x86_int8_dot") == 0 and f(plain, "arith.int_mad") > 0


def test_cache_returns_equal_copies():
    ex = FEATURES.create("per_store")
    ctx = TuneContext.create(gemm(64), "llvm -mcpu=haswell")
    sch = tiled(n=64, tile=16)
    [a] = ex.extract(ctx, [sch])
    a[:] = -1                                   # the caller's copy, not the cached one
    [b] = ex.extract(ctx, [tiled(n=64, tile=16)])
    assert len(ex._cache) == 1 and (b >= 0).all()
    np.testing.assert_array_equal(b, PerStoreFeature(cache_size=0).extract(ctx, [sch])[0])


def test_program_view_lists_stores_with_their_loops():
    view = collect_program(lower_for_features(tiled(n=64, tile=16).mod))
    assert [len(s.loops) for s in view.stores] == [4, 6]          # init: fused i1 j1 j2; update: +k0 k1
    assert [s.accesses[0].buffer.name for s in view.stores] == ["C", "C"]
    assert sorted(a.buffer.name for a in view.stores[1].accesses) == ["A", "B", "C", "C"]


def test_an_intrinsic_result_stored_twice_counts_once():
    # smmla's 2x2 int32 result (a let) is stored as two rows: the call is counted at its first use only
    n = 64
    sch = tvm.tir.Schedule(int8_gemm(n, n, n, "int8", "int8"))
    cand = get_tensorize_candidates(sch, sch.get_block("C"), "matmul_2x2x8_i8i8s32_smmla")[0]
    sch.tensorize(apply_candidate(sch, cand), "matmul_2x2x8_i8i8s32_smmla")
    vec = features(sch, "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+i8mm")
    assert f(vec, "intrin.matrix") == log(n * n * n // (2 * 2 * 8))
