"""Hopper's tensor memory accelerator (TMA, sm_90) as a tensor intrinsic: one global -> shared tile copy.

``tma_load_{rows}x{cols}_{f16|bf16}_sw{swizzle}`` copies a ``rows`` x ``cols`` tile of a row-major global
buffer into a row-major shared tile with the hardware's ``swizzle``-byte swizzle (the layout that the
swizzled ``wgmma`` intrinsics read, ``intrinsics.cuda_wgmma``). Its ``impl`` is one ``ptx_tma_load`` call,
issued by one thread: the tile's start (``elem_offset``) and the global row stride are all the code generator
needs, and the host builds the TMA descriptor (a ``CUtensorMap``) of the whole global buffer at launch
(``tensorize.runtime.tensor_map``). The copy is asynchronous: it completes on a shared transaction
barrier, which ``InjectWarpSpecialization`` adds when it gives the K loop a producer warpgroup
(``tensorize.transform.warp_specialize``); the code generator refuses a TMA copy outside such a loop.

The ``desc`` is the plain copy, so a blockized schedule (``tensorize=False``) runs on a CPU, and the
emulation (``run_warp_emulated``) copies the box through the swizzle as the hardware stores it.

>>> from tensorize.ir.tensor_intrin import TensorIntrin
>>> TensorIntrin.get(tma_intrin_name(128, 64)) is not None
True
"""
from __future__ import annotations

from tensorize.ir.tensor_intrin import TensorIntrin
from tensorize.script import tir as T

TMA_ROWS = (64, 128, 256)  # box rows (at most 256: the hardware's box limit)
SWIZZLE_OF_COLS = {64: 128, 32: 64, 16: 32}  # f16/bf16 columns of one swizzled row -> the swizzle in bytes
_SHORT = {"float16": "f16", "bfloat16": "bf16"}


def tma_intrin_name(rows: int, cols: int = 64, dtype: str = "float16") -> str:
    """The registered name of the TMA copy of a ``rows`` x ``cols`` tile of ``dtype``.

    Parameters
    ----------
    rows : int
        64, 128 or 256.
    cols : int
        16, 32 or 64 (rows of 32, 64 or 128 bytes, swizzled as wide).
    dtype : str
        ``"float16"`` or ``"bfloat16"``.

    Returns
    -------
    str
        E.g. ``"tma_load_128x64_f16_sw128"``.
    """
    return f"tma_load_{rows}x{cols}_{_SHORT[dtype]}_sw{SWIZZLE_OF_COLS[cols]}"


def tma_load(rows: int, cols: int = 64, dtype: str = "float16"):
    """``desc``/``impl`` of ``S[r, c] = G[r, c]`` on a ``rows`` x ``cols`` tile, G global and S shared.

    Parameters
    ----------
    rows, cols : int
        The box (see ``tma_intrin_name``).
    dtype : str
        The element type.

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``.
    """
    swizzle = SWIZZLE_OF_COLS[cols]

    @T.prim_func
    def desc(g: T.handle, s: T.handle) -> None:
        G = T.match_buffer(g, (rows, cols), dtype, align=16, offset_factor=1)
        S = T.match_buffer(s, (rows, cols), dtype, align=16, offset_factor=1, scope="shared")
        with T.block("root"):
            T.reads(G[0:rows, 0:cols])
            T.writes(S[0:rows, 0:cols])
            for r, c in T.grid(rows, cols):
                with T.block("copy"):
                    vr, vc = T.axis.remap("SS", [r, c])
                    S[vr, vc] = G[vr, vc]

    @T.prim_func
    def impl(g: T.handle, s: T.handle) -> None:
        g0 = T.int32()
        G = T.match_buffer(g, (rows, cols), dtype, align=16, offset_factor=1, strides=[g0, 1])
        S = T.match_buffer(s, (rows, cols), dtype, align=16, offset_factor=1, scope="shared", strides=[cols, 1])
        with T.block("root"):
            T.reads(G[0:rows, 0:cols])
            T.writes(S[0:rows, 0:cols])
            T.evaluate(T.ptx_tma_load(S.access_ptr("w"), G.data, G.elem_offset, g0, rows, cols, swizzle))

    return desc, impl


for _rows in TMA_ROWS:
    for _cols in SWIZZLE_OF_COLS:
        for _dtype in _SHORT:
            TensorIntrin.register(tma_intrin_name(_rows, _cols, _dtype), *tma_load(_rows, _cols, _dtype), override=True)
