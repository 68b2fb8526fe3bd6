"""``SwizzleSharedLayout``: store annotated shared buffers in the Tensor Cores' XOR-swizzled layout.

Hopper's ``wgmma`` (and the bulk tensor copies) read shared memory through a *swizzle mode* of 32, 64 or
128 bytes (CUTLASS's ``Swizzle<B, 4, 3>``): within each 1024-byte-aligned address range, the 16-byte chunk
bits ``[4, 4 + B)`` of an address are XORed with its bits ``[7, 7 + B)``, ``B = log2(bytes / 16)``. A tile
whose rows are exactly ``bytes`` long then spreads any 8 consecutive rows' same chunk over distinct banks,
so both a warp writing whole rows (coalesced global reads) and the Tensor Cores reading columns of core
matrices run without bank conflicts. The hardware applies the XOR to the addresses it computes from a
descriptor; ordinary stores and ``cp.async`` do not, so every load and store of such a buffer must go to
the permuted element.

A schedule asks for it with the block annotation ``swizzle_bytes`` (``SWIZZLE``) on the block that writes
the shared buffer (its cache-read copy); this pass, run after ``CompactBufferAllocation``/``StorageAlign``
(the allocated shape and strides are final) and before blocks are lowered, rewrites the last index of every
``BufferLoad``/``BufferStore`` of that buffer: with ``c = 16 / element bytes`` elements per chunk and
``g = (flat offset // (128 / element bytes)) % 2^B``, column ``j`` becomes ``((j // c) ^ g) * c + j % c``
(affine in ``j % c``, so 16-byte vector copies stay vectors). Descriptor-based reads (``ptx_wgmma``'s
``access_ptr``) stay logical: the hardware swizzles them. The buffer's base must be 1024-byte aligned (the
CUDA code generator aligns such allocations) and its last extent a multiple of ``bytes / element bytes``.

>>> from tensorize.transform.swizzle_shared import swizzled_offset
>>> [swizzled_offset(64 * r, 2, 128) // 8 for r in range(8)]   # chunk 0 of rows 0..7 (64 f16 per row)
[0, 9, 18, 27, 36, 45, 54, 63]
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as ops
from ..ir.buffer import Buffer
from ..ir.expr_build import add, floordiv, floormod, mul
from ..ir.expr_convert import make_const
from ..ir.functor import StmtExprMutator, StmtExprVisitor
from .pass_infra import func_pass

SWIZZLE = "swizzle_bytes"
MODES = (32, 64, 128)


def swizzled_offset(offset: int, element_bytes: int, swizzle_bytes: int) -> int:
    """Where the element at flat ``offset`` of a ``swizzle_bytes``-swizzled buffer is stored (in elements).

    Parameters
    ----------
    offset : int
        The logical element offset from the (1024-byte aligned) buffer base.
    element_bytes : int
        Bytes per element.
    swizzle_bytes : int
        32, 64 or 128.

    Returns
    -------
    int
        The physical element offset.
    """
    byte = offset * element_bytes
    mask = swizzle_bytes // 16 - 1
    return (byte ^ (((byte >> 7) & mask) << 4)) // element_bytes


class _Collector(StmtExprVisitor):
    """``{id(data var): (buffer, swizzle bytes)}`` from the blocks annotated ``swizzle_bytes``."""

    def __init__(self):
        self.swizzled: dict = {}

    def visit_block_(self, op):
        mode = op.annotations.get(SWIZZLE)
        if mode is not None:
            mode = int(getattr(mode, "value", mode))
            if mode not in MODES:
                raise ValueError(f"block {op.name_hint!r}: swizzle_bytes must be one of {MODES}, not {mode}")
            if len(op.writes) != 1:
                raise ValueError(f"block {op.name_hint!r} asks for a swizzled layout but writes {len(op.writes)} "
                                 "buffers; annotate the copy block that writes the shared tile")
            buf = op.writes[0].buffer
            if not buf.scope().startswith("shared"):
                raise ValueError(f"block {op.name_hint!r}: only shared buffers are swizzled, {buf.name} is "
                                 f"{buf.scope()!r}")
            element = _element_bytes(buf)
            last = buf.shape[-1]
            row = mode // element
            if not isinstance(last, E.IntImm) or int(last.value) % row:
                raise ValueError(f"buffer {buf.name}: a {mode}-byte swizzle needs a last extent that is a multiple "
                                 f"of {row} elements, got {last}; change the K tile or drop the annotation")
            strides = list(buf.strides or [])
            if strides and (not all(isinstance(x, E.IntImm) for x in strides) or int(strides[-1].value) != 1
                            or any(int(x.value) % row for x in strides[:-1])):
                raise ValueError(f"buffer {buf.name}: a {mode}-byte swizzle needs rows starting on {mode}-byte "
                                 f"boundaries, but its strides are {strides} (storage_align padding?)")
            self.swizzled[id(buf.data)] = (buf, mode)
        super().visit_block_(op)


def _element_bytes(buf: Buffer) -> int:
    return max(1, dt.bits_of(buf.dtype) // 8)


def _flat(buf: Buffer, indices) -> E.PrimExpr:
    if buf.strides:
        strides = list(buf.strides)
    else:
        strides, stride = [], make_const("int32", 1)
        for extent in reversed(buf.shape):
            strides.insert(0, stride)
            stride = mul(stride, extent)
    flat = make_const("int32", 0)
    for index, stride in zip(indices, strides):
        flat = add(flat, mul(index, stride))
    return flat


def swizzle_indices(buf: Buffer, indices, swizzle_bytes: int) -> list:
    """``indices`` of ``buf`` with the last one moved to where a ``swizzle_bytes`` swizzle stores the element.

    Parameters
    ----------
    buf : Buffer
        The buffer (its shape and strides give the flat offset).
    indices : list of PrimExpr
        Scalar indices.
    swizzle_bytes : int
        32, 64 or 128.

    Returns
    -------
    list of PrimExpr
        The new indices.
    """
    element = _element_bytes(buf)
    chunk = max(1, 16 // element)
    rows = floormod(floordiv(_flat(buf, indices), 128 // element), swizzle_bytes // 16)
    last = indices[-1]
    moved = add(mul(ops.bitwise_xor(floordiv(last, chunk), rows), chunk), floormod(last, chunk))
    return [*indices[:-1], moved]


class _Rewriter(StmtExprMutator):
    def __init__(self, swizzled):
        self.swizzled = swizzled

    def _moved(self, op):
        entry = self.swizzled.get(id(op.buffer.data))
        if entry is None:
            return op
        return op.replace(indices=tuple(swizzle_indices(op.buffer, list(op.indices), entry[1])))

    def visit_buffer_load_(self, op):
        return self._moved(super().visit_buffer_load_(op))

    def visit_buffer_store_(self, op):
        return self._moved(super().visit_buffer_store_(op))

    def visit_block_(self, op):
        op = super().visit_block_(op)
        if SWIZZLE in op.annotations:  # done: running the pass again changes nothing
            op = op.replace(annotations={k: v for k, v in op.annotations.items() if k != SWIZZLE})
        return op


def swizzle_shared(func):
    """``func`` with the accesses of ``swizzle_bytes``-annotated shared buffers permuted (see the module).

    Parameters
    ----------
    func : PrimFunc
        The function (blocks not yet lowered).

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    collector = _Collector()
    collector.visit_stmt(func.body)
    if not collector.swizzled:
        return func
    return func.with_body(_Rewriter(collector.swizzled).visit(func.body))


def SwizzleSharedLayout():  # noqa: N802 - TVM's pass naming
    """Permute the accesses of shared buffers whose copy block is annotated ``swizzle_bytes``.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(swizzle_shared, "tir.SwizzleSharedLayout")
