"""x86 AVX2 tensor intrinsics (and AVX-VNNI): 256-bit analogues of the AVX-512 ones in ``intrinsics.x86``.

Every x86-64 CPU since Haswell (2013) and Zen 1 has AVX2 and FMA; these intrinsics let the
search tensorize on machines without AVX-512. Same datasheet layout as ``intrinsics.x86``: what the
instructions compute, ``desc`` (TensorIR semantics), ``impl`` (the same dense ``offset_factor=1``
buffers, the body calling LLVM intrinsics), then the registration with the features needed.

>>> import tensorize as tvm
>>> import intrinsics.x86_avx2
>>> tvm.tir.TensorIntrin.get(AVX2_DOT_8x4_INTRIN).meta.features
('avx2',)
"""
from __future__ import annotations

from tensorize.ir.tensor_intrin import IntrinMeta
from tensorize.script import tir as T

from .naming import register
from .x86_desc import broadcast_dot_desc, broadcast_fma_desc
from .x86_u8s8 import PMADD_AVX2, split7_dot_impl

AVX2_FMA_8_F32_INTRIN = "fma_8_f32f32f32_avx2"
AVX2_DOT_8x4_INTRIN = "dot_8x4_u8i8s32_avx2"
AVX2_DOT_8x4_SAT_INTRIN = "dot_8x4_u8i8s32_avx2_sat"
AVXVNNI_DOT_8x4_INTRIN = "dot_8x4_u8i8s32_avxvnni"

# ---------------------------------------------------------------------------------------------
# f32 broadcast FMA, 8 lanes (the micro-kernel of an AVX2 f32 GEMM)
#
#   C[i] += A[0] * B[i]          i in [0, 8) spatial
#
# One k step of C[m, n:n+8] += A[m, k] * B[k, n:n+8]: vfmadd231ps ymm_c, ymm_b, ymm_a_broadcast
# (FMA3, rounded once like numpy's float32 fma).
# ---------------------------------------------------------------------------------------------


fma_8_f32_desc = broadcast_fma_desc(8)


