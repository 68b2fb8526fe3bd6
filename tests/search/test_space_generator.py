"""Space generation and replay: sampled candidates of small GEMM / conv2d / depthwise workloads build
and equal numpy on this host; a finished candidate's trace replays to the same program."""
import time

import numpy as np
import pytest

import tensorize as tvm
from search.context import TuneContext
from search.postproc import default_postprocs
from search.space_generator import PostOrderApply, blocks_post_order, replay_candidate, sample_candidate
from tensorize.ir import structural_equal
from tensorize.schedule import Schedule, ScheduleError
from tests.search.space_workloads import conv1x1_batch1_relu, depthwise_f32, gemm_bias_relu, gemm_f32
from tests.workloads import conv2d_nhwc_int8, int8_gemm

HOST = "llvm -mcpu=native"


def _random_args(func, rng):
    args = []
    for param in func.params:
        buf = func.buffer_map[param]
        shape = [int(s) for s in buf.shape]
        if buf.dtype.startswith("float"):
            args.append(rng.standard_normal(shape).astype(buf.dtype))
        else:
            args.append(rng.integers(0, 8, size=shape).astype(buf.dtype))
    return args


def _run(mod, arrays):
    rt = tvm.build(mod, target=HOST)
    nd = [tvm.nd.array(a.copy()) for a in arrays]
    rt(*nd)
    return nd[-1].numpy()


def _check_samples(workload, n, seed=0):
    ctx = TuneContext.create(workload, HOST, intrinsics=(), seed=seed)
    space = PostOrderApply().generate_design_space(ctx)
    postprocs = default_postprocs(ctx)
    rng = np.random.default_rng(seed)
    arrays = _random_args(ctx.mod["main"], rng)
    expected = _run(ctx.mod, arrays)  # the untransformed program is the reference
    built = 0
    for i in range(n):
        sch = sample_candidate(ctx, space[i % len(space)], postprocs, seed=seed + i)
        np.testing.assert_allclose(_run(sch.mod, arrays), expected, rtol=1e-4, atol=1e-4)
        built += 1
    return space, expected, arrays, built


def test_post_order_is_consumers_first_root_last():
    assert blocks_post_order(gemm_bias_relu(8, 8, 8)) == ["relu", "bias", "C", "root"]


def test_gemm_candidates_equal_numpy():
    _, expected, arrays, built = _check_samples(gemm_f32(64, 64, 64), 4)
    np.testing.assert_allclose(expected, arrays[0] @ arrays[1], rtol=1e-4, atol=1e-4)
    assert built == 4


def test_fused_gemm_bias_relu_candidates_equal_numpy():
    _, expected, arrays, _ = _check_samples(gemm_bias_relu(32, 48, 16), 3)
    np.testing.assert_allclose(expected, np.maximum(arrays[0] @ arrays[1] + arrays[2], 0), rtol=1e-4, atol=1e-4)


def test_int8_conv2d_nhwc_candidates_equal_numpy():
    _check_samples(conv2d_nhwc_int8(1, 10, 10, 16, 16, 3, 3), 3)


def test_depthwise_candidates_equal_numpy():
    _check_samples(depthwise_f32(10, 10, 16, 3, 3), 3)


def test_pixel_fused_convolution_candidates_equal_numpy():
    """Every sketch of a 7x7 image, its rows and columns fused into pixels or not, with the ReLU as its write stage."""
    space, expected, arrays, _ = _check_samples(conv1x1_batch1_relu(7, 7, 16, 32), 6)
    assert len(space) == 6
    ref = np.maximum(np.einsum("nyxc,ck->nyxk", arrays[0], arrays[1]), 0)
    np.testing.assert_allclose(expected, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif("avx2" not in tvm.target.host_cpu()[1], reason="the host CPU lacks avx2")
def test_int8_depthwise_lanewise_dot_candidates_equal_numpy():
    from tests.search.test_tensor_candidates import depthwise_nhwc

    ctx = TuneContext.create(depthwise_nhwc(12, 12, 16, 3, 3), HOST, intrinsics=("lanedot_8x4_u8i8s32_avx2",), seed=0)
    space = PostOrderApply().generate_design_space(ctx)
    tensorized = [s for s in space if "lanedot_8x4_u8i8s32_avx2" in str(s.trace)]
    assert tensorized and len(tensorized) < len(space)
    rng = np.random.default_rng(1)
    arrays = [rng.integers(0, 256, (1, 12, 12, 16)).astype("uint8"), rng.integers(-128, 128, (3, 3, 16)).astype("int8"),
              np.zeros((1, 10, 10, 16), "int32")]
    expected = _run(ctx.mod, arrays)
    for i in range(3):
        sch = sample_candidate(ctx, tensorized[i % len(tensorized)], default_postprocs(ctx), seed=i)
        np.testing.assert_array_equal(_run(sch.mod, arrays), expected)


def test_int8_gemm_candidates_equal_numpy():
    _check_samples(int8_gemm(64, 64, 64), 2)


def test_replaying_a_finished_candidate_gives_the_same_program():
    ctx = TuneContext.create(gemm_f32(64, 64, 64), HOST, intrinsics=(), seed=3)
    space = PostOrderApply().generate_design_space(ctx)
    postprocs = default_postprocs(ctx)
    for sketch in space:
        cand = sample_candidate(ctx, sketch, postprocs)
        again = Schedule(ctx.mod)
        cand.trace.apply_to_schedule(again)
        assert structural_equal(again.mod, cand.mod)
        # and through JSON, the way the database stores it
        from tensorize.schedule.trace import Trace
        again = Schedule(ctx.mod)
        Trace.from_json(cand.trace.as_json()).apply_to_schedule(again)
        assert structural_equal(again.mod, cand.mod)
        # replay_candidate with the recorded decisions gives it too (postprocs applied afresh)
        assert structural_equal(replay_candidate(ctx, cand.trace, postprocs).mod, cand.mod)


def test_resampling_changes_decisions_and_sampling_is_fast():
    ctx = TuneContext.create(gemm_f32(512, 512, 512), HOST, intrinsics=(), seed=0)
    space = PostOrderApply().generate_design_space(ctx)
    postprocs = default_postprocs(ctx)
    start = time.perf_counter()
    cands = [sample_candidate(ctx, space[i % 3], postprocs) for i in range(30)]
    per = (time.perf_counter() - start) / 30
    decisions = {str([inst.decision for inst in c.trace.insts if inst.decision is not None]) for c in cands}
    assert len(decisions) > 20
    assert per < 0.1, f"{per * 1e3:.1f} ms per candidate"


def test_invalid_decisions_raise():
    ctx = TuneContext.create(gemm_f32(64, 64, 64), HOST, intrinsics=(), seed=0)
    sketch = PostOrderApply().generate_design_space(ctx)[0]
    with pytest.raises(ScheduleError, match="not a perfect tiling"):
        replay_candidate(ctx, sketch.trace, default_postprocs(ctx),
                         decision_provider=lambda inst, d: [3, 1, 1, 1] if inst.kind == "sample_perfect_tile" else None)
