"""The accumulator side of Hopper's warpgroup MMA (``intrinsics.cuda_wgmma``): the 64 x N f32 tile's register
layout across a warpgroup, and its fill and store intrinsics.

The accumulator of one ``wgmma.mma_async.m64nNk16`` is a ``"warp.group"`` buffer of shape (128 threads,
N / 2 registers): element ``(i, j)`` lives in thread ``32 * (i // 16) + 4 * (i % 8) + (j % 8) // 2``,
register ``4 * (j // 8) + 2 * ((i % 16) // 8) + j % 2`` (the PTX ISA's layout). The store waits for the
warpgroup's pending ``wgmma`` groups and writes register pairs (adjacent columns) as one 8-byte access, or
rounded to f16/bf16 as one 4-byte access (a fused cast epilogue).

>>> from intrinsics.cuda_wgmma_acc import acc_layout
>>> [int(x) for x in acc_layout(17, 10)]    # row 17, column 10: warp 1, lane 4 * 1 + 1
[37, 4]
"""
from __future__ import annotations

from tensorize import tir
from tensorize.ir.tensor_intrin import IntrinMeta, TensorIntrin
from tensorize.script import tir as T

WARPGROUP = 128
WGMMA_N = (64, 128, 256)
SCOPE = "warp.group"
STORE_TYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}  # what the store intrinsics write


def _meta(kind: str, **extra) -> IntrinMeta:
    return IntrinMeta(target_kind="cuda", extra={"wgmma": kind, "min_arch": "sm_90a", **extra})


def tile_intrin_name(kind: str, n: int, out_dtype: str = "float32") -> str:
    """The registered name of the accumulator ``"fill"`` or ``"store"`` (to global memory) of a 64 x ``n`` tile.

    Parameters
    ----------
    kind : str
        ``"fill"`` or ``"store"``.
    n : int
        The tile's N.
    out_dtype : str
        What a store writes: ``"float32"``, or ``"float16"``/``"bfloat16"`` (rounded from the f32 accumulators).

    Returns
    -------
    str
        ``"wgmma_fill_m64n{n}_f32"``, ``"wgmma_store_m64n{n}_f32_global"``, ``"wgmma_store_m64n{n}_f16_global"``.
    """
    if kind not in ("fill", "store"):
        raise ValueError(f"the accumulator intrinsics are 'fill' and 'store', not {kind!r}")
    if kind == "fill":
        return f"wgmma_fill_m64n{n}_f32"
    return f"wgmma_store_m64n{n}_{STORE_TYPES[out_dtype]}_global"


def acc_layout(i, j):
    """The thread and register of accumulator element ``(i, j)`` of a 64xN tile.

    Parameters
    ----------
    i, j : int or PrimExpr
        Row (0..63) and column.

    Returns
    -------
    tuple
        ``(thread, register)``.
    """
    return 32 * (i // 16) + 4 * (i % 8) + (j % 8) // 2, 4 * (j // 8) + 2 * ((i // 8) % 2) + j % 2


def acc_tile_map(n: int):
    """The index map a schedule gives a whole accumulator buffer: ``(i, j) -> (i // 64, j // n, thread, reg)``.

    Parameters
    ----------
    n : int
        The N of each wgmma tile.

    Returns
    -------
    callable
        For ``sch.transform_layout(block, buffer, acc_tile_map(n))``.
    """
    def index_map(i, j):
        return (i // 64, j // n, *acc_layout(i % 64, j % n))

    return index_map


def wgmma_fill(n: int):
    """``desc``/``impl`` zeroing a 64 x ``n`` accumulator tile.

    Parameters
    ----------
    n : int
        The tile's N.

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: each thread zeroes its ``n / 2`` registers.
    """
    regs = n // 2
    zero = tir.const(0, "float32")

    @T.prim_func
    def desc(c: T.handle) -> None:
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        with T.block("root"):
            T.reads()
            T.writes(C[0:WARPGROUP, 0:regs])
            for i, j in T.grid(64, n):
                with T.block("C_init"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[acc_layout(vi, vj)[0], acc_layout(vi, vj)[1]] = zero

    @T.prim_func
    def impl(c: T.handle) -> None:
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        with T.block("root"):
            T.reads()
            T.writes(C[0:WARPGROUP, 0:regs])
            for tx in T.thread_binding(WARPGROUP, thread="threadIdx.x"):
                for r in T.unroll(regs):
                    C[tx, r] = zero

    return desc, impl


def wgmma_store(n: int, scope: str = "global", out_dtype: str = "float32"):
    """``desc``/``impl`` writing a 64 x ``n`` accumulator tile to ``scope`` memory.

    Parameters
    ----------
    n : int
        The tile's N.
    scope : str
        The destination's scope.
    out_dtype : str
        The destination's dtype: f32, or f16/bf16 rounded from the accumulators (a fused cast epilogue).

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: each thread waits for its warpgroup's pending ``wgmma`` groups, then stores its
        ``n / 2`` elements (thread ``t``, register ``r``: row ``16 * (t // 32) + (t % 32) // 4 + 8 * ((r // 2) % 2)``,
        column ``8 * (r // 4) + 2 * (t % 4) + r % 2``).
    """
    regs = n // 2

    def rounded(value):  # the f32 accumulator as the destination's dtype
        return value if out_dtype == "float32" else tir.Cast(out_dtype, value)

    @T.prim_func
    def desc(c: T.handle, d: T.handle) -> None:
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        D = T.match_buffer(d, (64, n), out_dtype, align=64, offset_factor=1, scope=scope)
        with T.block("root"):
            T.reads(C[0:WARPGROUP, 0:regs])
            T.writes(D[0:64, 0:n])
            for i, j in T.grid(64, n):
                with T.block("C_store"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    D[vi, vj] = rounded(C[acc_layout(vi, vj)[0], acc_layout(vi, vj)[1]])

    @T.prim_func
    def impl(c: T.handle, d: T.handle) -> None:
        s0 = T.int32()
        s1 = T.int32()
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        D = T.match_buffer(d, (64, n), out_dtype, align=64, offset_factor=1, scope=scope, strides=[s0, s1])
        with T.block("root"):
            T.reads(C[0:WARPGROUP, 0:regs])
            T.writes(D[0:64, 0:n])
            for tx in T.thread_binding(WARPGROUP, thread="threadIdx.x"):
                T.evaluate(T.ptx_wgmma_wait_group(0))
                # registers 2p and 2p + 1 hold adjacent columns: one 8-byte store per pair
                for p in T.unroll(regs // 2):
                    for e in T.vectorized(2):
                        D[16 * (tx // 32) + (tx % 32) // 4 + 8 * (p % 2), 8 * (p // 2) + 2 * (tx % 4) + e] = rounded(
                            C[tx, 2 * p + e])

    return desc, impl


for _n in WGMMA_N:
    TensorIntrin.register(tile_intrin_name("fill", _n), *wgmma_fill(_n), override=True, meta=_meta("fill", n=_n))
    for _out in STORE_TYPES:
        TensorIntrin.register(tile_intrin_name("store", _n, _out), *wgmma_store(_n, out_dtype=_out), override=True,
                              meta=_meta("store", n=_n))