@T.prim_func
def fma_8_f32_avx2(
    A: T.Buffer((1,), "float32", offset_factor=1),
    B: T.Buffer((8,), "float32", offset_factor=1),
    C: T.Buffer((8,), "float32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:8], A[0:1], B[0:8])
        T.writes(C[0:8])
        C[T.ramp(0, 1, 8)] = T.call_llvm_pure_intrin(
            "float32x8", "llvm.fma.v8f32", T.broadcast(A[0], 8), B.vload([0], "float32x8"), C.vload([0], "float32x8"))


register(AVX2_FMA_8_F32_INTRIN, fma_8_f32_desc, fma_8_f32_avx2,
         IntrinMeta(target_kind="llvm", arch="x86_64", features=("fma",),
                    extra={"instruction": "vfmadd231ps", "lanes": 8, "ops_per_call": 2 * 8}))

# ---------------------------------------------------------------------------------------------
# u8 x s8 -> s32 dot product, 8 lanes x 4 (vpdpbusd's shape on a ymm register)
#
#   C[i] += sum_k  int32(A[k]) * int32(B[i, k])      i in [0, 8) spatial, k in [0, 4) reduction
#
# A is 4 unsigned bytes broadcast to every lane; B is 8 rows of 4 signed bytes (32 contiguous bytes:
# pack B as (N // 8, K // 4, 8, 4)); C is 8 int32 accumulators (one ymm register).
# ---------------------------------------------------------------------------------------------


dot_8x4_u8i8i32_desc = broadcast_dot_desc(8, 4, "uint8", "int8", "int32")


# Exact over the whole u8 x s8 range, at two vpmaddubsw per call: A split into its low 7 bits and its
# top bit, each half through vpmaddubsw on its own so no int16 pair sum saturates (the bounds are in
# intrinsics.x86_u8s8), vpmaddwd with ones adds the int16 pairs into int32.
dot_8x4_u8i8i32_avx2 = split7_dot_impl(8, PMADD_AVX2)


# The classic sequence (TVM's and oneDNN's AVX2 fallback): vpmaddubsw (u8 x s8, adjacent pairs summed
# to int16 WITH saturation), vpmaddwd with ones (int16 pairs summed to int32), add. Fewer
# instructions, but exact only while |a0*b0 + a1*b1| <= 32767 for each pair, e.g. A < 128.
@T.prim_func
def dot_8x4_u8i8i32_avx2_sat(
    A: T.Buffer((4,), "uint8", offset_factor=1),
    B: T.Buffer((8, 4), "int8", offset_factor=1),
    C: T.Buffer((8,), "int32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:8], A[0:4], B[0:8, 0:4])
        T.writes(C[0:8])
        A_u8x32 = T.reinterpret("int8x32", T.broadcast(T.reinterpret("int32", A.vload([0], "uint8x4")), 8))
        pairs_i16x16 = T.call_llvm_pure_intrin(
            "int16x16", "llvm.x86.avx2.pmadd.ub.sw", A_u8x32, B.vload([0, 0], "int8x32"))
        quads_i32x8 = T.call_llvm_pure_intrin(
            "int32x8", "llvm.x86.avx2.pmadd.wd", pairs_i16x16, T.broadcast(T.int16(1), 16))
        C[T.ramp(0, 1, 8)] = C.vload([0], "int32x8") + quads_i32x8


# AVX-VNNI (Alder Lake, Sapphire Rapids, Zen 5): the VEX-encoded vpdpbusd ymm_c, ymm_a, ymm_b, the
# 256-bit VNNI dot product without AVX-512: exact, one instruction per call.
@T.prim_func
def dot_8x4_u8i8i32_avxvnni(
    A: T.Buffer((4,), "uint8", offset_factor=1),
    B: T.Buffer((8, 4), "int8", offset_factor=1),
    C: T.Buffer((8,), "int32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:8], A[0:4], B[0:8, 0:4])
        T.writes(C[0:8])
        A_u8x32 = T.reinterpret("int8x32", T.broadcast(T.reinterpret("int32", A.vload([0], "uint8x4")), 8))
        C[T.ramp(0, 1, 8)] = T.call_llvm_pure_intrin(
            "int32x8", "llvm.x86.avx512.vpdpbusd.256", C.vload([0], "int32x8"), A_u8x32, B.vload([0, 0], "int8x32"))


_U8S8_META = dict(target_kind="llvm", arch="x86_64", features=("avx2",))

register(AVX2_DOT_8x4_INTRIN, dot_8x4_u8i8i32_desc, dot_8x4_u8i8i32_avx2,
         IntrinMeta(**_U8S8_META, extra={"instruction": "2x(vpmaddubsw+vpmaddwd) on 7-bit halves", "lanes": 8,
                                         "ops_per_call": 2 * 8 * 4}))
register(AVX2_DOT_8x4_SAT_INTRIN, dot_8x4_u8i8i32_desc, dot_8x4_u8i8i32_avx2_sat,
         IntrinMeta(**_U8S8_META, extra={"instruction": "vpmaddubsw+vpmaddwd", "lanes": 8,
                                         "ops_per_call": 2 * 8 * 4, "saturates_int16": True}))
register(AVXVNNI_DOT_8x4_INTRIN, dot_8x4_u8i8i32_desc, dot_8x4_u8i8i32_avxvnni,
         IntrinMeta(target_kind="llvm", arch="x86_64", features=("avxvnni",),
                    extra={"instruction": "{vex} vpdpbusd", "lanes": 8, "ops_per_call": 2 * 8 * 4}))

__all__ = ["AVX2_FMA_8_F32_INTRIN", "AVX2_DOT_8x4_INTRIN", "AVX2_DOT_8x4_SAT_INTRIN", "AVXVNNI_DOT_8x4_INTRIN"]
