"""A GEMM on Hopper's warpgroup MMA (``wgmma.mma_async``, ``intrinsics.cuda_wgmma``): ``C = A @ B^T`` with A
(M x K) and B (N x K) both K-major, as cuBLAS's "TN" case. Each thread block computes a ``64 * warpgroups``
x ``n`` tile, one warpgroup (128 threads, ``threadIdx.x``) per 64 rows (``threadIdx.y``); the K loop steps
``k_tile`` columns at a time through shared tiles in the core-matrix layout, fetched by all threads with
16-byte copies (``cp.async`` when ``stages`` > 0: that many tiles in flight ahead of the multiply)."""
from __future__ import annotations

import intrinsics.cuda_wgmma as wg
from tensorize import te, tir


def gemm_nt(M, N, K, in_dtype="float16", out_dtype="float32"):
    A = te.placeholder((M, K), in_dtype, name="A")
    B = te.placeholder((N, K), in_dtype, name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype(out_dtype) * B[j, k].astype(out_dtype), axis=k),
                   name="C")
    return te.create_prim_func([A, B, C])


def _fetch(sch, block, index, anchor, warpgroups, lanes=8):
    """The shared tile of operand ``index`` at ``anchor``, in core-matrix layout, copied by all threads:
    consecutive threads write the 8 rows of one core matrix (128 contiguous bytes), 16 bytes each."""
    shared = sch.cache_read(block, index, "shared")
    sch.compute_at(shared, anchor)
    sch.transform_layout(block, ("read", index), wg.shared_tile_map)
    r, k = sch.get_loops(shared)[-2:]
    r0, r1 = sch.split(r, [None, 8])
    k0, k1 = sch.split(k, [None, lanes])
    sch.reorder(r0, k0, r1, k1)
    fused = sch.fuse(r0, k0, r1)
    _, ty, tx = sch.split(fused, [None, warpgroups, wg.WARPGROUP])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(k1)
    return shared


def wgmma_gemm(func, tensorize=True, warpgroups=2, n=256, k_tile=64, stages=2):
    """The schedule; ``tensorize=False`` leaves the intrinsics' descriptions (blockized) for the CPU."""
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, [None, warpgroups, 64])
    j0, j1 = sch.split(j, [None, n])
    k0, k1, k2 = sch.split(k, [None, k_tile // 16, 16])
    sch.reorder(i0, j0, i1, k0, k1, i2, j1, k2)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    acc = sch.cache_write(block, 0, wg.SCOPE)
    sch.reverse_compute_at(acc, i1)
    _fetch(sch, block, 0, k0, warpgroups)
    _fetch(sch, block, 1, k0, warpgroups)
    sch.transform_layout(block, ("write", 0), wg.acc_tile_map(n))
    init = sch.decompose_reduction(block, k0)
    store_i = sch.get_loops(acc)[-2]
    fill_i = sch.get_loops(init)[-2]
    for loop, name in ((fill_i, wg.fill_name(n)), (store_i, wg.store_name(n)), (i2, wg.intrin_name(n))):
        if tensorize:
            sch.tensorize(loop, name)
        else:
            sch.blockize(loop)
    if stages:
        sch.annotate(k0, "software_pipeline_stage", [0, 0, stages])
        sch.annotate(k0, "software_pipeline_async_stages", [0])
    return sch
