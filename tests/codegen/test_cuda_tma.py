"""Warp-specialised wgmma GEMMs fed by the tensor memory accelerator (``schedule_wgmma_gemm(fetch="tma")``):
the producer/consumer kernel compiles with nvcc (TMA copies, transaction barriers, register reallocation),
the host gets one TMA descriptor per operand, the numerics are checked on the CPU through the warpgroup model
(TMA copies stored through the hardware's swizzle), and on an sm_90 GPU the kernel launches and matches."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tensorize as tvm
from intrinsics.cuda_wgmma_schedule import gemm_nn, gemm_nt, schedule_wgmma_gemm
from tensorize.errors import TVMError
from tensorize.ir import stmt as S
from tensorize.ir.functor import post_order_visit
from tensorize.runtime.cuda_module import gpu_available
from tensorize.runtime.tensor_map import TensorMapSpec, tensor_map_geometry
from tensorize.transform.gpu_emulation import run_warp_emulated
from tensorize.transform.warp_specialize import WARP_SPECIALIZE, inject_warp_specialization

from .test_cuda import needs_nvcc, nvcc_ptx

TARGET = "cuda -arch=sm_90a"


def _inputs(M, N, K, dtype="float16", seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (M, K)).astype(dtype), rng.uniform(-1, 1, (N, K)).astype(dtype)


def _build(M, N, K, **kw):
    out = kw.pop("out_dtype", "float32")
    sch = schedule_wgmma_gemm(gemm_nt(M, N, K, out_dtype=out, acc_dtype="float32"), fetch="tma", **kw)
    return sch, tvm.build(sch.mod, target=TARGET)


@needs_nvcc
def test_producer_and_consumers_compile(tmp_path):
    _, rt = _build(256, 512, 512, warpgroups=2, n=256, stages=4, group=2)
    source = rt.imported_modules[0].get_source()
    assert "__launch_bounds__(384)" in source  # two consumer warpgroups and the producer
    assert source.count("const __grid_constant__ TmaDesc") == 2
    ptx = nvcc_ptx(source, "sm_90a", tmp_path)
    for needed in ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                   "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx", "setmaxnreg.dec.sync.aligned.u32 40",
                   "setmaxnreg.inc.sync.aligned.u32 232", "wgmma.mma_async.sync.aligned.m64n256k16"):
        assert needed in ptx, needed


def test_launch_carries_one_descriptor_per_operand():
    _, rt = _build(256, 512, 512, warpgroups=2, n=256, stages=4)
    (launch,) = rt.launches()
    assert launch.block == (128, 3, 1)
    assert launch.tensor_maps == (TensorMapSpec(0, "float16", 512, 128, 64, 128),
                                  TensorMapSpec(1, "float16", 512, 256, 64, 128))
    # four versions of each tile (128 x 64 and 256 x 64 f16) and eight barriers, the tiles 1024-aligned
    assert launch.shared_bytes == 1024 + 4 * (128 + 256) * 64 * 2


def test_the_consumers_wait_for_the_tile_and_free_the_previous_one():
    sch, _ = _build(128, 256, 512, warpgroups=2, n=256, stages=3)
    func = inject_warp_specialization(tvm.lower(sch.mod)["main"])
    text = func.script()
    assert text.count("T.ptx_mbarrier_init") == 6  # full and empty barrier per buffer
    assert "T.ptx_mbarrier_arrive_expect_tx(tz_mbar, k_0 % 3, 49152)" in text  # (128 + 256) x 64 f16
    assert "T.ptx_wgmma_wait_group(1)" in text  # this iteration's group stays in flight
    assert "T.ptx_mbarrier_arrive(tz_mbar, (k_0 - 1) % 3 + 3)" in text
    loops = []
    post_order_visit(func.body, lambda n: loops.append(n) if isinstance(n, S.For) and n.thread_binding is not None
                     and n.thread_binding.thread_tag == "threadIdx.y" else None)
    assert [int(loop.extent.value) for loop in loops] == [3]


@pytest.mark.parametrize("workload", [gemm_nt, gemm_nn])
@pytest.mark.parametrize("shape, out_dtype", [((128, 256, 192), "float32"), ((100, 200, 130), "float32"),
                                              ((128, 256, 128), "float16")])
def test_numerics_emulated(workload, shape, out_dtype):
    """Non-dividing shapes are padded first: the copies then read the padded workspaces. A B stored K x N is
    copied one 64-column block at a time."""
    M, N, K = shape
    sch = schedule_wgmma_gemm(workload(M, N, K, out_dtype=out_dtype, acc_dtype="float32"), warpgroups=2, n=256,
                              stages=3, fetch="tma")
    a, b = _inputs(M, N, K)
    c = np.zeros((M, N), out_dtype)
    model = run_warp_emulated(sch.mod, a, b if workload is gemm_nt else np.ascontiguousarray(b.T), c)
    tol = 5e-3 if out_dtype == "float16" else 1e-4
    np.testing.assert_allclose(c.astype("float64"), a.astype("float64") @ b.astype("float64").T, rtol=tol, atol=tol)
    assert model.executed > 0


@pytest.mark.parametrize("workload", [gemm_nt, gemm_nn])
@pytest.mark.parametrize("shape", [(3, 128, 256, 128), (2, 100, 200, 130)])
def test_batched_operands_are_copied_as_one_2d_view(workload, shape):
    """A batch axis is folded into the descriptor's rows: box row ``b * M + i`` of A is row ``i`` of batch ``b``
    (tiles never straddle batches: M is a multiple of the block rows, or padded to one)."""
    batch, M, N, K = shape
    sch = schedule_wgmma_gemm(workload(M, N, K, batch=batch), warpgroups=2, n=256, stages=2, fetch="tma")
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (batch, M, K)).astype("float16"), rng.uniform(-1, 1, (batch, N, K)).astype("float16")
    c = np.zeros((batch, M, N), "float32")
    run_warp_emulated(sch.mod, a, b if workload is gemm_nt else np.ascontiguousarray(b.transpose(0, 2, 1)), c)
    np.testing.assert_allclose(c, np.einsum("bik,bjk->bij", a.astype("float64"), b.astype("float64")), rtol=1e-4,
                               atol=1e-4)
    launch = [k for k in tvm.build(sch.mod, target=TARGET).launches() if k.tensor_maps][0]
    assert launch.grid[2] == batch


@pytest.mark.parametrize("workload", [gemm_nt, gemm_nn])
def test_persistent_blocks_walk_their_tiles(workload, tmp_path):
    """At most 6 blocks for 16 tiles: 4 blocks of 4 tiles each, both sides looping over them."""
    M, N, K = 512, 1024, 192
    sch = schedule_wgmma_gemm(workload(M, N, K), warpgroups=2, n=256, stages=3, fetch="tma", group=2, persistent=6)
    a, b = _inputs(M, N, K)
    c = np.zeros((M, N), "float32")
    run_warp_emulated(sch.mod, a, b if workload is gemm_nt else np.ascontiguousarray(b.T), c)
    np.testing.assert_allclose(c, a.astype("float64") @ b.astype("float64").T, rtol=1e-4, atol=1e-4)
    rt = tvm.build(sch.mod, target=TARGET)
    assert rt.launches()[0].grid == (4, 1, 1)
    kernel = rt.imported_modules[0].get_source()
    kernel = kernel[kernel.index('extern "C"'):]
    assert kernel.count("for (int tile_step = 0; tile_step < 4; ++tile_step)") == 2  # producer and consumers
    if shutil.which("nvcc"):
        nvcc_ptx(rt.imported_modules[0].get_source(), "sm_90a", tmp_path)
    with pytest.raises(ValueError, match="without clusters"):
        schedule_wgmma_gemm(workload(M, N, K), fetch="tma", stages=3, group=2, cluster=2, persistent=6)


@pytest.mark.parametrize("workload", [gemm_nt, gemm_nn])
def test_clusters_multicast_the_shared_tile(workload, tmp_path):
    """Two blocks of neighbouring rows share B's tile: each copies half of it (half the box rows, or half the
    64-column blocks) to both, and frees a buffer on both blocks' barriers."""
    sch = schedule_wgmma_gemm(workload(512, 1024, 512), warpgroups=2, n=256, stages=4, fetch="tma", group=4,
                              cluster=2)
    rt = tvm.build(sch.mod, target=TARGET)
    (launch,) = rt.launches()
    source = rt.imported_modules[0].get_source()
    kernel = source[source.index('extern "C"'):]
    assert "__cluster_dims__(2, 1, 1)" in kernel and kernel.count("tz_cluster_sync();") == 2
    assert kernel.count("tz_tma_load_2d_multicast(") == 1 and kernel.count("tz_mbar_arrive_cluster(") == 2
    assert "tz_mbar_expect_tx(tz_mbar + (k_0 & 3), 49152)" in kernel  # each block still receives all bytes
    b_box = launch.tensor_maps[1]
    assert (b_box.box_rows, b_box.box_cols) == ((128, 64) if workload is gemm_nt else (64, 64))
    if shutil.which("nvcc"):
        ptx = nvcc_ptx(source, "sm_90a", tmp_path)
        for needed in (".multicast::cluster", "mapa.shared::cluster", "barrier.cluster.arrive", "%cluster_ctarank",
                       ".reqnctapercluster 2, 1, 1"):
            assert needed in ptx, needed


