"""``CompactBufferAllocation``: shrink each block-allocated buffer to the region its uses touch.

Under its allocation point, a buffer is often indexed by outer loop variables plus an inner tile,
e.g. ``B[i_o * 8 + i_i, j]`` with ``i_i`` in ``range(8)``. The buffer becomes 8 rows and the index
``i_i`` (the outer part is subtracted). Axes whose bounds cannot be proven constant-size stay whole.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.expr import IntImm, Range, Var, make_const
from ..ir.functor import StmtExprMutator, StmtExprVisitor, uses_var
from ..arith.linear import LinearForm, to_linear
from .pass_infra import func_pass


def index_interval(index: E.PrimExpr, doms: dict, outer: dict | None = None) -> tuple[LinearForm, LinearForm] | None:
    """Inclusive bounds of ``index`` as linear forms when variables in ``doms`` (id -> (min, extent)) range
    over their loops; None when the index is not linear in those variables.

    Parameters
    ----------
    index : PrimExpr
        The index.
    doms : dict
        Variable id to ``(min, extent)``.
    outer : dict, optional
        The same for the loops around the allocation (they stay symbolic): ``v % c`` and ``v // c`` of
        such a loop inside ``[0, c)`` read as ``v`` and ``0``, so that a fused loop's binding
        (``fused % 14`` with ``fused`` in ``range(14)``) and the plain variable give one interval.

    Returns
    -------
    tuple of LinearForm or None
        The lower and upper bounds.
    """
    if isinstance(index, E.Ramp):
        base = index_interval(index.base, doms, outer)
        if base is None or not isinstance(index.stride, IntImm):
            return None
        span = index.stride.value * (index.lanes - 1)
        lo, hi = base
        return (lo, hi + LinearForm.constant(span)) if span >= 0 else (lo + LinearForm.constant(span), hi)
    form = to_linear(index)
    lo = hi = LinearForm.constant(form.const, form.dtype)
    for term, coeff in form.terms.values():
        if isinstance(term, Var) and id(term) in doms:
            lo_v, extent = doms[id(term)]
            if not isinstance(extent, IntImm):
                return None
            first = to_linear(lo_v)
            last = first + LinearForm.constant(extent.value - 1)
            if coeff >= 0:
                lo, hi = lo + first.scaled(coeff), hi + last.scaled(coeff)
            else:
                lo, hi = lo + last.scaled(coeff), hi + first.scaled(coeff)
        elif uses_var(term, lambda v: id(v) in doms):
            bounds = _div_mod_bounds(term, doms)
            if bounds is None:
                quotient = _tile_quotient(term, doms, outer) if coeff > 0 else None
                if quotient is None:
                    return None
                lo, hi = lo + quotient[0].scaled(coeff), hi + quotient[1].scaled(coeff)
                continue
            first, last = LinearForm.constant(bounds[0], form.dtype), LinearForm.constant(bounds[1], form.dtype)
            lo, hi = (lo + first.scaled(coeff), hi + last.scaled(coeff)) if coeff >= 0 else \
                (lo + last.scaled(coeff), hi + first.scaled(coeff))
        else:
            unit = _unit_loop_min(term, outer)
            if unit is not None:  # a loop of extent 1 around the allocation: its variable is its min
                part = LinearForm.constant(unit * coeff, form.dtype)
            else:
                part = LinearForm.term(_fold_outer(term, outer)).scaled(coeff)
            lo, hi = lo + part, hi + part
    return lo, hi


def _unit_loop_min(term, outer: dict | None) -> int | None:
    """The constant value of ``term`` when it is the variable of an ``outer`` loop of extent 1 (a unit tile
    level that the blocks under it bind, ``n_1`` in ``n_0 + n_1 + n_2``, while a block at the same place that
    does not bind it leaves it out); None otherwise."""
    if not outer or not isinstance(term, Var):
        return None
    dom = outer.get(id(term))
    if dom is not None and isinstance(dom[0], IntImm) and isinstance(dom[1], IntImm) and dom[1].value == 1:
        return dom[0].value
    return None


def _fold_outer(term, outer: dict):
    """``v % c`` -> ``v`` and ``v // c`` -> 0 for a loop variable ``v`` of ``outer`` inside ``[0, c)``."""
    if outer and isinstance(term, (E.FloorDiv, E.FloorMod)) and isinstance(term.b, IntImm) and isinstance(term.a, Var):
        dom = outer.get(id(term.a))
        if dom is not None and isinstance(dom[0], IntImm) and isinstance(dom[1], IntImm) and dom[0].value >= 0 \
                and dom[0].value + dom[1].value <= term.b.value:
            return term.a if isinstance(term, E.FloorMod) else make_const(term.a.dtype, 0)
    return term


