"""GPU schedules the CUDA tests share: a WMMA Tensor Core GEMM (f16->f32, s8->s32), a shared-memory
SIMT GEMM and a conv2d NHWC, each either tensorized (for CUDA) or left with the intrinsics'
descriptions (blockized, for the CPU emulation)."""
from __future__ import annotations

import intrinsics.cuda as wmma
from tensorize import te, tir

_FILL = {"float32": wmma.WMMA_FILL_16x16x16_F32_INTRIN, "int32": wmma.WMMA_FILL_16x16x16_S32_INTRIN,
         "float16": wmma.WMMA_FILL_16x16x16_F16_INTRIN}
_STORE = {"float32": wmma.WMMA_STORE_16x16x16_F32_GLOBAL_INTRIN, "int32": wmma.WMMA_STORE_16x16x16_S32_GLOBAL_INTRIN,
          "float16": wmma.WMMA_STORE_16x16x16_F16_GLOBAL_INTRIN}
_SYNC = {("float16", "float32"): wmma.WMMA_SYNC_16x16x16_f16f16f32_INTRIN,
         ("float16", "float16"): wmma.WMMA_SYNC_16x16x16_f16f16f16_INTRIN,
         ("int8", "int32"): wmma.WMMA_SYNC_16x16x16_s8s8s32_INTRIN}
_LOAD = {("float16", 0): wmma.WMMA_LOAD_16x16x16_F16_A_INTRIN, ("float16", 1): wmma.WMMA_LOAD_16x16x16_F16_B_INTRIN,
         ("int8", 0): wmma.WMMA_LOAD_16x16x16_S8_A_INTRIN, ("int8", 1): wmma.WMMA_LOAD_16x16x16_S8_B_INTRIN}


def gemm(M, N, K, in_dtype="float16", out_dtype="float32"):
    A = te.placeholder((M, K), in_dtype, name="A")
    B = te.placeholder((K, N), in_dtype, name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype(out_dtype) * B[k, j].astype(out_dtype), axis=k),
                   name="C")
    return te.create_prim_func([A, B, C])


def _tile(sch, loop_i, loop_j, intrin, tensorize):
    io, ii = sch.split(loop_i, [None, 16])
    jo, ji = sch.split(loop_j, [None, 16])
    sch.reorder(io, jo, ii, ji)
    if tensorize:
        sch.tensorize(ii, intrin)
    else:
        sch.blockize(ii)
    return io, jo


def _fetch(sch, block, index, anchor, warps):
    shared = sch.cache_read(block, index, "shared")
    sch.compute_at(shared, anchor)
    fused = sch.fuse(*sch.get_loops(shared)[-2:])
    _, ty, tz, tx = sch.split(fused, [None, warps[0], warps[1], 32])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tz, "threadIdx.z")
    sch.bind(tx, "threadIdx.x")
    return shared


def _find(sch, name):
    try:
        return sch.get_block(name)
    except Exception:  # pad_einsum names the copy back after the output buffer
        return sch.get_block(name.replace("_pad", ""))


def bind_elementwise(sch, block, threads=128):
    """Bind an elementwise block's fused loops to blockIdx.x x threadIdx.x."""
    fused = sch.fuse(*sch.get_loops(block))
    bx, tx = sch.split(fused, [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")


def wmma_gemm(func, in_dtype="float16", out_dtype="float32", tensorize=True, warps=(2, 2), warp_tiles=(1, 1),
              k_tiles=1):
    """The Tensor Core GEMM: block tile (16*warps*warp_tiles) per dimension, one warp per (ty, tz)."""
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    bm, bn = 16 * warps[0] * warp_tiles[0], 16 * warps[1] * warp_tiles[1]
    M, N, K = (int(b.dom.extent) for b in sch.get(block).iter_vars)
    padded = M % bm or N % bn or K % (16 * k_tiles)
    if padded:
        sch.pad_einsum(block, [bm, bn, 16 * k_tiles])
        for name in ("A_pad", "B_pad", "C_pad"):
            bind_elementwise(sch, _find(sch, name))
    i, j, k = sch.get_loops(block)
    i0, i1, i2, i3 = sch.split(i, [None, warps[0], warp_tiles[0], 16])
    j0, j1, j2, j3 = sch.split(j, [None, warps[1], warp_tiles[1], 16])
    k0, k1, k2 = sch.split(k, [None, k_tiles, 16])
    sch.reorder(i0, j0, k0, i1, j1, k1, i2, j2, i3, j3, k2)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    acc = sch.cache_write(block, 0, "wmma.accumulator")
    sch.reverse_compute_at(acc, j0)
    _fetch(sch, block, 0, k0, warps)
    _fetch(sch, block, 1, k0, warps)
    for index in (0, 1):
        frag = sch.cache_read(block, index, "wmma.matrix_a" if index == 0 else "wmma.matrix_b")
        sch.compute_at(frag, k1)
        ax0, ax1 = sch.get_loops(frag)[-2:]
        _tile(sch, ax0, ax1, _LOAD[(in_dtype, index)], tensorize)
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.z")
    init = sch.decompose_reduction(block, k0)
    ii, ji = sch.get_loops(init)[-2:]
    _tile(sch, ii, ji, _FILL[out_dtype], tensorize)
    ai, aj = sch.get_loops(acc)[-2:]
    a0, a1 = sch.split(ai, [warps[0], None])
    b0, b1 = sch.split(aj, [warps[1], None])
    sch.reorder(a0, b0, a1, b1)
    sch.bind(a0, "threadIdx.y")
    sch.bind(b0, "threadIdx.z")
    _tile(sch, a1, b1, _STORE[out_dtype], tensorize)
    if tensorize:
        sch.tensorize(i3, _SYNC[(in_dtype, out_dtype)])
    else:
        sch.blockize(i3)
    return sch


def conv2d_nhwc(n, h, w, ci, co, kh, kw, dtype="float32"):
    X = te.placeholder((n, h, w, ci), dtype, name="X")
    W = te.placeholder((kh, kw, ci, co), dtype, name="W")
    rh, rw, rc = te.reduce_axis((0, kh), "rh"), te.reduce_axis((0, kw), "rw"), te.reduce_axis((0, ci), "rc")
    Y = te.compute((n, h - kh + 1, w - kw + 1, co),
                   lambda b, y, x, f: te.sum(X[b, y + rh, x + rw, rc] * W[rh, rw, rc, f], axis=[rh, rw, rc]), name="Y")
    return te.create_prim_func([X, W, Y])


def simt_conv2d(func, tile_x=4, tile_f=8):
    """conv2d NHWC on CUDA cores: one block per (n, y, x-tile), threads over x x f, W tiles in shared memory,
    the accumulator in registers (``local``); non-dividing extents are guarded."""
    sch = tir.Schedule(func)
    block = sch.get_block("Y")
    b, y, x, f, rh, rw, rc = sch.get_loops(block)
    x0, x1 = sch.split(x, [None, tile_x])
    f0, f1 = sch.split(f, [None, tile_f])
    sch.reorder(b, y, x0, f0, x1, f1, rh, rw, rc)
    by = sch.fuse(b, y)
    sch.bind(by, "blockIdx.y")
    sch.bind(x0, "blockIdx.x")
    sch.bind(f0, "blockIdx.z")
    sch.bind(x1, "threadIdx.y")
    sch.bind(f1, "threadIdx.x")
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, f1)
    shared = sch.cache_read(block, 1, "shared")
    sch.compute_at(shared, f0)
    fused = sch.fuse(*sch.get_loops(shared)[-4:])
    _, ty, tx = sch.split(fused, [None, tile_x, tile_f])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    return sch