def test_clusters_need_a_shared_tile():
    with pytest.raises(ValueError, match="even group"):
        schedule_wgmma_gemm(gemm_nt(512, 1024, 512), fetch="tma", stages=4, group=1, cluster=2)
    with pytest.raises(ValueError, match="even group"):
        schedule_wgmma_gemm(gemm_nt(512, 1024, 512), stages=2, group=2, cluster=2)  # cp.async fetches


def test_a_copy_stored_unswizzled_is_read_wrong():
    """The model's wgmma reads the tiles through the swizzle: a TMA copy that did not swizzle breaks the GEMM."""
    from tensorize.transform import gpu_ptx_model

    M, N, K = 128, 256, 128
    sch = schedule_wgmma_gemm(gemm_nt(M, N, K), warpgroups=2, n=256, stages=2, fetch="tma")
    a, b = _inputs(M, N, K)
    c = np.zeros((M, N), "float32")
    original = gpu_ptx_model.WarpModel.tma_load
    try:
        gpu_ptx_model.WarpModel.tma_load = lambda self, dst, src, ld, rows, cols, swizzle: original(
            self, dst, src, ld, rows, cols, 0)
        run_warp_emulated(sch.mod, a, b, c)
    finally:
        gpu_ptx_model.WarpModel.tma_load = original
    assert not np.allclose(c, a.astype("float64") @ b.astype("float64").T, atol=1e-2)


