"""A GEMM on Tensor Cores through inline PTX (``ldmatrix`` + ``mma.sync``): the warp buffers get the
lane layouts of ``intrinsics.cuda_mma`` with ``transform_layout``; tensorized (for CUDA and the lane-level
emulation) or blockized (the descriptions, for the CPU build)."""
from __future__ import annotations

import intrinsics.cuda_mma as mma
from tensorize import tir

from .gpu_schedules import _fetch, _find, bind_elementwise

_LOAD = {("float16", "a"): mma.LDMATRIX_f16_A_INTRIN, ("float16", "b"): mma.LDMATRIX_f16_B_INTRIN,
         ("int8", "a"): mma.LDMATRIX_i8_A_INTRIN, ("int8", "b"): mma.LDMATRIX_i8_B_INTRIN}
_SYNC = {"float16": mma.MMA_f16f16f32_INTRIN, "int8": mma.MMA_i8i8i32_INTRIN}
_FILL = {"float32": mma.MMA_fill_16x16_f32_INTRIN, "int32": mma.MMA_fill_16x16_i32_INTRIN}
_STORE = {"float32": mma.MMA_store_16x16_f32_global_INTRIN, "int32": mma.MMA_store_16x16_i32_global_INTRIN}


def _tile(sch, loop_i, loop_j, rows, cols, intrin, tensorize):
    io, ii = sch.split(loop_i, [None, rows])
    jo, ji = sch.split(loop_j, [None, cols])
    sch.reorder(io, jo, ii, ji)
    if tensorize:
        sch.tensorize(ii, intrin)
    else:
        sch.blockize(ii)


def mma_gemm(func, in_dtype="float16", out_dtype="float32", tensorize=True, warps=(2, 2), warp_tiles=(1, 1),
             k_tiles=1):
    """Block tile ``16 * warps * warp_tiles`` per output dimension, one warp per (threadIdx.y, threadIdx.z)."""
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    kt = 32 if in_dtype == "int8" else 16
    bm, bn = 16 * warps[0] * warp_tiles[0], 16 * warps[1] * warp_tiles[1]
    M, N, K = (int(b.dom.extent) for b in sch.get(block).iter_vars)
    if M % bm or N % bn or K % (kt * k_tiles):
        sch.pad_einsum(block, [bm, bn, kt * k_tiles])
        for name in ("A_pad", "B_pad", "C_pad"):
            bind_elementwise(sch, _find(sch, name))
    i, j, k = sch.get_loops(block)
    i0, i1, i2, i3 = sch.split(i, [None, warps[0], warp_tiles[0], 16])
    j0, j1, j2, j3 = sch.split(j, [None, warps[1], warp_tiles[1], 16])
    k0, k1, k2 = sch.split(k, [None, k_tiles, kt])
    # warps outside the reduction: each warp's accumulator tiles are allocated inside its loops (registers)
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2, i3, j3, k2)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.z")
    acc = sch.cache_write(block, 0, "warp")
    sch.reverse_compute_at(acc, j1)
    _fetch(sch, block, 0, k0, warps)
    _fetch(sch, block, 1, k0, warps)
    frags = []
    for index, operand in ((0, "a"), (1, "b")):
        frag = sch.cache_read(block, index, "warp")
        sch.compute_at(frag, k1)
        frags.append((frag, operand))
    # the lane layouts, once every block is at its place (compute_at needs plain indices)
    sch.transform_layout(block, ("write", 0), mma.warp_tile_map("c", out_dtype))
    for index, (frag, operand) in enumerate(frags):
        sch.transform_layout(block, ("read", index), mma.warp_tile_map(operand, in_dtype))
    for frag, operand in frags:
        ax0, ax1 = sch.get_loops(frag)[-2:]
        rows, cols = mma.tile_shape(operand, in_dtype)
        _tile(sch, ax0, ax1, rows, cols, _LOAD[(in_dtype, operand)], tensorize)
    init = sch.decompose_reduction(block, k0)
    ii, ji = sch.get_loops(init)[-2:]
    _tile(sch, ii, ji, 16, 16, _FILL[out_dtype], tensorize)
    ai, aj = sch.get_loops(acc)[-2:]
    _tile(sch, ai, aj, 16, 16, _STORE[out_dtype], tensorize)
    if tensorize:
        sch.tensorize(i3, _SYNC[in_dtype])
    else:
        sch.blockize(i3)
    return sch