def _tile_quotient(term, doms: dict, outer):
    """Bounds of ``x // c`` where ``x`` is an outer multiple of ``c`` plus a part of constant range: a shared
    tile in a blocked layout (``(i_0 * 128 + t) // 8`` is ``i_0 * 16 + [0, 16)``); None otherwise."""
    if not isinstance(term, E.FloorDiv) or not isinstance(term.b, IntImm) or term.b.value <= 0:
        return None
    c = term.b.value
    inner = index_interval(term.a, doms, outer)
    if inner is None or not (inner[1] - inner[0]).is_constant():
        return None
    lo, hi = inner
    if any(coeff % c for _, coeff in lo.terms.values()):
        return None
    outer_part = LinearForm({k: (t, coeff // c) for k, (t, coeff) in lo.terms.items()}, 0, lo.dtype)
    return (outer_part + LinearForm.constant(lo.const // c, lo.dtype),
            outer_part + LinearForm.constant(hi.const // c, lo.dtype))


def _div_mod_bounds(term, doms: dict) -> tuple[int, int] | None:
    """Constant inclusive bounds of ``x // c`` or ``x % c`` (a positive constant ``c``) over the loops in ``doms``
    (a cooperative fetch's fused thread index, e.g. ``tx // 16``); None otherwise."""
    if not isinstance(term, (E.FloorDiv, E.FloorMod)) or not isinstance(term.b, IntImm) or term.b.value <= 0:
        return None
    c = term.b.value
    inner = index_interval(term.a, doms)
    known = inner is not None and inner[0].is_constant() and inner[1].is_constant()
    if isinstance(term, E.FloorMod):
        if known and inner[0].const // c == inner[1].const // c:
            return inner[0].const % c, inner[1].const % c
        return 0, c - 1
    return (inner[0].const // c, inner[1].const // c) if known else None


class _RegionCollector(StmtExprVisitor):
    """Per axis bounds of every access to the buffers allocated by blocks, in one walk of the function.

    A buffer's accesses are relaxed over the loops inside its allocation block only (the loops
    around that block stay symbolic): the stack of loops is cut at the depth where the block
    registered the buffer. A ``shared`` buffer is one per thread block, so the loops bound to
    ``threadIdx`` around its allocation are relaxed too (TVM's rule for thread-visible storage).
    """

    def __init__(self):
        self.buffers: dict[int, Buffer] = {}
        self.depth: dict[int, int] = {}
        self.outer: dict[int, dict] = {}  # per buffer: the loops around its allocation, id -> (min, extent)
        self.stack: list[tuple[int, tuple]] = []
        self.thread_loops: list[bool] = []  # per stack entry: bound to threadIdx
        self.shared: set[int] = set()
        self.bounds: dict[int, list] = {}
        self.failed: dict[int, set] = {}
        self.blocks: list[tuple[S.Block, list[int]]] = []   # allocation blocks and their buffers, in order

    def _access(self, buffer: Buffer, intervals: list) -> None:
        key = id(buffer.data)
        merged = self.bounds[key]
        if len(intervals) != len(merged):
            self.failed[key].update(range(len(merged)))
            return
        for axis, interval in enumerate(intervals):
            if interval is None:
                self.failed[key].add(axis)
                continue
            if merged[axis] is None:
                merged[axis] = interval
                continue
            (lo_a, hi_a), (lo_b, hi_b) = merged[axis], interval
            dlo, dhi = lo_b - lo_a, hi_b - hi_a
            if not dlo.is_constant() or not dhi.is_constant():
                self.failed[key].add(axis)
                continue
            merged[axis] = (lo_b if dlo.const < 0 else lo_a, hi_b if dhi.const > 0 else hi_a)

    def _doms(self, key: int) -> dict:
        depth = self.depth[key]
        doms = dict(self.stack[depth:])
        if key in self.shared:
            doms.update(entry for entry, bound in zip(self.stack[:depth], self.thread_loops) if bound)
        return doms

    def _point(self, buffer, indices):
        key = id(buffer.data)
        if key in self.buffers:  # bounds only of the buffers being compacted: the rest cost time
            doms, outer = self._doms(key), self.outer[key]
            self._access(buffer, [index_interval(i, doms, outer) for i in indices])

    def visit_buffer_load_(self, op):
        self._point(op.buffer, op.indices)
        super().visit_buffer_load_(op)

    def visit_buffer_store_(self, op):
        self._point(op.buffer, op.indices)
        super().visit_buffer_store_(op)

    def _region(self, region: S.BufferRegion):
        key = id(region.buffer.data)
        if key not in self.buffers:
            return
        doms, outer = self._doms(key), self.outer[key]
        intervals = []
        for r in region.region:
            lo = index_interval(r.min, doms, outer)
            if lo is not None and isinstance(r.extent, IntImm) and r.extent.dtype == r.min.dtype \
                    and not isinstance(r.min, (IntImm, E.Ramp)):
                # min + (extent - 1) has min's linear form plus a constant: shift the upper bound
                intervals.append((lo[0], lo[1] + LinearForm.constant(r.extent.value - 1, lo[1].dtype)))
                continue
            last = index_interval(E.add(r.min, E.sub(r.extent, 1)), doms, outer)
            intervals.append(None if lo is None or last is None else (lo[0], last[1]))
        self._access(region.buffer, intervals)

    def visit_for_(self, op):
        self.stack.append((id(op.loop_var), (op.min, op.extent)))
        self.thread_loops.append(op.thread_tag.startswith("threadIdx"))
        super().visit_for_(op)
        self.stack.pop()
        self.thread_loops.pop()

    def visit_block_(self, op):
        for r in list(op.reads) + list(op.writes):
            self._region(r)
        for m in op.match_buffers:
            self._region(m.source)
        mine = [b for b in op.alloc_buffers if not b.strides and b.shape]
        if mine:
            for buf in mine:
                key = id(buf.data)
                self.buffers[key], self.depth[key] = buf, len(self.stack)
                self.outer[key] = dict(self.stack)  # the loops around the allocation: fixed below it
                self.bounds[key], self.failed[key] = [None] * buf.ndim, set()
                if buf.scope().startswith("shared"):
                    self.shared.add(key)
            self.blocks.append((op, [id(b.data) for b in mine]))
        super().visit_block_(op)


class _Rewriter(StmtExprMutator):
    """Points accesses at the compacted buffers, with each axis shifted by its new origin."""

    def __init__(self, new: dict[int, tuple[Buffer, Buffer, list]]):
        self.new = new

    def _shift(self, buffer, indices):
        old, buf, origin = self.new[id(buffer.data)]
        return buf, tuple(E.sub(i, o) if dl_lanes(i) == 1 else _shift_ramp(i, o) for i, o in zip(indices, origin))

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        if id(op.buffer.data) in self.new and op.buffer is self.new[id(op.buffer.data)][0]:
            buf, indices = self._shift(op.buffer, op.indices)
            return E.BufferLoad(buf, indices, op.predicate)
        return op

    def visit_buffer_store_(self, op):
        op = super().visit_buffer_store_(op)
        if id(op.buffer.data) in self.new and op.buffer is self.new[id(op.buffer.data)][0]:
            buf, indices = self._shift(op.buffer, op.indices)
            return S.BufferStore(buf, op.value, indices, op.predicate)
        return op

    def visit_buffer_region(self, region):
        region = super().visit_buffer_region(region)
        entry = self.new.get(id(region.buffer.data))
        if entry is None or region.buffer is not entry[0]:
            return region
        _, buf, origin = entry
        return S.BufferRegion(buf, [Range.from_min_extent(E.sub(r.min, o), r.extent) for r, o in zip(region.region, origin)])

    def visit_block_(self, op):
        new = super().visit_block_(op)
        allocs = tuple(self.new[id(b.data)][1] if id(b.data) in self.new and b is self.new[id(b.data)][0] else b
                       for b in new.alloc_buffers)
        if any(a is not b for a, b in zip(allocs, new.alloc_buffers)):
            new = new.replace(alloc_buffers=allocs)
        return new


def dl_lanes(e) -> int:
    """The vector lanes of ``e``'s dtype.

    Parameters
    ----------
    e : PrimExpr
        The expression.

    Returns
    -------
    int
        The lanes.
    """
    from ..ir import dtype as dt

    return dt.lanes_of(e.dtype)


def _shift_ramp(index, origin):
    if isinstance(index, E.Ramp):
        return E.Ramp(E.sub(index.base, origin), index.stride, index.lanes)
    return E.sub(index, E.Broadcast(origin, dl_lanes(index)))


def _plan(collector: _RegionCollector) -> dict[int, tuple[Buffer, Buffer, list]]:
    """buffer data id -> (old buffer, compacted buffer, origin per axis), for buffers that shrink."""
    plan = {}
    for _block, keys in collector.blocks:
        for key in keys:
            buf = collector.buffers[key]
            shape, origin, changed = [], [], False
            for axis, (extent, bound) in enumerate(zip(buf.shape, collector.bounds[key])):
                if bound is None or axis in collector.failed[key]:
                    shape.append(extent)
                    origin.append(make_const(extent.dtype, 0))
                    continue
                size = bound[1] - bound[0]
                if not size.is_constant() or (isinstance(extent, IntImm) and size.const + 1 >= extent.value):
                    shape.append(extent)
                    origin.append(make_const(extent.dtype, 0))
                    continue
                shape.append(make_const(extent.dtype, size.const + 1))
                origin.append(bound[0].to_expr(extent.dtype) if not bound[0].is_constant()
                              else make_const(extent.dtype, bound[0].const))
                changed = True
            if changed:
                plan[key] = (buf, buf.replace(shape=tuple(shape)), origin)
    return plan


def compact_buffer_allocation(func):
    """``func`` with intermediate buffers shrunk to the region they touch (the PrimFunc-level form of ``CompactBufferAllocation``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    collector = _RegionCollector()
    collector.visit(func.body)
    plan = _plan(collector)
    if not plan:
        return func
    return func.with_body(_Rewriter(plan).visit(func.body))


def CompactBufferAllocation():  # noqa: N802 - TVM's pass name
    """Shrink intermediate buffers to the region touched under their allocation block.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(compact_buffer_allocation, "tir.CompactBufferAllocation")
