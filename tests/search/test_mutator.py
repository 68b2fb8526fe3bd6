"""Mutators: each changes exactly one decision (or annotation value) of a trace, and the result replays."""
import random

from search.context import TuneContext
from search.mutator import (MUTATORS, MutateComputeLocation, MutateParallel, MutateTileSize, MutateUnroll,
                            default_mutators)
from search.postproc import default_postprocs
from search.schedule_rule import PARALLEL
from search.space_generator import PostOrderApply, replay_candidate, sample_candidate
from tensorize.script import tir as T
from tests.search.space_workloads import gemm_f32

HOST = "llvm -mcpu=haswell"


def _candidate(workload, seed=0):
    ctx = TuneContext.create(workload, HOST, intrinsics=(), seed=seed, num_threads=2)
    space = PostOrderApply().generate_design_space(ctx)
    cand = sample_candidate(ctx, space[-1], default_postprocs(ctx), seed=seed)
    return ctx, cand


def _changes(old, new):
    """(kind, old decision/value, new) of every instruction that differs."""
    old_insts = old.without_postproc().insts
    assert len(old_insts) == len(new.insts)
    out = []
    for a, b in zip(old_insts, new.insts):
        assert a.kind == b.kind
        if a.decision != b.decision:
            out.append((a.kind, a.decision, b.decision))
        elif a.kind == "annotate" and a.args["ann_val"] is not b.args["ann_val"] \
                and not hasattr(a.args["ann_val"], "value") and a.args["ann_val"] != b.args["ann_val"]:
            out.append((a.kind, a.args["ann_val"], b.args["ann_val"]))
    return out


def test_defaults_are_metaschedule_cpu_probabilities():
    probs = {m.registered_name: p for m, p in default_mutators(None).items()}
    assert probs == {"mutate_tile_size": 0.9, "mutate_compute_location": 0.05, "mutate_unroll": 0.03,
                     "mutate_parallel": 0.02, "mutate_split_choice": 0.05}
    assert MUTATORS.names() == sorted(probs)


def test_tile_size_moves_one_factor_and_replays():
    ctx, cand = _candidate(gemm_f32(64, 64, 64))
    rng = random.Random(0)
    for _ in range(10):
        new = MutateTileSize().apply(cand.trace, ctx, rng)
        (change,) = _changes(cand.trace, new)
        kind, old, tile = change
        assert kind == "sample_perfect_tile" and len(old) == len(tile)
        prod_old = prod_new = 1
        for a, b in zip(old, tile):
            prod_old, prod_new = prod_old * a, prod_new * b
        assert prod_old == prod_new and sum(a != b for a, b in zip(old, tile)) == 2
        sch = replay_candidate(ctx, new, default_postprocs(ctx))
        assert [i.decision for i in sch.trace.insts if i.kind == "sample_perfect_tile"].count(tile) >= 1


def test_unroll_picks_another_depth_and_replays():
    ctx, cand = _candidate(gemm_f32(32, 32, 32))
    new = MutateUnroll().apply(cand.trace, ctx, random.Random(1))
    ((kind, old, choice),) = _changes(cand.trace, new)
    assert kind == "sample_categorical" and old != choice and 0 <= choice < 4
    replay_candidate(ctx, new, default_postprocs(ctx))


def test_parallel_changes_the_budget_and_replays():
    ctx, cand = _candidate(gemm_f32(32, 32, 32))
    new = MutateParallel().apply(cand.trace, ctx, random.Random(2))
    ((kind, old, value),) = _changes(cand.trace, new)
    assert kind == "annotate" and old == 32 and value != 32 and value % 2 == 0
    sch = replay_candidate(ctx, new, default_postprocs(ctx))
    assert PARALLEL not in sch.get(sch.get_block("root")).annotations


