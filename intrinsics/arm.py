"""ARM (AArch64) tensor intrinsics: NEON dot products, i8mm matrix multiply-accumulate, SVE dot.

Each intrinsic below is a small datasheet: what the instruction computes, its ``desc`` (the
semantics in TensorIR) and its ``impl`` (the same buffers, calling the instruction through its
LLVM intrinsic), then its registration with the target requirements the search needs.

Tiles may sit anywhere inside larger buffers: impls read and write row by row (``B.vload([r, 0])``),
so after ``tensorize`` the ``T.match_buffer`` views lower to the real buffer's strides. With a
packed layout (rows contiguous) LLVM merges the row loads into one vector load.

Build for a target that has the features, e.g.
``llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod,+i8mm,+sve -msve-vector-bits=256``,
and run the result with ``tensorize.runtime.aarch64.run_aarch64`` (qemu-user on x86 hosts).

>>> import intrinsics.arm
>>> import tensorize as tvm
>>> tvm.tir.TensorIntrin.get("dot_4x4_i8i8s32_sdot").meta.features
('dotprod',)
"""
from __future__ import annotations

from tensorize.ir.tensor_intrin import IntrinMeta
from tensorize.script import tir as T

from . import naming

ARCH = "aarch64"


def _rows(buf, nrows: int, lanes: int, dtype: str):
    """Rows ``0..nrows-1`` of a 2-D tile (``lanes`` elements each) concatenated into one vector."""
    return T.Shuffle([buf.vload([r, 0], f"{dtype}x{lanes}") for r in range(nrows)], list(range(nrows * lanes)))


def _splat4(buf, dtype: str, times: int):
    """The four ``dtype`` elements of a 1-D tile repeated ``times`` times (one 32-bit lane each)."""
    word = T.reinterpret("int32", buf.vload([0], f"{dtype}x4"))
    return T.reinterpret(f"{dtype}x{4 * times}", T.broadcast(word, times))


# ------------------------------------------------------------------------------------------------
# Dot product 4x4: C[4] int32 += A[4] . B[4, 4]  (C[i] += A[k] * B[i, k])
#
# NEON dotprod (Armv8.2 +dotprod): ``sdot v0.4s, v1.16b, v2.16b`` / ``udot``: each 32-bit lane i of
# the accumulator adds the dot product of bytes 4i..4i+3 of both sources. With A's four bytes
# broadcast to all lanes and B's row i in lane i, one instruction computes the whole tile.
# LLVM: llvm.aarch64.neon.sdot.v4i32.v16i8 / llvm.aarch64.neon.udot.v4i32.v16i8.
# ------------------------------------------------------------------------------------------------
def _dot_4x4_desc(in_dtype: str, out_dtype: str):
    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (4,), in_dtype, offset_factor=1)
        B = T.match_buffer(b, (4, 4), in_dtype, offset_factor=1)
        C = T.match_buffer(c, (4,), out_dtype, offset_factor=1)
        with T.block("root"):
            T.reads(C[0:4], A[0:4], B[0:4, 0:4])
            T.writes(C[0:4])
            for i, k in T.grid(4, 4):
                with T.block("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    C[vi] = C[vi] + T.cast(A[vk], out_dtype) * T.cast(B[vi, vk], out_dtype)

    return desc


def _dot_4x4_dotprod_impl(in_dtype: str, out_dtype: str, instruction: str):
    llvm_name = f"llvm.aarch64.neon.{instruction}.v4i32.v16i8"

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (4,), in_dtype, offset_factor=1)
        B_row_stride = T.int32()
        B = T.match_buffer(b, (4, 4), in_dtype, offset_factor=1, strides=[B_row_stride, 1])
        C = T.match_buffer(c, (4,), out_dtype, offset_factor=1)
        with T.block("root"):
            T.reads(C[0:4], A[0:4], B[0:4, 0:4])
            T.writes(C[0:4])
            C[T.ramp(0, 1, 4)] = T.call_llvm_pure_intrin(
                f"{out_dtype}x4", llvm_name, C.vload([0], f"{out_dtype}x4"), _splat4(A, in_dtype, 4),
                _rows(B, 4, 4, in_dtype))

    return impl


