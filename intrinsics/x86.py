"""x86 AVX-512 tensor intrinsics (the AVX2 ones are in ``intrinsics.x86_avx2``).

Each intrinsic below is a small datasheet: what the instruction does, its ``desc`` (the semantics in
TensorIR, built by ``intrinsics.x86_desc`` at the width at hand) and its ``impl`` (the same buffers,
the body calling the instruction through an LLVM intrinsic), then its registration with the target
features it needs.

All operands are ``offset_factor=1`` buffers without strides: ``sch.tensorize`` binds them to dense
tiles anywhere inside larger buffers (it checks the tile is dense, e.g. B packed as
``(N // 16, K // 4, 16, 4)``).

Names follow ``intrinsics.naming``; the earlier names (TVM's ``dot_16x4_vnni`` and
``dot_16x4_avx512`` among them) are aliases, listed in ``ALIASES``.

>>> import tensorize as tvm
>>> import intrinsics.x86
>>> tvm.tir.TensorIntrin.get(VNNI_DOT_16x4_INTRIN).meta.features
('avx512vnni',)
>>> tvm.tir.TensorIntrin.get("dot_16x4_vnni").name
'dot_16x4_u8i8s32_vnni'
"""
from __future__ import annotations

from tensorize.ir.tensor_intrin import IntrinMeta
from tensorize.script import tir as T

from .naming import register
from .x86_desc import broadcast_dot_desc, broadcast_fma_desc
from .x86_u8s8 import PMADD_AVX512, split7_dot_impl

VNNI_DOT_16x4_INTRIN = "dot_16x4_u8i8s32_vnni"
AVX512_DOT_16x4_INTRIN = "dot_16x4_u8i8s32_avx512_sat"
AVX512_DOT_16x4_EXACT_INTRIN = "dot_16x4_u8i8s32_avx512"
AVX512_FMA_16_F32_INTRIN = "fma_16_f32f32f32_avx512"
AVX512_BF16_DOT_16x2_INTRIN = "dot_16x2_bf16bf16f32_avx512bf16"

# name -> earlier names that stay valid (the first two are TVM's)
ALIASES = {
    VNNI_DOT_16x4_INTRIN: ("dot_16x4_vnni",),
    AVX512_DOT_16x4_INTRIN: ("dot_16x4_avx512",),
    AVX512_FMA_16_F32_INTRIN: ("fma_16_f32_avx512",),
    AVX512_BF16_DOT_16x2_INTRIN: ("dot_16x2_bf16_avx512",),
}

# ---------------------------------------------------------------------------------------------
# u8 x s8 -> s32 dot product, 16 lanes x 4 (the shape of vpdpbusd)
#
#   C[i] += sum_k  int32(A[k]) * int32(B[i, k])      i in [0, 16) spatial, k in [0, 4) reduction
#
# A is 4 unsigned bytes broadcast to every lane; B is 16 rows of 4 signed bytes (64 contiguous bytes,
# one zmm register); C is 16 int32 accumulators (one zmm register).
# ---------------------------------------------------------------------------------------------


dot_16x4_u8i8i32_desc = broadcast_dot_desc(16, 4, "uint8", "int8", "int32")


