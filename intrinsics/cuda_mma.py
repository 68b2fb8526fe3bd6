"""NVIDIA Tensor Core intrinsics through inline PTX: ``ldmatrix`` loads and ``mma.sync``, under TVM's names.

Unlike WMMA's opaque fragments, ``mma.sync`` works on registers whose mapping to the tile is fixed by
the PTX ISA. The intrinsics make that mapping explicit: a 16x16 (f16) or 16x32 (int8) tile held by
a warp is a ``"warp"``-scope buffer of shape ``(32, L)``: row ``lane`` holds the ``L`` elements that
lane keeps in its registers. A schedule gives a warp buffer this layout with
``sch.transform_layout(block, buffer, warp_layout(...))`` (see ``warp_tile_map``), so the ``desc`` of
each intrinsic, a plain TensorIR copy or multiply-accumulate through the lane mapping, is also what the
CPU emulation runs. The CUDA code generator keeps one row per thread (``L`` registers, see
``tensorize.codegen.cuda.warp_memory``).

Layouts (``lane``, ``local``) of tile element ``(i, j)``:

====================  ==============================================  =====================================
tile                  lane                                            local
====================  ==============================================  =====================================
A f16 [m, k] 16x16    4*(i%8) + (j%8)//2                              4*(j//8) + 2*(i//8) + j%2
B f16 [k, n] 16x16    4*(j%8) + (i%8)//2                              4*(j//8) + 2*(i//8) + i%2
B f16 [n, k] (trans)  4*(i%8) + (j%8)//2                              4*(i//8) + 2*(j//8) + j%2
C 16x16 (f32, s32)    4*(i%8) + (j%8)//2                              4*(j//8) + 2*(i//8) + j%2
A s8 [m, k] 16x32     4*(i%8) + (j%16)//4                             8*(j//16) + 4*(i//8) + j%4
B s8 [k, n] 32x16     4*(j%8) + (i%16)//4                             8*(j//8) + 4*(i//16) + i%4
B s8 [n, k] (trans)   4*(i%8) + (j%16)//4                             8*(i//8) + 4*(j//16) + j%4
====================  ==============================================  =====================================

=================================  ====================================================
name                               what
=================================  ====================================================
mma_ldmatrix_f16_a                 shared A [16, 16] f16 -> warp (ldmatrix.x4)
mma_ldmatrix_f16_b                 shared B [16(k), 16(n)] -> warp (ldmatrix.x4.trans)
mma_ldmatrix_f16_b_trans           shared B^T [16(n), 16(k)] -> warp (ldmatrix.x4)
mma_ldmatrix_i8_a                  shared A [16, 32] s8 -> warp (ldmatrix.x4)
mma_ldmatrix_i8_b                  shared B [32(k), 16(n)] s8 -> warp (per-lane loads)
mma_ldmatrix_i8_b_trans            shared B^T [16(n), 32(k)] s8 -> warp (ldmatrix.x4)
mma_f16f16f32 / _trans_b           C(f32) += A B on a 16x16x16 tile: 2 x mma.m16n8k16
mma_i8i8i32 / _trans_b             C(s32) += A B on a 16x16x32 tile: 2 x mma.m16n8k32
mma_fill_16x16_f32 / _i32          C = 0
mma_store_16x16_f32_global/_shared C -> memory (per-lane stores; also _i32_global)
=================================  ====================================================

>>> import intrinsics.cuda_mma as mma
>>> lane, local = mma.layout("a", "float16")(9, 10)
>>> int(lane), int(local)
(5, 6)
"""
from __future__ import annotations

from tensorize import tir
from tensorize.ir.tensor_intrin import IntrinMeta, TensorIntrin
from tensorize.script import tir as T

WARP = 32

