"""NVIDIA Tensor Core intrinsics (WMMA), under TVM's names.

Each intrinsic is a ``desc``/``impl`` pair: ``desc`` is the 16x16x16 tile computation in TensorIR,
``impl`` the same buffers with one warp-level call (``tvm_load_matrix_sync``, ``tvm_mma_sync``,
``tvm_fill_fragment``, ``tvm_store_matrix_sync``) that the CUDA code generator writes as
``nvcuda::wmma`` API calls. A fragment buffer (scope ``wmma.matrix_a``/``_b``/``accumulator``) holds
fragments of 16x16 elements; the fragment a tile names is its offset in the buffer divided by the
tile (``fragment_index``).

================================  =========================================  =======
name                              what                                       target
================================  =========================================  =======
wmma_load_16x16x16_f16_a          shared A tile (row major) -> matrix_a       cuda
wmma_load_16x16x16_f16_a_trans    shared A tile read transposed (col major)   cuda
wmma_load_16x16x16_f16_b(_trans)  shared B tile -> matrix_b                   cuda
wmma_load_16x16x16_s8_a/_b        int8 tiles                                  cuda
wmma_sync_16x16x16_f16f16f32      C(f32) += A(f16) B(f16)                     cuda
wmma_sync_16x16x16_f16f16f16      C(f16) += A(f16) B(f16)                     cuda
wmma_sync_16x16x16_s8s8s32        C(s32) += A(s8) B(s8)                       cuda
wmma_fill_16x16x16_f32/_f16/_s32  C = 0                                       cuda
wmma_store_16x16x16_*_global      accumulator -> global                       cuda
wmma_store_16x16x16_*_shared      accumulator -> shared                       cuda
================================  =========================================  =======

>>> import intrinsics.cuda
>>> import tensorize as tvm
>>> tvm.tir.TensorIntrin.get(WMMA_SYNC_16x16x16_f16f16f32_INTRIN).meta.target_kind
'cuda'
"""
from __future__ import annotations

from tensorize.ir.tensor_intrin import IntrinMeta, TensorIntrin
from tensorize import tir
from tensorize.script import tir as T

M = N = K = 16
_TILE = 16

WMMA_SYNC_16x16x16_f16f16f32_INTRIN = "wmma_sync_16x16x16_f16f16f32"
WMMA_SYNC_16x16x16_f16f16f16_INTRIN = "wmma_sync_16x16x16_f16f16f16"
WMMA_SYNC_16x16x16_s8s8s32_INTRIN = "wmma_sync_16x16x16_s8s8s32"
WMMA_LOAD_16x16x16_F16_A_INTRIN = "wmma_load_16x16x16_f16_a"
WMMA_LOAD_16x16x16_F16_B_INTRIN = "wmma_load_16x16x16_f16_b"
WMMA_LOAD_16x16x16_F16_A_TRANS_INTRIN = "wmma_load_16x16x16_f16_a_trans"
WMMA_LOAD_16x16x16_F16_B_TRANS_INTRIN = "wmma_load_16x16x16_f16_b_trans"
WMMA_LOAD_16x16x16_S8_A_INTRIN = "wmma_load_16x16x16_s8_a"
WMMA_LOAD_16x16x16_S8_B_INTRIN = "wmma_load_16x16x16_s8_b"
WMMA_FILL_16x16x16_F32_INTRIN = "wmma_fill_16x16x16_f32"
WMMA_FILL_16x16x16_F16_INTRIN = "wmma_fill_16x16x16_f16"
WMMA_FILL_16x16x16_S32_INTRIN = "wmma_fill_16x16x16_s32"
WMMA_STORE_16x16x16_F32_GLOBAL_INTRIN = "wmma_store_16x16x16_f32_global"
WMMA_STORE_16x16x16_F32_SHARED_INTRIN = "wmma_store_16x16x16_f32_shared"
WMMA_STORE_16x16x16_F16_GLOBAL_INTRIN = "wmma_store_16x16x16_f16_global"
WMMA_STORE_16x16x16_S32_GLOBAL_INTRIN = "wmma_store_16x16x16_s32_global"