# NEON without dotprod (any Armv8-A): widen-multiply the two halves (``smull``: 8 x int8 -> 8 x
# int16), add adjacent pairs into int32 (``saddlp``), then a pairwise add of both halves (``addp``)
# leaves row i's sum in lane i. int8 x int8 products fit int16; pair sums are taken in int32.
@T.prim_func
def dot_4x4_i8i8s32_neon_impl(a: T.handle, b: T.handle, c: T.handle) -> None:
    A = T.match_buffer(a, (4,), "int8", offset_factor=1)
    B_row_stride = T.int32()
    B = T.match_buffer(b, (4, 4), "int8", offset_factor=1, strides=[B_row_stride, 1])
    C = T.match_buffer(c, (4,), "int32", offset_factor=1)
    with T.block("root"):
        T.reads(C[0:4], A[0:4], B[0:4, 0:4])
        T.writes(C[0:4])
        C[T.ramp(0, 1, 4)] = C.vload([0], "int32x4") + T.call_llvm_pure_intrin(
            "int32x4", "llvm.aarch64.neon.addp.v4i32",
            T.call_llvm_pure_intrin(
                "int32x4", "llvm.aarch64.neon.saddlp.v4i32.v8i16",
                T.call_llvm_pure_intrin("int16x8", "llvm.aarch64.neon.smull.v8i16", _splat4(A, "int8", 2),
                                        _rows(B, 2, 4, "int8"))),
            T.call_llvm_pure_intrin(
                "int32x4", "llvm.aarch64.neon.saddlp.v4i32.v8i16",
                T.call_llvm_pure_intrin("int16x8", "llvm.aarch64.neon.smull.v8i16", _splat4(A, "int8", 2),
                                        T.Shuffle([B.vload([2, 0], "int8x4"), B.vload([3, 0], "int8x4")],
                                                  [0, 1, 2, 3, 4, 5, 6, 7]))))


# ------------------------------------------------------------------------------------------------
# Matrix multiply 2x2x8: C[2, 2] int32 += A[2, 8] . B[2, 8]^T  (C[i, j] += A[i, k] * B[j, k])
#
# i8mm (Armv8.6 +i8mm): ``smmla v0.4s, v1.16b, v2.16b`` / ``ummla``: the first source holds a 2x8
# int8 matrix (row-major), the second a 2x8 matrix whose rows are the columns of the right operand;
# the accumulator is the 2x2 int32 result, row-major. 32 multiply-adds per instruction, twice sdot.
# LLVM: llvm.aarch64.neon.smmla.v4i32.v16i8 / llvm.aarch64.neon.ummla.v4i32.v16i8.
# ------------------------------------------------------------------------------------------------
def _mmla_desc(in_dtype: str, out_dtype: str):
    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (2, 8), in_dtype, offset_factor=1)
        B = T.match_buffer(b, (2, 8), in_dtype, offset_factor=1)
        C = T.match_buffer(c, (2, 2), out_dtype, offset_factor=1)
        with T.block("root"):
            T.reads(C[0:2, 0:2], A[0:2, 0:8], B[0:2, 0:8])
            T.writes(C[0:2, 0:2])
            for i, j, k in T.grid(2, 2, 8):
                with T.block("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + T.cast(A[vi, vk], out_dtype) * T.cast(B[vj, vk], out_dtype)

    return desc


def _mmla_impl(in_dtype: str, out_dtype: str, instruction: str):
    llvm_name = f"llvm.aarch64.neon.{instruction}.v4i32.v16i8"

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A_row_stride = T.int32()
        A = T.match_buffer(a, (2, 8), in_dtype, offset_factor=1, strides=[A_row_stride, 1])
        B_row_stride = T.int32()
        B = T.match_buffer(b, (2, 8), in_dtype, offset_factor=1, strides=[B_row_stride, 1])
        C_row_stride = T.int32()
        C = T.match_buffer(c, (2, 2), out_dtype, offset_factor=1, strides=[C_row_stride, 1])
        with T.block("root"):
            T.reads(C[0:2, 0:2], A[0:2, 0:8], B[0:2, 0:8])
            T.writes(C[0:2, 0:2])
            acc = T.call_llvm_pure_intrin(f"{out_dtype}x4", llvm_name, _rows(C, 2, 2, out_dtype),
                                          _rows(A, 2, 8, in_dtype), _rows(B, 2, 8, in_dtype))
            C[0, T.ramp(0, 1, 2)] = T.Shuffle([acc], [0, 1])
            C[1, T.ramp(0, 1, 2)] = T.Shuffle([acc], [2, 3])

    return impl


# ------------------------------------------------------------------------------------------------
# SVE dot product, fixed vector length: C[L] int32 += A[4] . B[L, 4], L = vector bits / 32
#
# SVE (+sve): ``sdot z0.s, z1.b, z2.b`` / ``udot``: the NEON dot product over a whole scalable
# register. TensorIR vectors have a fixed length, so these intrinsics are registered per vector
# length and need a target that fixes it: ``-mattr=+sve -msve-vector-bits=256``. The codegen then
# passes the fixed vectors to llvm.aarch64.sve.sdot.nxv4i32 through a bridge (codegen/llvm/scalable.py)
# and run under ``qemu-aarch64 -cpu max,sve256=on`` (the runner picks it from the target).
# ------------------------------------------------------------------------------------------------
SVE_VECTOR_BITS = (128, 256, 512)


def _sve_dot_desc(lanes: int, in_dtype: str, out_dtype: str):
    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (4,), in_dtype, offset_factor=1)
        B = T.match_buffer(b, (lanes, 4), in_dtype, offset_factor=1)
        C = T.match_buffer(c, (lanes,), out_dtype, offset_factor=1)
        with T.block("root"):
            T.reads(C[0:lanes], A[0:4], B[0:lanes, 0:4])
            T.writes(C[0:lanes])
            for i, k in T.grid(lanes, 4):
                with T.block("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    C[vi] = C[vi] + T.cast(A[vk], out_dtype) * T.cast(B[vi, vk], out_dtype)

    return desc


def _sve_dot_impl(lanes: int, in_dtype: str, out_dtype: str, instruction: str):
    llvm_name = f"llvm.aarch64.sve.{instruction}.nxv4i32"

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (4,), in_dtype, offset_factor=1)
        B_row_stride = T.int32()
        B = T.match_buffer(b, (lanes, 4), in_dtype, offset_factor=1, strides=[B_row_stride, 1])
        C = T.match_buffer(c, (lanes,), out_dtype, offset_factor=1)
        with T.block("root"):
            T.reads(C[0:lanes], A[0:4], B[0:lanes, 0:4])
            T.writes(C[0:lanes])
            C[T.ramp(0, 1, lanes)] = T.call_llvm_pure_intrin(
                f"{out_dtype}x{lanes}", llvm_name, C.vload([0], f"{out_dtype}x{lanes}"),
                _splat4(A, in_dtype, lanes), _rows(B, lanes, 4, in_dtype))

    return impl