LDMATRIX_f16_A_INTRIN = "mma_ldmatrix_f16_a"
LDMATRIX_f16_B_INTRIN = "mma_ldmatrix_f16_b"
LDMATRIX_f16_B_TRANS_INTRIN = "mma_ldmatrix_f16_b_trans"
LDMATRIX_i8_A_INTRIN = "mma_ldmatrix_i8_a"
LDMATRIX_i8_B_INTRIN = "mma_ldmatrix_i8_b"
LDMATRIX_i8_B_TRANS_INTRIN = "mma_ldmatrix_i8_b_trans"
MMA_f16f16f32_INTRIN = "mma_f16f16f32"
MMA_f16f16f32_TRANS_B_INTRIN = "mma_f16f16f32_trans_b"
MMA_i8i8i32_INTRIN = "mma_i8i8i32"
MMA_i8i8i32_TRANS_B_INTRIN = "mma_i8i8i32_trans_b"
MMA_fill_16x16_f32_INTRIN = "mma_fill_16x16_f32"
MMA_fill_16x16_i32_INTRIN = "mma_fill_16x16_i32"
MMA_store_16x16_f32_global_INTRIN = "mma_store_16x16_f32_global"
MMA_store_16x16_f32_shared_INTRIN = "mma_store_16x16_f32_shared"
MMA_store_16x16_i32_global_INTRIN = "mma_store_16x16_i32_global"


def _layout_a16(i, j):
    return 4 * (i % 8) + (j % 8) // 2, 4 * (j // 8) + 2 * (i // 8) + j % 2


def _layout_b16(i, j):
    return 4 * (j % 8) + (i % 8) // 2, 4 * (j // 8) + 2 * (i // 8) + i % 2


def _layout_b16_trans(i, j):
    return 4 * (i % 8) + (j % 8) // 2, 4 * (i // 8) + 2 * (j // 8) + j % 2


def _layout_a8(i, j):
    return 4 * (i % 8) + (j % 16) // 4, 8 * (j // 16) + 4 * (i // 8) + j % 4


def _layout_b8(i, j):
    return 4 * (j % 8) + (i % 16) // 4, 8 * (j // 8) + 4 * (i // 16) + i % 4


def _layout_b8_trans(i, j):
    return 4 * (i % 8) + (j % 16) // 4, 8 * (i // 8) + 4 * (j // 16) + j % 4


_LAYOUTS = {("a", "float16"): _layout_a16, ("b", "float16"): _layout_b16, ("b_trans", "float16"): _layout_b16_trans,
            ("c", "float32"): _layout_a16, ("c", "int32"): _layout_a16, ("a", "int8"): _layout_a8,
            ("b", "int8"): _layout_b8, ("b_trans", "int8"): _layout_b8_trans}


def layout(operand: str, dtype: str):
    """The lane mapping of a tile: ``f(i, j) -> (lane, local)``.

    Parameters
    ----------
    operand : str
        ``"a"``, ``"b"`` (stored ``[k, n]``), ``"b_trans"`` (stored ``[n, k]``) or ``"c"``.
    dtype : str
        The element dtype: ``"float16"``/``"int8"`` for a and b, ``"float32"``/``"int32"`` for c.

    Returns
    -------
    callable
        The mapping; it takes ints or PrimExprs.
    """
    return _LAYOUTS[(operand, dtype)]


def tile_shape(operand: str, dtype: str) -> tuple:
    """The shape of one tile of ``operand`` (16x16, or 16x32 / 32x16 for int8 operands).

    Parameters
    ----------
    operand : str
        ``"a"``, ``"b"``, ``"b_trans"`` or ``"c"``.
    dtype : str
        The element dtype.

    Returns
    -------
    tuple of int
        ``(rows, cols)``.
    """
    if dtype == "int8":
        return (32, 16) if operand == "b" else (16, 32)
    return (16, 16)