def fragment_index(buffer, stride):
    """The fragment number of a 16x16 tile of a fragment buffer with row stride ``stride``.

    Parameters
    ----------
    buffer : Buffer
        A 16x16 view of a fragment buffer (its ``elem_offset`` locates the tile).
    stride : PrimExpr or int
        The row stride of the whole buffer.

    Returns
    -------
    PrimExpr
        The tile's index, row-major over the buffer's 16x16 tiles.
    """
    row = buffer.elem_offset // stride // _TILE
    col = buffer.elem_offset % stride // _TILE
    return row * (stride // _TILE) + col


def _cast(dtype: str, value):
    """``value`` as ``dtype``: a Cast only when the dtypes differ (an f16 x f16 -> f16 GEMM has none)."""
    return value if str(value.dtype) == dtype else tir.Cast(dtype, value)


def _meta(kind: str) -> IntrinMeta:
    return IntrinMeta(target_kind="cuda", extra={"wmma": kind, "shape": (M, N, K)})


def wmma_load(dtype: str, scope: str, is_b: bool, transposed: bool):
    """``desc``/``impl`` loading a 16x16 tile of ``scope`` memory into a matrix_a/matrix_b fragment.

    Parameters
    ----------
    dtype : str
        The element dtype (``"float16"`` or ``"int8"``).
    scope : str
        The source memory scope, e.g. ``"shared"``.
    is_b : bool
        Load a matrix_b fragment (else matrix_a).
    transposed : bool
        The tile is stored column-major.

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: the semantics and the WMMA call.
    """
    fragment = "wmma.matrix_b" if is_b else "wmma.matrix_a"
    layout = "col_major" if transposed else "row_major"

    @T.prim_func
    def desc(a: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (16, 16), dtype, align=64, offset_factor=16, scope=scope)
        C = T.match_buffer(c, (16, 16), dtype, align=64, offset_factor=16, scope=fragment)
        with T.block("root"):
            T.reads(A[0:16, 0:16])
            T.writes(C[0:16, 0:16])
            for i, j in T.grid(16, 16):
                with T.block("load"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = A[vi, vj]

    @T.prim_func
    def impl(a: T.handle, c: T.handle) -> None:
        s1 = T.int32()
        s0 = T.int32()
        d1 = T.int32()
        d0 = T.int32()
        A = T.match_buffer(a, (16, 16), dtype, align=64, offset_factor=16, scope=scope, strides=[s1, s0])
        C = T.match_buffer(c, (16, 16), dtype, align=64, offset_factor=16, scope=fragment, strides=[d1, d0])
        with T.block("root"):
            T.reads(A[0:16, 0:16])
            T.writes(C[0:16, 0:16])
            T.evaluate(T.tvm_load_matrix_sync(C.data, 16, 16, 16, fragment_index(C, d1), A.access_ptr("r"), s1,
                                              layout))

    return desc, impl


def wmma_sync(in_dtype: str, out_dtype: str):
    """``desc``/``impl`` of ``C[i, j] += A[i, k] * B[k, j]`` on fragments.

    Parameters
    ----------
    in_dtype : str
        The dtype of A and B (``"float16"`` or ``"int8"``).
    out_dtype : str
        The accumulator's dtype (``"float16"``, ``"float32"`` or ``"int32"``).

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: the semantics and the WMMA call.
    """

    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (16, 16), in_dtype, align=64, offset_factor=16, scope="wmma.matrix_a")
        B = T.match_buffer(b, (16, 16), in_dtype, align=64, offset_factor=16, scope="wmma.matrix_b")
        C = T.match_buffer(c, (16, 16), out_dtype, align=64, offset_factor=16, scope="wmma.accumulator")
        with T.block("root"):
            T.reads(C[0:16, 0:16], A[0:16, 0:16], B[0:16, 0:16])
            T.writes(C[0:16, 0:16])
            for i, j, k in T.grid(16, 16, 16):
                with T.block("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + _cast(out_dtype, A[vi, vk]) * _cast(out_dtype, B[vk, vj])

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        a1 = T.int32()
        a0 = T.int32()
        b1 = T.int32()
        b0 = T.int32()
        c1 = T.int32()
        c0 = T.int32()
        A = T.match_buffer(a, (16, 16), in_dtype, align=64, offset_factor=16, scope="wmma.matrix_a", strides=[a1, a0])
        B = T.match_buffer(b, (16, 16), in_dtype, align=64, offset_factor=16, scope="wmma.matrix_b", strides=[b1, b0])
        C = T.match_buffer(c, (16, 16), out_dtype, align=64, offset_factor=16, scope="wmma.accumulator",
                           strides=[c1, c0])
        with T.block("root"):
            T.reads(C[0:16, 0:16], A[0:16, 0:16], B[0:16, 0:16])
            T.writes(C[0:16, 0:16])
            T.evaluate(T.tvm_mma_sync(C.data, fragment_index(C, c1), A.data, fragment_index(A, a1), B.data,
                                      fragment_index(B, b1), C.data, fragment_index(C, c1)))

    return desc, impl


def wmma_fill(dtype: str):
    """``desc``/``impl`` setting an accumulator tile to zero.

    Parameters
    ----------
    dtype : str
        The accumulator's dtype.

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: the semantics and the WMMA call.
    """
    zero = tir.const(0, dtype)

    @T.prim_func
    def desc(c: T.handle) -> None:
        C = T.match_buffer(c, (16, 16), dtype, align=64, offset_factor=16, scope="wmma.accumulator")
        with T.block("root"):
            T.reads()
            T.writes(C[0:16, 0:16])
            for i, j in T.grid(16, 16):
                with T.block("init"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = zero

    @T.prim_func
    def impl(c: T.handle) -> None:
        d1 = T.int32()
        d0 = T.int32()
        C = T.match_buffer(c, (16, 16), dtype, align=64, offset_factor=16, scope="wmma.accumulator", strides=[d1, d0])
        with T.block("root"):
            T.reads()
            T.writes(C[0:16, 0:16])
            T.evaluate(T.tvm_fill_fragment(C.data, 16, 16, 16, fragment_index(C, d1), zero))

    return desc, impl


def wmma_store(dtype: str, scope: str):
    """``desc``/``impl`` storing an accumulator tile to ``scope`` memory (row major).

    Parameters
    ----------
    dtype : str
        The accumulator's dtype.
    scope : str
        The destination memory, ``"shared"`` or ``"global"``.

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: the semantics and the WMMA call.
    """

    @T.prim_func
    def desc(a: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (16, 16), dtype, align=64, offset_factor=16, scope="wmma.accumulator")
        C = T.match_buffer(c, (16, 16), dtype, align=64, offset_factor=16, scope=scope)
        with T.block("root"):
            T.reads(A[0:16, 0:16])
            T.writes(C[0:16, 0:16])
            for i, j in T.grid(16, 16):
                with T.block("store"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = A[vi, vj]

    @T.prim_func
    def impl(a: T.handle, c: T.handle) -> None:
        s1 = T.int32()
        s0 = T.int32()
        d1 = T.int32()
        d0 = T.int32()
        A = T.match_buffer(a, (16, 16), dtype, align=64, offset_factor=16, scope="wmma.accumulator", strides=[d1, d0])
        C = T.match_buffer(c, (16, 16), dtype, align=64, offset_factor=16, scope=scope, strides=[s1, s0])
        with T.block("root"):
            T.reads(A[0:16, 0:16])
            T.writes(C[0:16, 0:16])
            T.evaluate(T.tvm_store_matrix_sync(A.data, 16, 16, 16, fragment_index(A, d1), C.access_ptr("w"), s1,
                                               "row_major"))

    return desc, impl


def _register(name: str, pair, kind: str) -> None:
    TensorIntrin.register(name, *pair, override=True, meta=_meta(kind))


for _name, _dtype, _is_b, _trans in (
    (WMMA_LOAD_16x16x16_F16_A_INTRIN, "float16", False, False), (WMMA_LOAD_16x16x16_F16_B_INTRIN, "float16", True, False),
    (WMMA_LOAD_16x16x16_F16_A_TRANS_INTRIN, "float16", False, True),
    (WMMA_LOAD_16x16x16_F16_B_TRANS_INTRIN, "float16", True, True),
    (WMMA_LOAD_16x16x16_S8_A_INTRIN, "int8", False, False), (WMMA_LOAD_16x16x16_S8_B_INTRIN, "int8", True, False),
):
    _register(_name, wmma_load(_dtype, "shared", _is_b, _trans), "load")
_register(WMMA_SYNC_16x16x16_f16f16f32_INTRIN, wmma_sync("float16", "float32"), "sync")
_register(WMMA_SYNC_16x16x16_f16f16f16_INTRIN, wmma_sync("float16", "float16"), "sync")
_register(WMMA_SYNC_16x16x16_s8s8s32_INTRIN, wmma_sync("int8", "int32"), "sync")
_register(WMMA_FILL_16x16x16_F32_INTRIN, wmma_fill("float32"), "fill")
_register(WMMA_FILL_16x16x16_F16_INTRIN, wmma_fill("float16"), "fill")
_register(WMMA_FILL_16x16x16_S32_INTRIN, wmma_fill("int32"), "fill")
_register(WMMA_STORE_16x16x16_F32_GLOBAL_INTRIN, wmma_store("float32", "global"), "store")
_register(WMMA_STORE_16x16x16_F32_SHARED_INTRIN, wmma_store("float32", "shared"), "store")
_register(WMMA_STORE_16x16x16_F16_GLOBAL_INTRIN, wmma_store("float16", "global"), "store")
_register(WMMA_STORE_16x16x16_S32_GLOBAL_INTRIN, wmma_store("int32", "global"), "store")

from . import cuda_mma  # noqa: E402,F401  (the inline-PTX mma.sync family registers with the WMMA one)
