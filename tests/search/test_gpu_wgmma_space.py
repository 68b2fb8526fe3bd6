"""The search's wgmma sketches (``multi_level_tiling_wgmma``, ``cuda -arch=sm_90a`` only): sampled candidates are
valid, compile with nvcc and compute the GEMM (the warpgroup model runs the lowered, pipelined program)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import tensorize as tvm
from intrinsics.cuda_wgmma_schedule import gemm_nt
from search.context import TuneContext
from search.postproc import default_postprocs
from search.schedule_rule.gpu_wgmma import MultiLevelTilingWGMMA
from search.space_generator import PostOrderApply, sample_candidate
from tensorize.transform.gpu_emulation import run_warp_emulated


def _wgmma_sketches(ctx):
    return [s for s in PostOrderApply().generate_design_space(ctx) if "ptx_wgmma" in s.mod.script()]


def test_only_sm_90a_gets_wgmma_sketches():
    # 10 with cp.async fetches (5 block tiles x K tiles of 32 and 64), 5 warp-specialised TMA ones and their 5
    # persistent variants
    assert len(_wgmma_sketches(TuneContext.create(gemm_nt(256, 512, 256), "cuda -arch=sm_90a", seed=0))) == 20
    assert not _wgmma_sketches(TuneContext.create(gemm_nt(256, 512, 256), "cuda -arch=sm_90", seed=0))


def test_rule_rejects_an_n_wgmma_lacks():
    with pytest.raises(ValueError, match="no N of 96"):
        MultiLevelTilingWGMMA(block_tiles=[(2, 96)])


def test_sampled_wgmma_candidates_compute_the_gemm(tmp_path):
    M, N, K = 256, 512, 256
    ctx = TuneContext.create(gemm_nt(M, N, K), "cuda -arch=sm_90a", seed=0)
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (M, K)).astype("float16"), rng.uniform(-1, 1, (N, K)).astype("float16")
    reference = a.astype("float64") @ b.astype("float64").T
    posts = default_postprocs(ctx)
    for i, sketch in enumerate(_wgmma_sketches(ctx)[:3]):
        sch = sample_candidate(ctx, sketch, posts, seed=i)
        c = np.zeros((M, N), "float32")
        run_warp_emulated(tvm.lower(sch.mod), a, b, c)
        np.testing.assert_allclose(c, reference, rtol=1e-4, atol=1e-4)
        if shutil.which("nvcc"):
            cu = tmp_path / f"k{i}.cu"
            cu.write_text(tvm.build(sch.mod, target="cuda -arch=sm_90a").imported_modules[0].get_source())
            done = subprocess.run(["nvcc", "-arch=sm_90a", "--ptx", "-o", str(tmp_path / f"k{i}.ptx"), str(cu)],
                                  capture_output=True, text=True, timeout=120, check=False)
            assert done.returncode == 0, done.stderr
            assert "wgmma.mma_async" in (tmp_path / f"k{i}.ptx").read_text()


def test_fetches_are_spread_over_the_warpgroup_lanes():
    """The warpgroup's 128 lanes are bound inside the tensorized intrinsics only: the cooperative fetch must
    still give each of them a share of the copy (not all 128 copying the whole tile)."""
    from search.postproc.gpu_cooperative_fetch import thread_extents

    ctx = TuneContext.create(gemm_nt(256, 512, 256), "cuda -arch=sm_90a", seed=0)
    posts = default_postprocs(ctx)
    sketch = _wgmma_sketches(ctx)[0]
    sch = sample_candidate(ctx, sketch, posts, seed=0)
    for block in (sch.get_block("A_shared"), sch.get_block("B_shared")):
        bound = {sch.get(lp).thread_binding.thread_tag: int(sch.get(lp).extent)
                 for lp in sch.get_loops(block) if sch.get(lp).thread_binding is not None}
        assert bound.get("threadIdx.x") == 128 and bound.get("threadIdx.y") == 2, bound
        assert thread_extents(sch, block)["threadIdx.x"] == 128


def test_bf16_gemms_get_wgmma_sketches():
    ctx = TuneContext.create(gemm_nt(256, 512, 256, in_dtype="bfloat16"), "cuda -arch=sm_90a", seed=0)
    sketches = _wgmma_sketches(ctx)
    assert len(sketches) == 20 and all('"bf16"' in s.mod.script() for s in sketches)


def test_nn_gemms_get_wgmma_sketches_that_compute_the_gemm():
    """B stored K x N: three sketches per block tile (K tiles of 64 only; cp.async or TMA fetches, the latter also
    persistent), read through the transpose bit."""
    from intrinsics.cuda_wgmma_schedule import gemm_nn

    M, N, K = 128, 256, 128
    ctx = TuneContext.create(gemm_nn(M, N, K), "cuda -arch=sm_90a", seed=0)
    sketches = _wgmma_sketches(ctx)
    assert len(sketches) == 15 and len(_tma_sketches(ctx)) == 10
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (M, K)).astype("float16"), rng.uniform(-1, 1, (K, N)).astype("float16")
    posts = default_postprocs(ctx)
    sch = sample_candidate(ctx, sketches[0], posts, seed=0)
    c = np.zeros((M, N), "float32")
    run_warp_emulated(tvm.lower(sch.mod), a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b.astype("float64"), rtol=1e-4, atol=1e-4)


def test_f16_output_sketches_fuse_the_rounding():
    """f16 written with f32 accumulation: every wgmma sketch rounds in its accumulator store (one kernel)."""
    M, N, K = 128, 256, 128
    ctx = TuneContext.create(gemm_nt(M, N, K, out_dtype="float16", acc_dtype="float32"), "cuda -arch=sm_90a", seed=0)
    sketches = _wgmma_sketches(ctx)
    assert len(sketches) == 20
    sch = sample_candidate(ctx, sketches[0], default_postprocs(ctx), seed=0)
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (M, K)).astype("float16"), rng.uniform(-1, 1, (N, K)).astype("float16")
    c = np.zeros((M, N), "float16")
    run_warp_emulated(tvm.lower(sch.mod), a, b, c)
    np.testing.assert_allclose(c.astype("float64"), a.astype("float64") @ b.astype("float64").T, rtol=5e-3, atol=5e-3)
    assert "__floats2half2_rn" in tvm.build(sch.mod, target="cuda -arch=sm_90a").imported_modules[0].get_source()


def test_batched_gemms_get_wgmma_sketches():
    ctx = TuneContext.create(gemm_nt(128, 256, 128, batch=4), "cuda -arch=sm_90a", seed=0)
    sketches = _wgmma_sketches(ctx)
    assert len(sketches) == 20 and len(_tma_sketches(ctx)) == 10  # TMA sketches see (batch x rows) x K operands
    M, N, K = 128, 256, 128
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (4, M, K)).astype("float16"), rng.uniform(-1, 1, (4, N, K)).astype("float16")
    sch = sample_candidate(ctx, sketches[0], default_postprocs(ctx), seed=0)
    c = np.zeros((4, M, N), "float32")
    run_warp_emulated(tvm.lower(sch.mod), a, b, c)
    np.testing.assert_allclose(c, np.einsum("bik,bjk->bij", a.astype("float64"), b.astype("float64")), rtol=1e-4,
                               atol=1e-4)


def _tma_sketches(ctx):
    return [s for s in _wgmma_sketches(ctx) if "ptx_tma_load" in s.mod.script()]


def test_warp_specialised_tma_candidates_compute_the_gemm(tmp_path):
    """The TMA sketches sample their buffer count and grid rasterization (and, where asked for, come in clusters);
    candidates emulate to the GEMM and build a producer/consumer kernel."""
    from search.schedule_rule import default_rules

    M, N, K = 256, 512, 256
    ctx = TuneContext.create(gemm_nt(M, N, K), "cuda -arch=sm_90a", seed=0)
    rules = [MultiLevelTilingWGMMA(cluster_tiles=[(2, 256), (2, 128)]) if isinstance(r, MultiLevelTilingWGMMA)
             else r for r in default_rules(ctx)]
    sketches = [s for s in PostOrderApply(rules=rules).generate_design_space(ctx) if "ptx_tma_load" in s.mod.script()]
    # 5 block tiles, their persistent variants, and the two 128-row ones in clusters of two (raster group 2)
    assert len(sketches) == 12
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (M, K)).astype("float16"), rng.uniform(-1, 1, (N, K)).astype("float16")
    posts = default_postprocs(ctx)
    from search.postproc.base import PostprocError

    clustered = [s for s in sketches if "warp_specialize_cluster" in s.mod.script()]
    for i, sketch in enumerate([sketches[0], clustered[0]]):
        for seed in range(20):  # too many buffers for the shared memory are the verifier's to drop
            try:
                sch = sample_candidate(ctx, sketch, posts, seed=seed)
                break
            except PostprocError as err:
                assert "shared memory" in str(err)
        c = np.zeros((M, N), "float32")
        run_warp_emulated(tvm.lower(sch.mod), a, b, c)
        np.testing.assert_allclose(c, a.astype("float64") @ b.astype("float64").T, rtol=1e-4, atol=1e-4)
        rt = tvm.build(sch.mod, target="cuda -arch=sm_90a")
        source = rt.imported_modules[0].get_source()
        assert "tz_tma_load_2d(" in source and "tz_setmaxnreg_dec<" in source
        assert ("__cluster_dims__(2, 1, 1)" in source) == (sketch is clustered[0])
        assert [m.arg for m in rt.launches()[0].tensor_maps] == [0, 1]  # descriptors of A and B


def test_persistent_tma_sketches_launch_at_most_the_targets_multiprocessors():
    from search.schedule_rule import default_rules

    ctx = TuneContext.create(gemm_nt(256, 512, 256), "cuda -arch=sm_90a -multi_processor_count=3", seed=0)
    sketches = [s for s in PostOrderApply().generate_design_space(ctx)
                if "warp_specialize_persistent" in s.mod.script()]
    assert len(sketches) == 5  # one per block tile
    none = [MultiLevelTilingWGMMA(persistent_blocks=()) if isinstance(r, MultiLevelTilingWGMMA) else r
            for r in default_rules(ctx)]
    assert not [s for s in PostOrderApply(rules=none).generate_design_space(ctx)
                if "warp_specialize_persistent" in s.mod.script()]
    from search.postproc.base import PostprocError

    for seed in range(20):  # too many buffers for the shared memory are the verifier's to drop
        try:
            sch = sample_candidate(ctx, sketches[0], default_postprocs(ctx), seed=seed)
            break
        except PostprocError as err:
            assert "shared memory" in str(err)
    assert tvm.build(sch.mod, target="cuda -arch=sm_90a").launches()[0].grid[0] <= 3