def test_unsupported_layouts_are_refused():
    with pytest.raises(ValueError, match="swizzle=True"):
        schedule_wgmma_gemm(gemm_nt(128, 256, 128), fetch="tma", stages=3, swizzle=False)
    with pytest.raises(ValueError, match="stages >= 2"):
        schedule_wgmma_gemm(gemm_nt(128, 256, 128), fetch="tma", stages=1)
    with pytest.raises(ValueError, match="k_steps=4"):
        schedule_wgmma_gemm(gemm_nt(128, 256, 128), fetch="tma", stages=3, k_steps=2)


def test_a_tma_copy_outside_a_warp_specialised_loop_is_refused():
    sch = schedule_wgmma_gemm(gemm_nt(128, 256, 128), fetch="tma", stages=3)
    (loop,) = [lp for lp in sch.get_loops(sch.get_block("A_shared_o")) if WARP_SPECIALIZE in sch.get(lp).annotations]
    sch.unannotate(loop, WARP_SPECIALIZE)
    with pytest.raises(TVMError, match="warp-specialised loop"):
        tvm.build(sch.mod, target=TARGET)


def test_descriptor_geometry_is_checked():
    spec = TensorMapSpec(0, "float16", 4096, 128, 64, 128)
    assert tensor_map_geometry(spec, 4096 * 1024, 0x10000) == ((4096, 1024), (8192,), (64, 128))
    with pytest.raises(TVMError, match="16-byte aligned"):
        tensor_map_geometry(spec, 4096 * 1024, 0x10008)
    with pytest.raises(TVMError, match="swizzle span"):
        tensor_map_geometry(TensorMapSpec(0, "float16", 4096, 128, 128, 128), 4096 * 1024, 0x10000)
    with pytest.raises(TVMError, match="whole rows"):
        tensor_map_geometry(spec, 4096 * 1024 + 8, 0x10000)


def test_search_artifacts_keep_the_descriptors(tmp_path):
    """The GPU builder's artifact (built on one node, run on another) carries each launch's descriptors."""
    import json

    from search.measure.gpu import load_artifact

    _, rt = _build(128, 256, 128, warpgroups=2, n=256, stages=2)
    launch = rt.launches()[0]
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"target": TARGET, "source": rt.imported_modules[0].get_source(), "functions": {
        "main": {"launches": [[launch.name, list(launch.grid), list(launch.block), launch.shared_bytes,
                               [vars(m) for m in launch.tensor_maps]]],
                 "params": [["float16", [128, 128]], ["float16", [256, 128]], ["float32", [128, 256]]],
                 "workspaces": []}}}))
    assert load_artifact(str(path)).launches("main") == [launch]


@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to cupy")
def test_runs_on_the_gpu():
    import cupy

    if int(cupy.cuda.Device().compute_capability) != 90:
        pytest.skip("TMA and wgmma need an sm_90 GPU (H100/H200)")
    for (M, N, K), kw in (((512, 768, 1024), {"stages": 4, "group": 2}), ((300, 500, 260), {"stages": 3}),
                          ((512, 768, 1024), {"stages": 4, "group": 4, "cluster": 2}),
                          ((512, 768, 1024), {"stages": 4, "group": 2, "persistent": 5})):
        a, b = _inputs(M, N, K)
        for workload, b_stored in ((gemm_nt, b), (gemm_nn, np.ascontiguousarray(b.T))):
            sch = schedule_wgmma_gemm(workload(M, N, K), warpgroups=2, n=256, fetch="tma", **kw)
            rt = tvm.build(sch.mod, target=TARGET)
            c = cupy.zeros((M, N), "float32")
            rt["main"](cupy.asarray(a), cupy.asarray(b_stored), c)
            np.testing.assert_allclose(c.get(), a.astype("float64") @ b.astype("float64").T, rtol=1e-3, atol=1e-3)