# AVX512-VNNI: vpdpbusd zmm_c, zmm_a, zmm_b multiplies unsigned bytes of a by signed bytes of b, sums
# each group of 4 products into the int32 lane of c. LLVM 22 types the byte operands <64 x i8>.
@T.prim_func
def dot_16x4_u8i8i32_vnni(
    A: T.Buffer((4,), "uint8", offset_factor=1),
    B: T.Buffer((16, 4), "int8", offset_factor=1),
    C: T.Buffer((16,), "int32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:16], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16])
        A_u8x4 = A.vload([0], "uint8x4")
        A_i32 = T.reinterpret("int32", A_u8x4)
        A_u8x64 = T.reinterpret("int8x64", T.broadcast(A_i32, 16))
        B_i8x64 = B.vload([0, 0], "int8x64")
        C[T.ramp(0, 1, 16)] = T.call_llvm_pure_intrin(
            "int32x16", "llvm.x86.avx512.vpdpbusd.512", C.vload([0], "int32x16"), A_u8x64, B_i8x64)


# AVX512BW without VNNI: vpmaddubsw (u8 x s8 -> adjacent pairs summed to saturating int16), then
# vpmaddwd with ones (adjacent int16 pairs summed to int32), then add. The int16 step saturates when
# both products of a pair are near 255 * 127 (as TVM's and oneDNN's fallbacks do).
@T.prim_func
def dot_16x4_u8i8i32_avx512(
    A: T.Buffer((4,), "uint8", offset_factor=1),
    B: T.Buffer((16, 4), "int8", offset_factor=1),
    C: T.Buffer((16,), "int32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:16], A[0:4], B[0:16, 0:4])
        T.writes(C[0:16])
        A_u8x4 = A.vload([0], "uint8x4")
        A_i32 = T.reinterpret("int32", A_u8x4)
        A_u8x64 = T.reinterpret("int8x64", T.broadcast(A_i32, 16))
        B_i8x64 = B.vload([0, 0], "int8x64")
        pairs_i16x32 = T.call_llvm_pure_intrin(
            "int16x32", "llvm.x86.avx512.pmaddubs.w.512", A_u8x64, B_i8x64)
        quads_i32x16 = T.call_llvm_pure_intrin(
            "int32x16", "llvm.x86.avx512.pmaddw.d.512", pairs_i16x32, T.broadcast(T.int16(1), 32))
        C[T.ramp(0, 1, 16)] = C.vload([0], "int32x16") + quads_i32x16


# AVX512BW, exact over the whole u8 x s8 range: A split into its low 7 bits and its top bit, each
# half through vpmaddubsw on its own (no int16 pair sum can saturate then: see intrinsics.x86_u8s8),
# both halves summed in int32 by vpmaddwd with ones and an add.
dot_16x4_u8i8i32_avx512_exact = split7_dot_impl(16, PMADD_AVX512)


_U8S8_META = dict(target_kind="llvm", arch="x86_64",
                  extra={"instruction": "vpdpbusd", "lanes": 16, "ops_per_call": 2 * 16 * 4})

register(VNNI_DOT_16x4_INTRIN, dot_16x4_u8i8i32_desc, dot_16x4_u8i8i32_vnni,
         IntrinMeta(features=("avx512vnni",), **_U8S8_META), ALIASES[VNNI_DOT_16x4_INTRIN])
register(AVX512_DOT_16x4_INTRIN, dot_16x4_u8i8i32_desc, dot_16x4_u8i8i32_avx512,
         IntrinMeta(features=("avx512bw",), **{**_U8S8_META, "extra": {**_U8S8_META["extra"],
                                                                      "instruction": "vpmaddubsw+vpmaddwd",
                                                                      "saturates_int16": True}}),
         ALIASES[AVX512_DOT_16x4_INTRIN])
register(AVX512_DOT_16x4_EXACT_INTRIN, dot_16x4_u8i8i32_desc, dot_16x4_u8i8i32_avx512_exact,
         IntrinMeta(features=("avx512bw",), **{**_U8S8_META, "extra": {
             **_U8S8_META["extra"], "instruction": "2x(vpmaddubsw+vpmaddwd) on 7-bit halves"}}))

# ---------------------------------------------------------------------------------------------
# f32 broadcast FMA, 16 lanes (the micro-kernel of an AVX-512 f32 GEMM)
#
#   C[i] += A[0] * B[i]          i in [0, 16) spatial
#
# One k step of C[m, n:n+16] += A[m, k] * B[k, n:n+16]: A[m, k] is broadcast, B's row segment is
# one zmm register, C's 16 accumulators another. vfmadd231ps zmm_c, zmm_b, zmm_a_broadcast.
# ---------------------------------------------------------------------------------------------


fma_16_f32_desc = broadcast_fma_desc(16)


@T.prim_func
def fma_16_f32_avx512(
    A: T.Buffer((1,), "float32", offset_factor=1),
    B: T.Buffer((16,), "float32", offset_factor=1),
    C: T.Buffer((16,), "float32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:16], A[0:1], B[0:16])
        T.writes(C[0:16])
        C[T.ramp(0, 1, 16)] = T.call_llvm_pure_intrin(
            "float32x16", "llvm.fma.v16f32", T.broadcast(A[0], 16), B.vload([0], "float32x16"),
            C.vload([0], "float32x16"))


register(AVX512_FMA_16_F32_INTRIN, fma_16_f32_desc, fma_16_f32_avx512,
         IntrinMeta(target_kind="llvm", arch="x86_64", features=("avx512f",),
                    extra={"instruction": "vfmadd231ps", "lanes": 16, "ops_per_call": 2 * 16}),
         ALIASES[AVX512_FMA_16_F32_INTRIN])

# ---------------------------------------------------------------------------------------------
# bf16 pair dot product into f32, 16 lanes x 2 (the shape of vdpbf16ps)
#
#   C[i] += sum_k  float32(A[k]) * float32(B[i, k])      i in [0, 16) spatial, k in [0, 2) reduction
#
# AVX512-BF16: vdpbf16ps zmm_c, zmm_a, zmm_b multiplies bf16 pairs and adds both products to the f32
# lane of c (products are exact in f32; the additions round to nearest even, flushing denormals).
# bf16 buffers hold their bits as uint16 in numpy.
# ---------------------------------------------------------------------------------------------


dot_16x2_bf16f32_desc = broadcast_dot_desc(16, 2, "bfloat16", "bfloat16", "float32")


# The pair of A is one 32-bit word broadcast to 16 lanes; B's 16 pairs are 32 words (one zmm).
@T.prim_func
def dot_16x2_bf16f32_avx512bf16(
    A: T.Buffer((2,), "bfloat16", offset_factor=1),
    B: T.Buffer((16, 2), "bfloat16", offset_factor=1),
    C: T.Buffer((16,), "float32", offset_factor=1),
) -> None:
    with T.block("root"):
        T.reads(C[0:16], A[0:2], B[0:16, 0:2])
        T.writes(C[0:16])
        A_pair = T.reinterpret("int32", A.vload([0], "bfloat16x2"))
        B_pairs = T.reinterpret("int32x16", B.vload([0, 0], "bfloat16x32"))
        C[T.ramp(0, 1, 16)] = T.call_llvm_pure_intrin(
            "float32x16", "llvm.x86.avx512bf16.dpbf16ps.512", C.vload([0], "float32x16"),
            T.broadcast(A_pair, 16), B_pairs)


register(AVX512_BF16_DOT_16x2_INTRIN, dot_16x2_bf16f32_desc, dot_16x2_bf16f32_avx512bf16,
         IntrinMeta(target_kind="llvm", arch="x86_64", features=("avx512bf16",),
                    extra={"instruction": "vdpbf16ps", "lanes": 16, "ops_per_call": 2 * 16 * 2}),
         ALIASES[AVX512_BF16_DOT_16x2_INTRIN])