# ------------------------------------------------------------------------------------------------
# Registration
# ------------------------------------------------------------------------------------------------
ARM_DOT_4x4_i8_SDOT_INTRIN = "dot_4x4_i8i8s32_sdot"
ARM_DOT_4x4_u8_UDOT_INTRIN = "dot_4x4_u8u8u32_udot"
ARM_DOT_4x4_i8_NEON_INTRIN = "dot_4x4_i8i8s32_neon"
ARM_SMMLA_2x2x8_INTRIN = "matmul_2x2x8_i8i8s32_smmla"
ARM_UMMLA_2x2x8_INTRIN = "matmul_2x2x8_u8u8u32_ummla"


def sve_dot_intrin_name(vector_bits: int, signed: bool = True) -> str:
    """The registered name of the SVE dot intrinsic for a vector length: ``dot_8x4_i8i8s32_sve256``.

    Parameters
    ----------
    vector_bits : int
        The SVE vector length in bits (128 to 2048).
    signed : bool
        Signed int8 operands (False: uint8).

    Returns
    -------
    str
        The name.
    """
    kind = "i8i8s32" if signed else "u8u8u32"
    return f"dot_{vector_bits // 32}x4_{kind}_sve{vector_bits}"


def _meta(features: tuple, instruction: str, **extra) -> IntrinMeta:
    return IntrinMeta(target_kind="llvm", arch=ARCH, features=features, extra={"instruction": instruction, **extra})


def register() -> None:
    """Register every ARM intrinsic (runs on import; re-imports replace the registrations).

    The names follow ``intrinsics.naming`` and are TVM's own (``dot_4x4_i8i8s32_sdot``, ...)."""
    reg = naming.register
    reg(ARM_DOT_4x4_i8_SDOT_INTRIN, _dot_4x4_desc("int8", "int32"), _dot_4x4_dotprod_impl("int8", "int32", "sdot"),
        meta=_meta(("dotprod",), "sdot"))
    reg(ARM_DOT_4x4_u8_UDOT_INTRIN, _dot_4x4_desc("uint8", "uint32"),
        _dot_4x4_dotprod_impl("uint8", "uint32", "udot"), meta=_meta(("dotprod",), "udot"))
    reg(ARM_DOT_4x4_i8_NEON_INTRIN, _dot_4x4_desc("int8", "int32"), dot_4x4_i8i8s32_neon_impl,
        meta=_meta((), "smull+saddlp+addp"))  # Advanced SIMD is baseline AArch64
    reg(ARM_SMMLA_2x2x8_INTRIN, _mmla_desc("int8", "int32"), _mmla_impl("int8", "int32", "smmla"),
        meta=_meta(("i8mm",), "smmla"))
    reg(ARM_UMMLA_2x2x8_INTRIN, _mmla_desc("uint8", "uint32"), _mmla_impl("uint8", "uint32", "ummla"),
        meta=_meta(("i8mm",), "ummla"))
    for bits in SVE_VECTOR_BITS:
        lanes = bits // 32
        for signed, (in_dtype, out_dtype, instruction) in ((True, ("int8", "int32", "sdot")),
                                                          (False, ("uint8", "uint32", "udot"))):
            reg(sve_dot_intrin_name(bits, signed), _sve_dot_desc(lanes, in_dtype, out_dtype),
                _sve_dot_impl(lanes, in_dtype, out_dtype, instruction),
                meta=_meta(("sve",), instruction, sve_vector_bits=bits))


register()

__all__ = ["ARM_DOT_4x4_i8_SDOT_INTRIN", "ARM_DOT_4x4_u8_UDOT_INTRIN", "ARM_DOT_4x4_i8_NEON_INTRIN",
           "ARM_SMMLA_2x2x8_INTRIN", "ARM_UMMLA_2x2x8_INTRIN", "SVE_VECTOR_BITS", "sve_dot_intrin_name", "register"]
