"""Postprocessors: what each rewrites, and how each rejects an invalid candidate (PostprocError)."""
import pytest

from search.context import TuneContext
from search.postproc import (POSTPROCS, PostprocError, RewriteLayout, RewriteParallelVectorizeUnroll,
                             RewriteReductionBlock, RewriteTensorize, Verify, default_postprocs)
from search.schedule_rule.analysis import AUTO_TENSORIZE
from search.space_generator import PostOrderApply, replay_candidate
from tensorize.ir.stmt import ForKind
from tensorize.schedule import Schedule, ScheduleError
from tensorize.script import tir as T
from tests.search.space_workloads import gemm_f32

HOST = "llvm -mcpu=haswell"


def _level2_candidate(decisions):
    """The GEMM sketch with the write cache after the second spatial tile, with given decisions."""
    ctx = TuneContext.create(gemm_f32(64, 64, 64), HOST, intrinsics=(), seed=0, num_threads=2)
    sketch = PostOrderApply().generate_design_space(ctx)[2]
    it = iter(decisions)
    sch = replay_candidate(ctx, sketch.trace, [], decision_provider=lambda inst, d: next(it))
    return ctx, sch


def test_registry_and_default_order():
    assert POSTPROCS.names() == ["rewrite_cooperative_fetch", "rewrite_layout", "rewrite_parallel_vectorize_unroll",
                                 "rewrite_reduction_block", "rewrite_tensorize", "rewrite_unbound_block", "verify",
                                 "verify_gpu_code"]
    assert [type(p) for p in default_postprocs(None)] == [RewriteLayout, RewriteParallelVectorizeUnroll,
                                                          RewriteReductionBlock, RewriteTensorize, Verify]
    assert issubclass(PostprocError, ScheduleError)


def test_parallel_vectorize_unroll_make_the_register_tile_kernel():
    # i: 2 x 4 x 1 x 8, j: 4 x 1 x 1 x 16, k: 16 x 4, unroll 64
    ctx, sch = _level2_candidate([[2, 4, 1, 8], [4, 1, 1, 16], [16, 4], 2])
    RewriteParallelVectorizeUnroll().apply(sch, ctx)
    RewriteReductionBlock().apply(sch, ctx)
    Verify(lower=True).apply(sch, ctx)
    loops = [sch.get(lp) for lp in sch.get_loops(sch.get_block("C_update"))]
    kinds = [(int(f.extent), f.kind) for f in loops]
    # i0*j0 = 8 parallel (i0*j0*i1 = 32 > 2 threads * 16 would be 32: also allowed)
    assert kinds[0][1] == ForKind.PARALLEL and kinds[0][0] in (8, 32)
    assert kinds[-1] == (16, ForKind.VECTORIZED)          # j3
    assert kinds[-2] == (8, ForKind.UNROLLED)             # i3: 8 steps
    assert kinds[-3] == (4, ForKind.UNROLLED)             # k1: 8 * 4 = 32 <= 64 steps
    assert all(f.kind == ForKind.SERIAL for f in loops[1:-3])  # j2, i2 (unit) and k0 (32 * 16 > 64)
    init = [sch.get(lp) for lp in sch.get_loops(sch.get_block("C_init"))]
    assert init[-1].kind == ForKind.VECTORIZED              # the init vectorizes too
    ann = sch.get(sch.get_block("root")).annotations
    assert not any(k.startswith("meta_schedule.") for k in ann)


def test_parallel_takes_a_loop_larger_than_the_budget_after_unit_loops():
    """TVM's rule: the loop that crosses ``meta_schedule.parallel`` is fused in, so a nest whose first loop alone
    exceeds it (unit tiles i0 and j0, then 64 rows in i1; budget 32) still runs in parallel."""
    ctx, sch = _level2_candidate([[1, 64, 1, 1], [1, 4, 1, 16], [16, 4], 2])
    RewriteParallelVectorizeUnroll().apply(sch, ctx)
    first = sch.get(sch.get_loops(sch.get_block("C"))[0])
    assert (int(first.extent), first.kind) == (64, ForKind.PARALLEL)


def test_no_root_annotations_no_change():
    sch = Schedule(gemm_f32(8, 8, 8))
    sch.enter_postproc()
    RewriteParallelVectorizeUnroll().apply(sch, None)
    assert [i.kind for i in sch.trace.insts] == ["enter_postproc"]


def test_reduction_block_error_names_the_block():
    @T.prim_func
    def clash(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32"), D: T.Buffer((16,), "float32")):
        for i, k in T.grid(16, 16):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        for i in range(16):
            with T.block("B_init"):
                vi = T.axis.spatial(16, i)
                D[vi] = B[vi]

    sch = Schedule(clash)
    sch.enter_postproc()
    with pytest.raises(PostprocError, match="cannot decompose the reduction of block 'B'"):
        RewriteReductionBlock().apply(sch, None)


def test_tensorize_error_when_the_block_does_not_match():
    sch = Schedule(gemm_f32(16, 16, 16))
    import intrinsics  # noqa: F401  (registers the x86 intrinsics)
    i, j, k = sch.get_loops(sch.get_block("C"))
    outer = sch.blockize(i)
    sch.annotate(outer, AUTO_TENSORIZE, "dot_16x4_vnni")
    sch.enter_postproc()
    with pytest.raises(PostprocError, match="cannot tensorize block 'C_o' with dot_16x4_vnni"):
        RewriteTensorize().apply(sch, None)


def test_verify_rejects_a_parallel_reduction_loop():
    @T.prim_func
    def racy(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            for k in T.parallel(16):
                with T.block("B"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vk]

    with pytest.raises(PostprocError, match="parallel loop k is bound to a reduction iterator of block 'B'"):
        Verify().apply(Schedule(racy), None)
    Verify(lower=True).apply(Schedule(gemm_f32(8, 8, 8)), None)  # a valid program passes


def test_tensorize_postproc_on_sampled_vnni_candidates():
    """The VNNI sketches of an int8 GEMM sample into tensorized candidates that lower (no execution:
    the target is an AVX-512 VNNI CPU whatever the host is)."""
    from search.space_generator import sample_candidate
    from tests.workloads import int8_gemm

    ctx = TuneContext.create(int8_gemm(64, 64, 64), "llvm -mcpu=znver4 -mattr=+avx512f,+avx512vnni,+avx512bw",
                             seed=0, intrinsics=("dot_16x4_vnni",))
    space = PostOrderApply().generate_design_space(ctx)
    assert len(space) == 6  # 3 tensorized + 3 plain
    postprocs = default_postprocs(ctx)[:-1] + [Verify(lower=True)]
    for sketch in space[:3]:
        cand = sample_candidate(ctx, sketch, postprocs, seed=1)
        tensorized = [i.args["tensor_intrin"] for i in cand.trace.insts if i.kind == "tensorize"]
        assert tensorized == ["dot_16x4_vnni"]
