"""The semantics (``desc`` PrimFuncs) the x86 intrinsics share, at any vector width: the AVX-512
ones (``intrinsics.x86``) and the AVX2 ones (``intrinsics.x86_avx2``) compute the same thing on 16
and on 8 lanes. The lane-wise dot products of depthwise convolutions have their own desc in
``intrinsics.x86_lanedot``.

This module registers nothing; the families that use it do.

>>> desc = broadcast_dot_desc(16, 4, "uint8", "int8", "int32")
>>> [tuple(desc.buffer_map[p].shape) for p in desc.params]
[(4,), (16, 4), (16,)]
"""
from __future__ import annotations

from tensorize.script import tir as T


def broadcast_dot_desc(lanes: int, depth: int, a_dtype: str, b_dtype: str, acc_dtype: str):
    """``C[i] += sum_k acc(A[k]) * acc(B[i, k])``: A's ``depth`` elements broadcast to every lane.

    Parameters
    ----------
    lanes : int
        The accumulator lanes (``i`` in ``[0, lanes)``, spatial).
    depth : int
        The elements reduced per lane (``k`` in ``[0, depth)``, reduction).
    a_dtype, b_dtype : str
        The dtypes of A (``(depth,)``) and B (``(lanes, depth)``).
    acc_dtype : str
        The dtype of C (``(lanes,)``), which the products are computed in.

    Returns
    -------
    PrimFunc
        The desc, over dense ``offset_factor=1`` buffers A, B, C.
    """
    @T.prim_func
    def desc(
        A: T.Buffer((depth,), a_dtype, offset_factor=1),
        B: T.Buffer((lanes, depth), b_dtype, offset_factor=1),
        C: T.Buffer((lanes,), acc_dtype, offset_factor=1),
    ) -> None:
        with T.block("root"):
            T.reads(C[0:lanes], A[0:depth], B[0:lanes, 0:depth])
            T.writes(C[0:lanes])
            for i in T.serial(0, lanes):
                for k in T.serial(0, depth):
                    with T.block("update"):
                        vi, vk = T.axis.remap("SR", [i, k])
                        C[vi] = C[vi] + T.Cast(acc_dtype, A[vk]) * T.Cast(acc_dtype, B[vi, vk])

    return desc


def broadcast_fma_desc(lanes: int):
    """``C[i] += A[0] * B[i]`` in float32: one k step of ``C[m, n:n+lanes] += A[m, k] * B[k, n:n+lanes]``.

    Parameters
    ----------
    lanes : int
        The lanes of B and C.

    Returns
    -------
    PrimFunc
        The desc, over dense ``offset_factor=1`` buffers A (``(1,)``), B and C (``(lanes,)``).
    """
    @T.prim_func
    def desc(
        A: T.Buffer((1,), "float32", offset_factor=1),
        B: T.Buffer((lanes,), "float32", offset_factor=1),
        C: T.Buffer((lanes,), "float32", offset_factor=1),
    ) -> None:
        with T.block("root"):
            T.reads(C[0:lanes], A[0:1], B[0:lanes])
            T.writes(C[0:lanes])
            for i in T.serial(0, lanes):
                with T.block("update"):
                    vi = T.axis.spatial(lanes, i)
                    C[vi] = C[vi] + A[0] * B[vi]

    return desc


__all__ = ["broadcast_dot_desc", "broadcast_fma_desc"]