def _producer_consumer():
    @T.prim_func
    def f(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
        B = T.alloc_buffer((64, 64), "float32")
        for i, j in T.grid(64, 64):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(64, 64):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + T.float32(1)

    return f


def test_compute_location_moves_and_replays():
    from search.schedule_rule import ParallelVectorizeUnroll, RandomComputeLocation
    ctx = TuneContext.create(_producer_consumer(), HOST, intrinsics=(), seed=0, num_threads=2)
    space = PostOrderApply(rules=[RandomComputeLocation(), ParallelVectorizeUnroll()]).generate_design_space(ctx)
    cand = sample_candidate(ctx, space[0], default_postprocs(ctx), seed=4)
    assert "sample_compute_location" in [i.kind for i in cand.trace.insts]
    rng = random.Random(0)
    seen = set()
    for _ in range(6):
        new = MutateComputeLocation().apply(cand.trace, ctx, rng)
        ((kind, old, loc),) = _changes(cand.trace, new)
        assert kind == "sample_compute_location" and old != loc
        seen.add(loc)
        replay_candidate(ctx, new, default_postprocs(ctx))
    assert len(seen) >= 2


def test_nothing_to_mutate_gives_none():
    ctx = TuneContext.create(_producer_consumer(), HOST, intrinsics=(), seed=0)
    from tensorize.schedule import Schedule
    trace = Schedule(ctx.mod).trace
    rng = random.Random(0)
    assert all(m.apply(trace, ctx, rng) is None for m in default_mutators(ctx))


def test_tile_size_keeps_an_aligned_innermost_factor_aligned():
    rng = random.Random(0)
    for _ in range(200):
        tile = MutateTileSize._mutate([2, 2, 1, 16], 64, rng, multiple=16)
        assert tile[-1] % 16 == 0 and tile[0] * tile[1] * tile[2] * tile[3] == 64
    # a factor drawn without the constraint (or replayed from an old trace) mutates freely
    seen = {MutateTileSize._mutate([1, 2, 2, 8], 64, rng, multiple=16)[-1] for _ in range(200)}
    assert 4 in seen


def test_split_choice_moves_the_default_schedules_rows_and_the_program_stays_right():
    """A graph task's default schedule, as the search is seeded with it, has its register rows as a decision:
    the mutator moves it one or two places, the child replays with the search's postprocs and computes the
    same 1x1 convolution (7x7 pixels fused into 49, rows of 16 channels)."""
    import numpy as np

    import tensorize as tvm
    from search.mutator import MutateSplitChoice
    from tensorize import te
    from tensorize.graph.build import default_schedule_variants

    a, w = te.placeholder((1, 7, 7, 96), name="a"), te.placeholder((96, 32), name="w")
    k = te.reduce_axis((0, 96), name="k")
    conv = te.compute((1, 7, 7, 32), lambda n, y, x, c: te.sum(a[n, y, x, k] * w[k, c], axis=k), name="conv")
    out = te.compute((1, 7, 7, 32), lambda n, y, x, c: te.max(conv[0, y, x, c], 0.0), name="out")
    func = te.create_prim_func([a, w, out])
    trace = default_schedule_variants(func, HOST)[0].trace
    ctx = TuneContext.create(func, HOST, intrinsics=(), seed=0)
    rng = random.Random(0)
    data = np.random.default_rng(0).standard_normal((1, 7, 7, 96)).astype("float32")
    weight = np.random.default_rng(1).standard_normal((96, 32)).astype("float32")
    seen = set()
    for _ in range(6):
        child = MutateSplitChoice().apply(trace, ctx, rng)
        ((kind, old, new),) = _changes(trace, child)
        assert kind == "sample_categorical" and 0 < abs(new - old) <= 2
        seen.add(new)
        sch = replay_candidate(ctx, child, default_postprocs(ctx))
        got = tvm.nd.array(np.zeros((1, 7, 7, 32), "float32"))
        tvm.build(sch.mod, target=HOST)(tvm.nd.array(data), tvm.nd.array(weight), got)
        np.testing.assert_allclose(got.numpy(), np.maximum(data @ weight, 0), rtol=1e-4, atol=1e-4)
    assert len(seen) >= 2
