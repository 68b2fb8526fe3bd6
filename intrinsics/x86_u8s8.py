"""Exact u8 x s8 -> s32 dot products from ``vpmaddubsw``: the 7-bit split shared by the AVX2
(``intrinsics.x86_avx2``, ``intrinsics.x86_lanedot``) and AVX512BW (``intrinsics.x86``) intrinsics.

``vpmaddubsw`` sums each pair of u8 x s8 products into int16 with saturation, which a full-range A
overflows (255 * 127 * 2 > 32767). So A is split into its low 7 bits and its top bit,
A = (A & 0x7f) + (A & 0x80), and each half goes through vpmaddubsw on its own: a low pair sums to at
most 127 * 128 * 2 = 32512 in magnitude, a top pair to 128 * b0 + 128 * b1 in [-32768, 32512]; both
fit int16, nothing saturates. vpmaddwd with ones then adds int16 pairs into int32 (exact), and the two
halves are added in int32. (Widening both operands to int16 and using vpmaddwd alone is exact too,
but needs a cross-lane shuffle per call to add the pairs and measured half as fast in a tensorized
GEMM.)

This module registers nothing; the families that use it do.

>>> impl = split7_dot_impl(8, PMADD_AVX2)
>>> [tuple(impl.buffer_map[p].shape) for p in impl.params]
[(4,), (8, 4), (8,)]
"""
from __future__ import annotations

from tensorize.script import tir as T

# The LLVM names of (vpmaddubsw, vpmaddwd) on ymm and zmm registers.
PMADD_AVX2 = ("llvm.x86.avx2.pmadd.ub.sw", "llvm.x86.avx2.pmadd.wd")
PMADD_AVX512 = ("llvm.x86.avx512.pmaddubs.w.512", "llvm.x86.avx512.pmaddw.d.512")


def split7_dot_impl(lanes: int, pmadd: tuple[str, str], lanewise: bool = False):
    """The impl of a u8 x s8 -> s32 dot product of ``lanes`` int32 lanes x 4, exact over the whole
    input range: two ``vpmaddubsw`` + ``vpmaddwd`` per call, one on each 7-bit half of A.

    Parameters
    ----------
    lanes : int
        The int32 lanes (8 for ymm, 16 for zmm).
    pmadd : tuple of str
        The LLVM names of ``vpmaddubsw`` and ``vpmaddwd`` at this width (``PMADD_AVX2``,
        ``PMADD_AVX512``).
    lanewise : bool
        False: A is 4 bytes broadcast to every lane, ``C[i] += sum_k A[k] * B[i, k]`` (GEMM).
        True: every lane has its own 4 bytes, ``C[i] += sum_k A[i, k] * B[i, k]`` (depthwise).

    Returns
    -------
    PrimFunc
        The impl, over ``offset_factor=1`` buffers A (``(4,)`` or ``(lanes, 4)`` uint8),
        B (``(lanes, 4)`` int8) and C (``(lanes,)`` int32).
    """
    i8, i16, i32 = f"int8x{4 * lanes}", f"int16x{2 * lanes}", f"int32x{lanes}"
    pmaddubsw, pmaddwd = pmadd
    a_shape = (lanes, 4) if lanewise else (4,)

    def load_a(A):
        if lanewise:
            return T.reinterpret(i32, A.vload([0, 0], f"uint8x{4 * lanes}"))
        return T.broadcast(T.reinterpret("int32", A.vload([0], "uint8x4")), lanes)

    @T.prim_func
    def impl(
        A: T.Buffer(a_shape, "uint8", offset_factor=1),
        B: T.Buffer((lanes, 4), "int8", offset_factor=1),
        C: T.Buffer((lanes,), "int32", offset_factor=1),
    ) -> None:
        with T.block("root"):
            T.reads(C[0:lanes], A, B[0:lanes, 0:4])
            T.writes(C[0:lanes])
            A_i32 = load_a(A)
            A_low7 = T.reinterpret(i8, T.bitwise_and(A_i32, T.broadcast(T.int32(0x7F7F7F7F), lanes)))
            A_top = T.reinterpret(i8, T.bitwise_and(A_i32, T.broadcast(T.int32(-0x7F7F7F80), lanes)))  # 0x80808080
            B_i8 = B.vload([0, 0], i8)
            ones = T.broadcast(T.int16(1), 2 * lanes)
            low_i32 = T.call_llvm_pure_intrin(i32, pmaddwd, T.call_llvm_pure_intrin(i16, pmaddubsw, A_low7, B_i8), ones)
            top_i32 = T.call_llvm_pure_intrin(i32, pmaddwd, T.call_llvm_pure_intrin(i16, pmaddubsw, A_top, B_i8), ones)
            C[T.ramp(0, 1, lanes)] = C.vload([0], i32) + low_i32 + top_i32

    return impl


__all__ = ["PMADD_AVX2", "PMADD_AVX512", "split7_dot_impl"]
