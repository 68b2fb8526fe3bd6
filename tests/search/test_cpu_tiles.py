"""CPU register tiles: the joint tile provider keeps a candidate's accumulators within the vector register
file, mutations past it are dropped, and intrinsics with a reduction inside are not limited."""
import pytest

from search.context import TuneContext
from search.postproc import default_postprocs
from search.space_generator import PostOrderApply, sample_candidate
from search.space_generator.cpu_tiles import (_fma_vectors, _reduction_steps, register_budget, register_tile_fits,
                                             register_tile_provider, register_tiles)
from search.space_generator.replay import replay_candidate, resample
from tests.search.space_workloads import gemm_f32


matmul = gemm_f32(64, 64, 64)


def _tile_sizes(ctx, sch):
    tiles = register_tiles(sch.trace, ctx.vector_lanes("float32") * 32)
    from search.space_generator.cpu_tiles import _vectors

    return [_vectors([int(inst.decision[-1]) for inst in tilings], per) for tilings, per in tiles]


@pytest.mark.parametrize("target, budget", [("llvm -mcpu=haswell", 12), ("llvm -mcpu=skylake-avx512", 28),
                                            ("llvm -mtriple=aarch64-linux-gnu -mattr=+neon", 28),
                                            ("cuda -arch=sm_80", 0)])
def test_budget_is_the_register_file_less_the_operands(target, budget):
    assert register_budget(TuneContext.create(matmul, target)) == budget


def _plain_sketch(ctx):
    """The tiling sketch without an intrinsic: its vectorized loop's tile is aligned to the lanes."""
    return next(s for s in PostOrderApply().generate_design_space(ctx)
                if any(m > 1 for _, per in register_tiles(s.trace, 256) for m in per))


def test_sampled_register_tiles_fit_the_avx2_register_file():
    ctx = TuneContext.create(matmul, "llvm -mcpu=haswell", seed=0)
    sketches = [_plain_sketch(ctx)] + [s for s in PostOrderApply().generate_design_space(ctx)
                                       if any(i.kind == "annotate" and "fma_8" in str(i.args.get("ann_val"))
                                              for i in s.trace.insts)]
    assert len(sketches) >= 2, "a plain sketch and an elementwise-FMA intrinsic sketch"
    posts = default_postprocs(ctx)
    for sketch in sketches:
        joint = [size for seed in range(30) for size in _tile_sizes(ctx, sample_candidate(ctx, sketch, posts,
                                                                                            seed=seed))]
        assert joint and max(joint) <= 12 and len(set(joint)) > 2  # within budget, still varied
    # drawn one split at a time (the provider left out), many tiles are larger than the register file
    free = [size for seed in range(40)
            for size in _tile_sizes(ctx, replay_candidate(ctx, sketches[0].trace, posts, decision_provider=resample,
                                                          seed=seed))]
    assert max(free) > 12


def test_a_trace_past_the_budget_does_not_fit():
    ctx = TuneContext.create(matmul, "llvm -mcpu=haswell", seed=0)
    sketch = _plain_sketch(ctx)
    tilings, _ = register_tiles(sketch.trace, 256)[0]
    positions = [next(i for i, x in enumerate(sketch.trace.insts) if x is inst) for inst in tilings]

    def with_tiles(*decisions):
        trace = sketch.trace
        for pos, decision in zip(positions, decisions):
            trace = trace.with_decision(trace.insts[pos], decision)
        return trace

    big = with_tiles([1, 1, 1, 64], [1, 1, 1, 64])  # 64 rows x 8 vectors
    assert not register_tile_fits(big, 12, 256)
    assert register_tile_fits(big, 0, 256)  # no budget: no limit
    small = with_tiles([16, 1, 1, 4], [2, 1, 2, 16])  # 4 rows x 2 vectors
    assert register_tile_fits(small, 12, 256)


def test_only_elementwise_fma_intrinsics_count_registers():
    import intrinsics  # noqa: F401 - registers the intrinsics

    assert _fma_vectors("fma_8_f32f32f32_avx2", 256) == 1
    assert _fma_vectors("fma_16_f32f32f32_avx512", 256) == 2
    assert _fma_vectors("dot_8x4_u8i8s32_avx2", 256) == 0  # a reduction inside: accumulates in memory cheaply
    assert _fma_vectors("no_such_intrinsic", 256) == 0


def _spatial_tilings(ctx, sch):
    return [[int(d) for d in inst.decision] for tilings, _ in register_tiles(sch.trace, 256) for inst in tilings]


def test_a_share_of_draws_keeps_only_the_outer_and_register_levels():
    ctx = TuneContext.create(matmul, "llvm -mcpu=haswell", seed=0)
    sketch, posts = _plain_sketch(ctx), default_postprocs(ctx)

    sizes = []

    def draws(share):
        out = []
        for seed in range(40):
            provider = register_tile_provider(sketch.trace, seed, 12, 256, two_level=share)
            sch = replay_candidate(ctx, sketch.trace, posts, decision_provider=provider, seed=seed)
            out.append(_spatial_tilings(ctx, sch))
            sizes.extend(_tile_sizes(ctx, sch))
        return out

    def two_level(tilings):
        return all(all(f == 1 for f in t[1:-1]) for t in tilings)

    every = draws(1.0)
    assert all(two_level(t) for t in every)
    assert all(t[0] * t[-1] == 64 for tilings in every for t in tilings)        # still tilings of the loops
    assert sizes and max(sizes) <= 12                                            # within the register file
    assert len({tuple(map(tuple, t)) for t in every}) > 5                        # the register tiles still vary
    assert sum(two_level(t) for t in draws(0.0)) < 10                           # uniform draws: rarely so
    some = sum(two_level(t) for t in draws(None))                                # the default share
    assert 4 <= some <= 25


def test_blocks_with_a_long_reduction_keep_their_middle_levels():
    """A GEMM's middle tile levels block it for the caches: with K past ``SHORT_REDUCTION`` no draw is forced
    into two levels."""
    ctx = TuneContext.create(gemm_f32(64, 64, 256), "llvm -mcpu=haswell", seed=0)
    sketch, posts = _plain_sketch(ctx), default_postprocs(ctx)
    assert _reduction_steps(sketch.trace) == {id(register_tiles(sketch.trace, 256)[0][0][0]): 256}
    flat = 0
    for seed in range(40):
        provider = register_tile_provider(sketch.trace, seed, 12, 256, two_level=1.0)
        sch = replay_candidate(ctx, sketch.trace, posts, decision_provider=provider, seed=seed)
        flat += all(all(f == 1 for f in t[1:-1]) for t in _spatial_tilings(ctx, sch))
    assert flat < 10
