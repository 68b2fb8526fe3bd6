"""``LowerMatchBuffer``: a block's ``T.match_buffer`` views become index arithmetic on the source buffer.

``A_sub = T.match_buffer(A[i0:i0 + 16, j0:j0 + 16], (16, 16))`` makes ``A_sub[x, y]`` read
``A[i0 + x, j0 + y]``; the view's symbolic ``elem_offset``/``strides`` (used by intrinsics through
``access_ptr``) are replaced by the source's offset of the region start and its strides.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.expr import Range, Var, make_const
from ..ir.functor import StmtExprMutator
from .pass_infra import func_pass


def buffer_strides(buffer: Buffer) -> list[E.PrimExpr]:
    """The element strides of each axis (declared, or row-major from the shape).

    Parameters
    ----------
    buffer : Buffer
        The buffer.

    Returns
    -------
    list of PrimExpr
        One stride per axis.
    """
    if buffer.strides:
        return list(buffer.strides)
    strides, acc = [], make_const("int32", 1)
    for extent in reversed(buffer.shape):
        strides.append(acc)
        acc = E.mul(acc, extent)
    return strides[::-1]


def _offset(origin, index):
    """``origin + index``, keeping a vector index a ``Ramp`` (a contiguous load after flattening)."""
    if isinstance(index, E.Ramp):
        return E.Ramp(E.add(origin, index.base), index.stride, index.lanes)
    return E.add(origin, index)


class _MatchLowerer(StmtExprMutator):
    def __init__(self):
        self.views: dict[int, tuple[Buffer, list]] = {}  # id(view buffer) -> (source buffer, region mins)
        self.var_map: dict[int, E.PrimExpr] = {}

    def _source_indices(self, buffer: Buffer, indices):
        source, mins = self.views[id(buffer)]
        lead = len(mins) - len(indices)
        return source, tuple(mins[:lead]) + tuple(_offset(m, i) for m, i in zip(mins[lead:], indices))

    def visit_var_(self, op):
        return self.var_map.get(id(op), op)

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        if id(op.buffer) in self.views:
            source, indices = self._source_indices(op.buffer, op.indices)
            return E.BufferLoad(source, indices, op.predicate)
        return op

    def visit_buffer_store_(self, op):
        op = super().visit_buffer_store_(op)
        if id(op.buffer) in self.views:
            source, indices = self._source_indices(op.buffer, op.indices)
            return S.BufferStore(source, op.value, indices, op.predicate)
        return op

    def visit_buffer_region(self, region):
        region = super().visit_buffer_region(region)
        if id(region.buffer) not in self.views:
            return region
        source, mins = self.views[id(region.buffer)]
        lead = len(mins) - len(region.region)
        ranges = [Range.from_min_extent(m, 1) for m in mins[:lead]]
        ranges += [Range.from_min_extent(E.add(m, r.min), r.extent) for m, r in zip(mins[lead:], region.region)]
        return S.BufferRegion(source, ranges)

    def visit_block_(self, op):
        for match in op.match_buffers:
            view, source = match.buffer, self.visit_buffer_region(match.source)
            src_buf = source.buffer
            mins = [r.min for r in source.region]
            if view.ndim > len(mins):
                raise ValueError(f"match_buffer {view.name!r} has {view.ndim} dimensions but its source region "
                                 f"{src_buf.name!r} has {len(mins)}; the view cannot have more axes than the source")
            self.views[id(view)] = (src_buf, mins)
            strides = buffer_strides(src_buf)
            offset = src_buf.elem_offset
            for m, s in zip(mins, strides):
                offset = E.add(offset, E.mul(m, s))
            self._bind(view.elem_offset, offset)
            self._bind(view.data, src_buf.data)
            for declared, actual in zip(view.strides, strides[len(strides) - view.ndim:]):
                self._bind(declared, actual)
            for declared, r in zip(view.shape, source.region[len(mins) - view.ndim:]):
                self._bind(declared, r.extent)
        new = super().visit_block_(op)
        if new.match_buffers:
            new = new.replace(match_buffers=())
        return new

    def _bind(self, declared, actual) -> None:
        if isinstance(declared, Var):
            self.var_map[id(declared)] = actual


def lower_match_buffer(func):
    """``func`` without ``match_buffer`` views (the PrimFunc-level form of ``LowerMatchBuffer``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    return func.with_body(_MatchLowerer().visit(func.body))


def LowerMatchBuffer():  # noqa: N802 - TVM's pass name
    """Replace block ``match_buffer`` views by accesses of their source buffers.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(lower_match_buffer, "tir.LowerMatchBuffer")
