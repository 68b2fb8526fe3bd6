"""``FlattenBuffer``: multi-dimensional accesses become one flat index.

``A[i, j]`` on a ``(128, 64)`` buffer becomes ``A_flat[i * 64 + j]``, where ``A_flat`` is a 1-D
view sharing ``A.data``. Declared strides are used when present; the buffer's ``elem_offset`` is
folded into the index, so flat views always have ``elem_offset == 0``. With ``axis_separators``
the result keeps one index per axis group. ``Allocate`` extents become the total size.
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.expr import IntImm, make_const
from ..ir.functor import StmtExprMutator
from .lower_match_buffer import buffer_strides
from .pass_infra import func_pass


def _is_flat(buffer: Buffer) -> bool:
    return (buffer.ndim == 1 and not buffer.strides and isinstance(buffer.elem_offset, IntImm)
            and buffer.elem_offset.value == 0 and not buffer.axis_separators)


def flat_offset(indices, strides, base) -> E.PrimExpr:
    """``base + sum(index * stride)``, kept as a ``Ramp`` when one index is a ramp (vector access).

    Parameters
    ----------
    indices : list of PrimExpr
        One index per axis.
    strides : list of PrimExpr
        One stride per axis.
    base : PrimExpr
        The element offset.

    Returns
    -------
    PrimExpr
        The flat index.
    """
    scalar, ramp = base, None
    for index, stride in zip(indices, strides):
        if isinstance(index, E.Ramp) and ramp is None:
            scalar = E.add(scalar, E.mul(index.base, stride))
            ramp = (E.mul(index.stride, stride), index.lanes)
        else:
            if dt.lanes_of(index.dtype) > 1 and dt.lanes_of(scalar.dtype) == 1 and ramp is not None:
                scalar = E.Ramp(scalar, ramp[0], ramp[1])
                ramp = None
            scalar = E.add(scalar, E.mul(index, stride))
    if ramp is not None:
        if dt.lanes_of(scalar.dtype) > 1:
            return E.add(scalar, E.Ramp(make_const(dt.element_of(scalar.dtype), 0), ramp[0], ramp[1]))
        return E.Ramp(scalar, ramp[0], ramp[1])
    return scalar


class _Flattener(StmtExprMutator):
    def __init__(self):
        self.views: dict[int, Buffer] = {}

    def flat_view(self, buffer: Buffer) -> Buffer:
        view = self.views.get(id(buffer))
        if view is None:
            if _is_flat(buffer):
                view = buffer
            else:
                groups = self._groups(buffer)
                shape = []
                for group in groups:
                    size = make_const("int32", 1) if not group else None
                    for axis in group:
                        size = buffer.shape[axis] if size is None else E.mul(size, buffer.shape[axis])
                    shape.append(size)
                if buffer.strides and len(groups) == 1:
                    # The memory spans the first axis times its stride.
                    shape = [E.mul(buffer.shape[0], buffer.strides[0])] if buffer.ndim else shape
                view = Buffer(buffer.data, buffer.dtype, shape, (), None, buffer.name, buffer.data_alignment,
                              buffer.offset_factor, buffer.buffer_type)
            self.views[id(buffer)] = view
        return view

    @staticmethod
    def _groups(buffer: Buffer) -> list[list[int]]:
        bounds = [0] + list(buffer.axis_separators) + [buffer.ndim]
        return [list(range(bounds[k], bounds[k + 1])) for k in range(len(bounds) - 1)]

    def flat_indices(self, buffer: Buffer, indices) -> tuple:
        if _is_flat(buffer):
            return tuple(indices)
        if len(indices) != buffer.ndim:
            raise ValueError(f"access to {buffer.name!r} has {len(indices)} indices for {buffer.ndim} dimensions")
        groups = self._groups(buffer)
        if len(groups) == 1:
            return (flat_offset(indices, buffer_strides(buffer), buffer.elem_offset),)
        out = []
        for k, group in enumerate(groups):
            sub = Buffer(buffer.data, buffer.dtype, [buffer.shape[a] for a in group])
            base = buffer.elem_offset if k == len(groups) - 1 else make_const("int32", 0)
            out.append(flat_offset([indices[a] for a in group], buffer_strides(sub), base))
        return tuple(out)

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        if _is_flat(op.buffer):
            return op
        return E.BufferLoad(self.flat_view(op.buffer), self.flat_indices(op.buffer, op.indices), op.predicate)

    def visit_buffer_store_(self, op):
        op = super().visit_buffer_store_(op)
        if _is_flat(op.buffer):
            return op
        return S.BufferStore(self.flat_view(op.buffer), op.value, self.flat_indices(op.buffer, op.indices),
                             op.predicate)

    def visit_decl_buffer_(self, op):
        body = self.visit_stmt(op.body)
        return S.DeclBuffer(self.flat_view(op.buffer), body)

    def visit_allocate_(self, op):
        declared = op.body.buffer if isinstance(op.body, S.DeclBuffer) and op.body.buffer.data is op.buffer_var \
            else None
        op = super().visit_allocate_(op)
        if declared is not None and declared.strides and not declared.axis_separators and declared.ndim:
            # Padded strides (storage_align): the memory spans the first axis times its stride.
            return op.replace(extents=(E.mul(declared.shape[0], declared.strides[0]),))
        if len(op.extents) <= 1:
            return op
        size = op.extents[0]
        for e in op.extents[1:]:
            size = E.mul(size, e)
        return op.replace(extents=(size,))


def flatten_buffer(func):
    """``func`` with every buffer access flattened to one index (the PrimFunc-level form of ``FlattenBuffer``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    flattener = _Flattener()
    body = flattener.visit(func.body)
    # Allocations of buffers with axis separators keep one extent per group.
    return func.with_body(body)


def FlattenBuffer():  # noqa: N802 - TVM's pass name
    """Turn every buffer access into a single flat index on a 1-D view of the same data.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(flatten_buffer, "tir.FlattenBuffer")
