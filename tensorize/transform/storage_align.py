"""``StorageAlign``: give allocated buffers the padded strides that ``sch.storage_align`` asked for.

``storage_align(block, buffer_index, axis, factor, offset)`` leaves the block annotation
``buffer_dim_align = [[buffer_index, axis, factor, offset], ...]``. This pass gives the annotated
write buffer row-major strides where the stride of each aligned axis is padded up to the next value
with ``stride % factor == offset`` (the classic trick against shared-memory bank conflicts), so a
``(64, 64)`` buffer aligned on axis 0 with factor 32, offset 1 gets strides ``(65, 1)``. It runs after
``CompactBufferAllocation`` (the compacted shape is what gets aligned); ``FlattenBuffer`` then uses
the strides for indices and allocation sizes.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.functor import StmtExprMutator, StmtExprVisitor
from .pass_infra import func_pass

ANNOTATION = "buffer_dim_align"


def aligned_strides(shape, aligns: dict[int, tuple[int, int]]) -> list[E.PrimExpr]:
    """Row-major strides of ``shape`` with the stride of each axis in ``aligns`` (axis -> (factor,
    offset)) padded up so that ``stride % factor == offset``.

    Parameters
    ----------
    shape : list of PrimExpr
        The buffer shape.
    aligns : dict of int to (int, int)
        Axis to ``(factor, offset)``.

    Returns
    -------
    list of PrimExpr
        The strides.

    Examples
    --------
    >>> from tensorize.transform.storage_align import aligned_strides
    >>> [int(s) for s in aligned_strides([4, 8], {0: (16, 1)})]
    [17, 1]
    """
    strides: list[E.PrimExpr] = [E.make_const("int32", 0)] * len(shape)
    stride: E.PrimExpr = E.make_const("int32", 1)
    for axis in range(len(shape) - 1, -1, -1):
        if axis in aligns:
            factor, offset = aligns[axis]
            if isinstance(stride, E.IntImm):
                stride = E.make_const(stride.dtype, stride.value + (offset - stride.value) % factor)
            else:
                stride = E.add(stride, E.floormod(E.sub(E.make_const(stride.dtype, offset), stride), factor))
        strides[axis] = stride
        stride = E.mul(stride, shape[axis])
    return strides


class _AlignCollector(StmtExprVisitor):
    """``{id(data var): {axis: (factor, offset)}}`` from every block's ``buffer_dim_align``."""

    def __init__(self):
        self.aligns: dict[int, dict[int, tuple[int, int]]] = {}

    def visit_block_(self, op):
        for entry in op.annotations.get(ANNOTATION, ()) or ():
            index, axis, factor, offset = (int(getattr(x, "value", x)) for x in entry)
            if not 0 <= index < len(op.writes):
                raise ValueError(f"block {op.name_hint!r} asks to align write buffer {index}, but it writes only "
                                 f"{len(op.writes)} buffers")
            buf = op.writes[index].buffer
            self.aligns.setdefault(id(buf.data), {})[axis % max(buf.ndim, 1)] = (factor, offset)
        super().visit_block_(op)


class _StrideSetter(StmtExprMutator):
    def __init__(self, aligns):
        self.aligns = aligns
        self.new: dict[int, Buffer] = {}  # id(old buffer) -> strided buffer

    def _buf(self, buf: Buffer) -> Buffer:
        if id(buf.data) not in self.aligns or buf.strides:
            return buf
        new = self.new.get(id(buf))
        if new is None:
            new = buf.replace(strides=tuple(aligned_strides(buf.shape, self.aligns[id(buf.data)])))
            self.new[id(buf)] = new
        return new

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        buf = self._buf(op.buffer)
        return op if buf is op.buffer else op.replace(buffer=buf)

    def visit_buffer_store_(self, op):
        op = super().visit_buffer_store_(op)
        buf = self._buf(op.buffer)
        return op if buf is op.buffer else op.replace(buffer=buf)

    def visit_buffer_region(self, region):
        region = super().visit_buffer_region(region)
        buf = self._buf(region.buffer)
        return region if buf is region.buffer else S.BufferRegion(buf, region.region)

    def visit_block_(self, op):
        op = super().visit_block_(op)
        allocs = tuple(self._buf(b) for b in op.alloc_buffers)
        if any(a is not b for a, b in zip(allocs, op.alloc_buffers)):
            op = op.replace(alloc_buffers=allocs)
        return op


def storage_align(func):
    """``func`` with the strides of ``storage_align``-annotated buffers padded (the PrimFunc-level form of ``StorageAlign``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    collector = _AlignCollector()
    collector.visit_stmt(func.body)
    if not collector.aligns:
        return func
    params = {id(b.data) for b in func.buffer_map.values()}
    aligns = {k: v for k, v in collector.aligns.items() if k not in params}  # parameters keep their layout
    return func.with_body(_StrideSetter(aligns).visit(func.body)) if aligns else func


def StorageAlign():  # noqa: N802 - TVM's pass name
    """Pad the strides of buffers annotated by ``sch.storage_align``.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(storage_align, "tir.StorageAlign")
