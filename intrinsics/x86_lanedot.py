"""x86 lane-wise int8 dot products: every lane its own four pairs (depthwise convolutions).

The GEMM dot intrinsics (``intrinsics.x86``, ``intrinsics.x86_avx2``) broadcast one row of A to every
lane: ``C[i] += sum_k A[k] * B[i, k]``. A depthwise convolution has no such operand: its channel
indexes the input, the weights and the output alike, and its reduction is the window. The
instructions themselves are lane-wise (``vpdpbusd`` adds the dot product of lane ``i``'s four bytes of
``a`` and ``b`` into lane ``i``), so these intrinsics expose that form::

    C[i] += sum_k int32(A[i, k]) * int32(B[i, k])      i: lanes (spatial), k in [0, 4) (reduction)

The search maps a depthwise convolution's channel onto ``i`` and its fused window (3 x 3 = 9 taps,
padded to 12) onto ``k``: the input is gathered once into ``(..., channel, tap)`` order by a
``reindex`` stage and the weights are a constant operand the caller may pre-pack.

=================================  =========  ==========================================
name                               features   instruction
=================================  =========  ==========================================
lanedot_16x4_u8i8s32_vnni          avx512vnni vpdpbusd zmm
lanedot_8x4_u8i8s32_avxvnni        avxvnni    {vex} vpdpbusd ymm
lanedot_8x4_u8i8s32_avx2           avx2       2x(vpmaddubsw + vpmaddwd) on 7-bit halves
=================================  =========  ==========================================

>>> import tensorize as tvm
>>> import intrinsics.x86_lanedot
>>> tvm.tir.TensorIntrin.get(AVX2_LANEDOT_8x4_INTRIN).meta.features
('avx2',)
"""
from __future__ import annotations

from tensorize.ir.tensor_intrin import IntrinMeta
from tensorize.script import tir as T

from .naming import register
from .x86_u8s8 import PMADD_AVX2, split7_dot_impl

VNNI_LANEDOT_16x4_INTRIN = "lanedot_16x4_u8i8s32_vnni"
AVXVNNI_LANEDOT_8x4_INTRIN = "lanedot_8x4_u8i8s32_avxvnni"
AVX2_LANEDOT_8x4_INTRIN = "lanedot_8x4_u8i8s32_avx2"


def _desc(lanes: int):
    @T.prim_func
    def desc(
        A: T.Buffer((lanes, 4), "uint8", offset_factor=1),
        B: T.Buffer((lanes, 4), "int8", offset_factor=1),
        C: T.Buffer((lanes,), "int32", offset_factor=1),
    ) -> None:
        with T.block("root"):
            T.reads(C[0:lanes], A[0:lanes, 0:4], B[0:lanes, 0:4])
            T.writes(C[0:lanes])
            for i, k in T.grid(lanes, 4):
                with T.block("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    C[vi] = C[vi] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", B[vi, vk])

    return desc


def _vpdpbusd(lanes: int, llvm_name: str):
    """``vpdpbusd`` on ``lanes`` int32 lanes: one instruction per call, exact."""
    i32, u8, i8 = f"int32x{lanes}", f"uint8x{4 * lanes}", f"int8x{4 * lanes}"

    @T.prim_func
    def impl(
        A: T.Buffer((lanes, 4), "uint8", offset_factor=1),
        B: T.Buffer((lanes, 4), "int8", offset_factor=1),
        C: T.Buffer((lanes,), "int32", offset_factor=1),
    ) -> None:
        with T.block("root"):
            T.reads(C[0:lanes], A[0:lanes, 0:4], B[0:lanes, 0:4])
            T.writes(C[0:lanes])
            C[T.ramp(0, 1, lanes)] = T.call_llvm_pure_intrin(
                i32, llvm_name, C.vload([0], i32), T.reinterpret(i32, A.vload([0, 0], u8)),
                T.reinterpret(i32, B.vload([0, 0], i8)))

    return impl


# Exact on AVX2: A = (A & 0x7f) + (A & 0x80), each half through vpmaddubsw on its own so no int16
# pair sum saturates (see intrinsics.x86_u8s8 for the bounds), vpmaddwd with ones adds the pairs.
lanedot_8x4_avx2 = split7_dot_impl(8, PMADD_AVX2, lanewise=True)


register(VNNI_LANEDOT_16x4_INTRIN, _desc(16), _vpdpbusd(16, "llvm.x86.avx512.vpdpbusd.512"),
         IntrinMeta(target_kind="llvm", arch="x86_64", features=("avx512vnni",),
                    extra={"instruction": "vpdpbusd zmm", "lanes": 16, "ops_per_call": 2 * 16 * 4}))
register(AVXVNNI_LANEDOT_8x4_INTRIN, _desc(8), _vpdpbusd(8, "llvm.x86.avx512.vpdpbusd.256"),
         IntrinMeta(target_kind="llvm", arch="x86_64", features=("avxvnni",),
                    extra={"instruction": "{vex} vpdpbusd ymm", "lanes": 8, "ops_per_call": 2 * 8 * 4}))
register(AVX2_LANEDOT_8x4_INTRIN, _desc(8), lanedot_8x4_avx2,
         IntrinMeta(target_kind="llvm", arch="x86_64", features=("avx2",),
                    extra={"instruction": "2x(vpmaddubsw+vpmaddwd) on 7-bit halves", "lanes": 8,
                           "ops_per_call": 2 * 8 * 4}))

__all__ = ["VNNI_LANEDOT_16x4_INTRIN", "AVXVNNI_LANEDOT_8x4_INTRIN", "AVX2_LANEDOT_8x4_INTRIN"]