def warp_tile_map(operand: str, dtype: str):
    """The index map a schedule gives a whole warp buffer: ``(i, j) -> (i // R, j // C, lane, local)``.

    Parameters
    ----------
    operand : str
        ``"a"``, ``"b"``, ``"b_trans"`` or ``"c"``.
    dtype : str
        The element dtype.

    Returns
    -------
    callable
        For ``sch.transform_layout(block, buffer, warp_tile_map(...))``.
    """
    rows, cols = tile_shape(operand, dtype)
    f = layout(operand, dtype)

    def index_map(i, j):
        return (i // rows, j // cols, *f(i % rows, j % cols))

    return index_map


def _meta(kind: str, **extra) -> IntrinMeta:
    return IntrinMeta(target_kind="cuda", extra={"mma": kind, **extra})


def _shared_offset(operand: str, dtype: str, tx, stride):
    """The shared address (in elements, from the tile's start) lane ``tx`` gives ``ldmatrix.x4``."""
    col = 16 if dtype == "int8" else 8
    if operand == "b_trans":
        return (8 * (tx // 16) + tx % 8) * stride + col * ((tx // 8) % 2)
    return (tx % 16) * stride + col * (tx // 16)


def ldmatrix(operand: str, dtype: str, scope: str = "shared"):
    """``desc``/``impl`` loading one tile of ``scope`` memory into a warp buffer through the lane mapping.

    Parameters
    ----------
    operand : str
        ``"a"``, ``"b"`` or ``"b_trans"``.
    dtype : str
        ``"float16"`` or ``"int8"``.
    scope : str
        The source memory.

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: ``impl`` is one ``ldmatrix.sync.aligned.m8n8.x4`` per lane (int8 ``b``: per-lane
        loads, ``ldmatrix`` moves 16-bit elements only).
    """
    rows, cols = tile_shape(operand, dtype)
    local = rows * cols // WARP
    f = layout(operand, dtype)
    trans = operand == "b" and dtype == "float16"

    @T.prim_func
    def desc(w: T.handle, s: T.handle) -> None:
        shared = T.match_buffer(s, (rows, cols), dtype, align=64, offset_factor=1, scope=scope)
        warp = T.match_buffer(w, (WARP, local), dtype, align=64, offset_factor=1, scope="warp")
        with T.block("root"):
            T.reads(shared[0:rows, 0:cols])
            T.writes(warp[0:WARP, 0:local])
            for ax0, ax1 in T.grid(rows, cols):
                with T.block("shared_warp"):
                    v0, v1 = T.axis.remap("SS", [ax0, ax1])
                    warp[f(v0, v1)[0], f(v0, v1)[1]] = shared[v0, v1]

    if operand == "b" and dtype == "int8":
        @T.prim_func
        def impl(w: T.handle, s: T.handle) -> None:
            s0 = T.int32()
            s1 = T.int32()
            shared = T.match_buffer(s, (rows, cols), dtype, align=64, offset_factor=1, scope=scope, strides=[s0, s1])
            warp = T.match_buffer(w, (WARP, local), dtype, align=64, offset_factor=1, scope="warp")
            with T.block("root"):
                T.reads(shared[0:rows, 0:cols])
                T.writes(warp[0:WARP, 0:local])
                for tx in T.thread_binding(WARP, thread="threadIdx.x"):
                    for r in T.unroll(local):
                        # lane tx, register byte r: k = 4*(tx%4) + 16*((r//4)%2) + r%4, n = tx//4 + 8*(r//8)
                        warp[tx, r] = shared[4 * (tx % 4) + 16 * ((r // 4) % 2) + r % 4, tx // 4 + 8 * (r // 8)]
        return desc, impl

    @T.prim_func
    def impl(w: T.handle, s: T.handle) -> None:
        s0 = T.int32()
        s1 = T.int32()
        shared = T.match_buffer(s, (rows, cols), dtype, align=64, offset_factor=1, scope=scope, strides=[s0, s1])
        warp = T.match_buffer(w, (WARP, local), dtype, align=64, offset_factor=1, scope="warp")
        with T.block("root"):
            T.reads(shared[0:rows, 0:cols])
            T.writes(warp[0:WARP, 0:local])
            for tx in T.thread_binding(WARP, thread="threadIdx.x"):
                T.evaluate(T.ptx_ldmatrix(dtype, trans, 4, ".b16", warp.data, warp.elem_offset + local * tx,
                                          shared.data, shared.elem_offset + _shared_offset(operand, dtype, tx, s0)))

    return desc, impl


def mma_sync(in_dtype: str, out_dtype: str, b_trans: bool):
    """``desc``/``impl`` of ``C[i, j] += A[i, k] * B[k, j]`` on warp buffers (16x16 output tile).

    Parameters
    ----------
    in_dtype : str
        ``"float16"`` (k = 16, two ``mma.m16n8k16``) or ``"int8"`` (k = 32, two ``mma.m16n8k32``).
    out_dtype : str
        ``"float32"`` or ``"int32"``.
    b_trans : bool
        B's tile is stored ``[n, k]``.

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``.
    """
    k_ext = 32 if in_dtype == "int8" else 16
    la, lb = 16 * k_ext // WARP, 16 * k_ext // WARP
    fa, fc = layout("a", in_dtype), layout("c", out_dtype)
    fb = layout("b_trans" if b_trans else "b", in_dtype)
    shape, ptx_in = ("m16n8k32", "int8") if in_dtype == "int8" else ("m16n8k16", "fp16")
    ptx_out = "int32" if out_dtype == "int32" else "fp32"

    def b_index(vk, vj):
        return fb(vj, vk) if b_trans else fb(vk, vj)

    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (WARP, la), in_dtype, align=64, offset_factor=1, scope="warp")
        B = T.match_buffer(b, (WARP, lb), in_dtype, align=64, offset_factor=1, scope="warp")
        C = T.match_buffer(c, (WARP, 8), out_dtype, align=64, offset_factor=1, scope="warp")
        with T.block("root"):
            T.reads(C[0:WARP, 0:8], A[0:WARP, 0:la], B[0:WARP, 0:lb])
            T.writes(C[0:WARP, 0:8])
            for i, j, k in T.grid(16, 16, k_ext):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[fc(vi, vj)[0], fc(vi, vj)[1]] = C[fc(vi, vj)[0], fc(vi, vj)[1]] + T.Cast(
                        out_dtype, A[fa(vi, vk)[0], fa(vi, vk)[1]]) * T.Cast(
                        out_dtype, B[b_index(vk, vj)[0], b_index(vk, vj)[1]])

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (WARP, la), in_dtype, align=64, offset_factor=1, scope="warp")
        B = T.match_buffer(b, (WARP, lb), in_dtype, align=64, offset_factor=1, scope="warp")
        C = T.match_buffer(c, (WARP, 8), out_dtype, align=64, offset_factor=1, scope="warp")
        with T.block("root"):
            T.reads(C[0:WARP, 0:8], A[0:WARP, 0:la], B[0:WARP, 0:lb])
            T.writes(C[0:WARP, 0:8])
            for tx in T.thread_binding(WARP, thread="threadIdx.x"):
                T.evaluate(T.ptx_mma(out_dtype, shape, "row", "col", ptx_in, ptx_in, ptx_out,
                                     A.data, A.elem_offset + la * tx, B.data, B.elem_offset + lb * tx,
                                     C.data, C.elem_offset + 8 * tx, False))
                T.evaluate(T.ptx_mma(out_dtype, shape, "row", "col", ptx_in, ptx_in, ptx_out,
                                     A.data, A.elem_offset + la * tx, B.data, B.elem_offset + lb * tx + lb // 2,
                                     C.data, C.elem_offset + 8 * tx + 4, False))

    return desc, impl


def mma_fill(dtype: str):
    """``desc``/``impl`` zeroing a 16x16 accumulator tile held in a warp buffer.

    Parameters
    ----------
    dtype : str
        ``"float32"`` or ``"int32"``.

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: each lane zeroes its 8 registers.
    """
    f = layout("c", dtype)
    zero = tir.const(0, dtype)

    @T.prim_func
    def desc(c: T.handle) -> None:
        C = T.match_buffer(c, (WARP, 8), dtype, align=64, offset_factor=1, scope="warp")
        with T.block("root"):
            T.reads()
            T.writes(C[0:WARP, 0:8])
            for i, j in T.grid(16, 16):
                with T.block("C_init"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[f(vi, vj)[0], f(vi, vj)[1]] = zero

    @T.prim_func
    def impl(c: T.handle) -> None:
        C = T.match_buffer(c, (WARP, 8), dtype, align=64, offset_factor=1, scope="warp")
        with T.block("root"):
            T.reads()
            T.writes(C[0:WARP, 0:8])
            for tx in T.thread_binding(WARP, thread="threadIdx.x"):
                for r in T.unroll(8):
                    C[tx, r] = zero

    return desc, impl


def mma_store(dtype: str, scope: str):
    """``desc``/``impl`` writing a 16x16 accumulator tile from a warp buffer to ``scope`` memory.

    Parameters
    ----------
    dtype : str
        ``"float32"`` or ``"int32"``.
    scope : str
        ``"global"`` or ``"shared"``.

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: each lane stores its 8 elements.
    """
    f = layout("c", dtype)

    @T.prim_func
    def desc(c: T.handle, d: T.handle) -> None:
        C = T.match_buffer(c, (WARP, 8), dtype, align=64, offset_factor=1, scope="warp")
        D = T.match_buffer(d, (16, 16), dtype, align=64, offset_factor=1, scope=scope)
        with T.block("root"):
            T.reads(C[0:WARP, 0:8])
            T.writes(D[0:16, 0:16])
            for i, j in T.grid(16, 16):
                with T.block("C_store"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    D[vi, vj] = C[f(vi, vj)[0], f(vi, vj)[1]]

    @T.prim_func
    def impl(c: T.handle, d: T.handle) -> None:
        s0 = T.int32()
        s1 = T.int32()
        C = T.match_buffer(c, (WARP, 8), dtype, align=64, offset_factor=1, scope="warp")
        D = T.match_buffer(d, (16, 16), dtype, align=64, offset_factor=1, scope=scope, strides=[s0, s1])
        with T.block("root"):
            T.reads(C[0:WARP, 0:8])
            T.writes(D[0:16, 0:16])
            for tx in T.thread_binding(WARP, thread="threadIdx.x"):
                for r in T.unroll(8):
                    D[tx // 4 + 8 * ((r // 2) % 2), 2 * (tx % 4) + r % 2 + 8 * (r // 4)] = C[tx, r]

    return desc, impl


def _register(name: str, pair, kind: str, **extra) -> None:
    TensorIntrin.register(name, *pair, override=True, meta=_meta(kind, **extra))


for _name, _operand, _dtype in (
    (LDMATRIX_f16_A_INTRIN, "a", "float16"), (LDMATRIX_f16_B_INTRIN, "b", "float16"),
    (LDMATRIX_f16_B_TRANS_INTRIN, "b_trans", "float16"), (LDMATRIX_i8_A_INTRIN, "a", "int8"),
    (LDMATRIX_i8_B_INTRIN, "b", "int8"), (LDMATRIX_i8_B_TRANS_INTRIN, "b_trans", "int8"),
):
    _register(_name, ldmatrix(_operand, _dtype), "load", operand=_operand, dtype=_dtype)
_register(MMA_f16f16f32_INTRIN, mma_sync("float16", "float32", False), "sync")
_register(MMA_f16f16f32_TRANS_B_INTRIN, mma_sync("float16", "float32", True), "sync")
_register(MMA_i8i8i32_INTRIN, mma_sync("int8", "int32", False), "sync")
_register(MMA_i8i8i32_TRANS_B_INTRIN, mma_sync("int8", "int32", True), "sync")
_register(MMA_fill_16x16_f32_INTRIN, mma_fill("float32"), "fill")
_register(MMA_fill_16x16_i32_INTRIN, mma_fill("int32"), "fill")
_register(MMA_store_16x16_f32_global_INTRIN, mma_store("float32", "global"), "store")
_register(MMA_store_16x16_f32_shared_INTRIN, mma_store("float32", "shared"), "store")
_register(MMA_store_16x16_i32_global_INTRIN, mma_store("int32", "global"), "store")
