"""GEMMs tensorize with the AVX2 int8 dot (8 lanes x 4) and give exact results: 127x255x511 through padding
(neither N nor K divides), 1000^3 without (8 and 4 divide 1000; an AVX-512 16-lane dot would pad it).

Candidates are sampled from the tensorized sketches of the search space, built by the search's builder and
checked by its runner against the untransformed program (exact for integers).
"""
import pytest

from experiments.workloads.gemm import gemm_u8s8s32
from search.context import TuneContext
from search.measure import LocalBuilder, LocalRunner, MeasureCandidate
from search.postproc import default_postprocs
from search.schedule_rule.analysis import AUTO_TENSORIZE
from search.space_generator import PostOrderApply, sample_candidate
from tensorize import te
from tensorize.target import host_cpu

HOST = "llvm -mcpu=native"
pytestmark = pytest.mark.skipif("avx2" not in host_cpu()[1], reason="the AVX2 int8 dot needs a host with avx2")


def _tensorized_sketches(ctx):
    out = []
    for sch in PostOrderApply().generate_design_space(ctx):
        marks = [rs[0].block.annotations[AUTO_TENSORIZE] for rs in sch._index("main").blocks.values()
                 if AUTO_TENSORIZE in rs[0].block.annotations]
        if marks:
            out.append((marks[0], sch))
    return out


def _check(M, N, K, tmp_path, samples, padded=True):
    func = te.create_prim_func(list(gemm_u8s8s32(M, N, K)))
    ctx = TuneContext.create(func, HOST, seed=0)
    sketches = _tensorized_sketches(ctx)
    assert sketches, f"no tensorized sketch among intrinsics {ctx.intrinsics}"
    intrins = {name for name, _ in sketches}
    assert any("dot_8x4_u8i8s32_avx2" in name or "avx2" in name for name in intrins), intrins
    # On an AVX-512 host the 16-lane dots compete too (and pad 1000); the claim is about the 8-lane AVX2 dot.
    sketches = [(name, sch) for name, sch in sketches if "avx2" in name]
    postprocs = default_postprocs(ctx)
    cands = []
    for seed in range(samples):
        name, sketch = sketches[seed % len(sketches)]
        sch = sample_candidate(ctx, sketch, postprocs, seed=seed)
        kinds = [inst.kind for inst in sch.trace.insts]
        assert "tensorize" in kinds and ("pad_einsum" in kinds) == padded
        cands.append(MeasureCandidate(sch.mod, sch.trace.as_json()))
    with LocalBuilder(str(tmp_path)) as builder, LocalRunner(str(tmp_path), number=1, repeat=1) as runner:
        builds = builder.build(cands, ctx.target)
        assert all(b.ok for b in builds), [b.error for b in builds]
        results = runner.run(ctx, builds)
    assert all(r.ok for r in results), [(r.error_kind, r.error) for r in results]


def test_odd_int8_gemm_tensorizes_through_padding_exactly(tmp_path):
    _check(127, 255, 511, tmp_path, samples=3)


@pytest.mark.slow
def test_1000_cubed_int8_gemm_tensorizes_through_padding_exactly(tmp_path):
    _check(1000, 1000, 1000, tmp_path, samples=2, padded=False)
