"""Which buffer regions a block reads and writes, found from its body.

``infer_block_access(block)`` is what the TVMScript parser uses when ``T.reads``/``T.writes``
are absent (and what ``te`` and the schedule use when they build or rebuild blocks):

* every access in the body (and ``init``) is a region over the block's iterators; loops
  *inside* the block are relaxed to the whole range they cover;
* a nested block contributes its own declared regions, with its iterators replaced by their
  bindings and relaxed over the loops between the two blocks;
* accesses through a ``match_buffer`` count as accesses of the matched source region;
* buffers the block allocates (or declares inside) are local and not listed;
* writes are the stored regions; reads are the loaded regions of buffers the block does not
  also write (TVM prints ``Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]`` with
  ``T.reads(A[vi, vk], B[vk, vj])`` and ``T.writes(Y[vi, vj])``).

Regions of one buffer are merged into their bounding box (axis by axis); an axis whose
bounds are not comparable becomes the whole axis.

>>> from tensorize.ir.buffer import decl_buffer
>>> from tensorize.ir.expr import IterVar, Range, Var
>>> from tensorize.ir.stmt import Block, BufferStore
>>> A, B = decl_buffer((8,), name="A"), decl_buffer((8,), name="B")
>>> vi = Var("vi")
>>> blk = Block([IterVar(Range(0, 8), vi, IterVar.DataPar)], [], [], "B", BufferStore(B, A[vi] + 1.0, [vi]))
>>> reads, writes = infer_block_access(blk)
>>> reads[0].buffer is A, writes[0].buffer is B
(True, True)
"""
from __future__ import annotations

from typing import Sequence

from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.expr import FloorDiv, FloorMod, IntImm, PrimExpr, Ramp, Range, Var, convert, make_const
from ..ir.functor import StmtExprVisitor, substitute, uses_var
from .linear import LinearForm, difference, to_linear


class _Interval:
    """Inclusive bounds ``[lo, hi]`` of an index as linear forms; ``exact`` when no loop was relaxed."""

    __slots__ = ("lo", "hi", "exact", "expr")

    def __init__(self, lo: LinearForm, hi: LinearForm, exact: bool, expr: PrimExpr | None = None):
        self.lo, self.hi, self.exact, self.expr = lo, hi, exact, expr


def _bound(expr: PrimExpr, doms: dict) -> tuple[LinearForm, LinearForm] | None:
    """Bounds of ``expr`` when the variables in ``doms`` (id -> (min, extent)) range over their domains."""
    if not uses_var(expr, lambda v: id(v) in doms):
        form = to_linear(expr)
        return form, form
    if isinstance(expr, Var):
        lo_expr, extent = doms[id(expr)]
        lo = to_linear(lo_expr)
        return lo, lo + to_linear(extent) - LinearForm.constant(1)
    kind = type(expr).__name__
    if kind in ("Add", "Sub"):
        a, b = _bound(expr.a, doms), _bound(expr.b, doms)
        if a is None or b is None:
            return None
        if kind == "Add":
            return a[0] + b[0], a[1] + b[1]
        return a[0] - b[1], a[1] - b[0]
    if kind == "Mul":
        factor, other = (expr.b, expr.a) if isinstance(expr.b, IntImm) else (expr.a, expr.b)
        if not isinstance(factor, IntImm):
            return None
        inner = _bound(other, doms)
        if inner is None:
            return None
        c = factor.value
        return (inner[0].scaled(c), inner[1].scaled(c)) if c >= 0 else (inner[1].scaled(c), inner[0].scaled(c))
    if isinstance(expr, (FloorDiv, FloorMod)) and isinstance(expr.b, IntImm) and expr.b.value > 0:
        inner = _bound(expr.a, doms)
        if inner is None:
            return None
        c = expr.b.value
        lo, hi = inner
        if isinstance(expr, FloorDiv):
            if lo.divisible_by(c) and hi.divisible_by(c):
                return lo.floordiv(c), hi.floordiv(c)
            return LinearForm.term(FloorDiv(lo.to_expr(expr.dtype), expr.b)), LinearForm.term(FloorDiv(hi.to_expr(expr.dtype), expr.b))
        if lo.is_constant() and hi.is_constant() and lo.const // c == hi.const // c:
            return LinearForm.constant(lo.const % c), LinearForm.constant(hi.const % c)
        span = difference(hi.to_expr(), lo.to_expr())
        if span is not None and lo.divisible_by(c) and span < c and 0 <= lo.const % c and lo.const % c + span < c:
            base = lo.const % c
            return LinearForm.constant(base), LinearForm.constant(base + span)
        return LinearForm.constant(0), LinearForm.constant(c - 1)
    return None


def _index_interval(index: PrimExpr, doms: dict) -> _Interval | None:
    if isinstance(index, Ramp):
        base = _bound(index.base, doms)
        if base is None or not isinstance(index.stride, IntImm):
            return None
        span = index.stride.value * (index.lanes - 1)
        lo, hi = (base[0], base[1] + LinearForm.constant(span)) if span >= 0 else (base[0] + LinearForm.constant(span), base[1])
        return _Interval(lo, hi, False)
    if not uses_var(index, lambda v: id(v) in doms):
        form = to_linear(index)
        return _Interval(form, form, True, index)
    bounds = _bound(index, doms)
    if bounds is None:
        return None
    return _Interval(bounds[0], bounds[1], False)


class _Access:
    """The merged region of one buffer: one interval per axis (None: the whole axis)."""

    def __init__(self, buffer: Buffer, intervals: list):
        self.buffer = buffer
        self.intervals = intervals

    def merge(self, intervals: list) -> None:
        for axis, (mine, other) in enumerate(zip(self.intervals, intervals)):
            if mine is None:
                continue
            if other is None:
                self.intervals[axis] = None
                continue
            if mine.exact and other.exact and _same(mine.expr, other.expr):
                continue
            d_lo = difference(other.lo.to_expr(), mine.lo.to_expr())
            d_hi = difference(other.hi.to_expr(), mine.hi.to_expr())
            if d_lo is None or d_hi is None:
                self.intervals[axis] = None
                continue
            self.intervals[axis] = _Interval(mine.lo if d_lo >= 0 else other.lo, mine.hi if d_hi <= 0 else other.hi, False)

    def region(self) -> S.BufferRegion:
        ranges = []
        for axis, iv in enumerate(self.intervals):
            extent_dim = self.buffer.shape[axis]
            dtype = extent_dim.dtype
            if iv is None:
                ranges.append(Range.from_min_extent(make_const(dtype, 0), extent_dim))
            elif iv.exact:
                ranges.append(Range.from_min_extent(iv.expr, make_const(iv.expr.dtype, 1)))
            else:
                lo = iv.lo.to_expr(dtype)
                extent = (iv.hi - iv.lo + LinearForm.constant(1)).to_expr(dtype)
                ranges.append(Range.from_min_extent(lo, extent))
        return S.BufferRegion(self.buffer, ranges)


def _same(a, b) -> bool:
    return a is b or difference(a, b) == 0


class _AccessCollector(StmtExprVisitor):
    def __init__(self, block: S.Block):
        self.doms: dict[int, tuple] = {}
        self.lets: dict[int, PrimExpr] = {}
        self.local: set[int] = {id(b) for b in block.alloc_buffers}
        self.matched: dict[int, S.BufferRegion] = {id(m.buffer): m.source for m in block.match_buffers}
        self.reads: dict[int, _Access] = {}
        self.writes: dict[int, _Access] = {}

    # -- recording -------------------------------------------------------------------------
    def _record(self, table: dict, buffer: Buffer, intervals: list) -> None:
        if id(buffer) in self.local:
            return
        if id(buffer) in self.matched:
            source = self.matched[id(buffer)]
            self._record_region(table, source.buffer, source.region)
            return
        entry = table.get(id(buffer))
        if entry is None:
            table[id(buffer)] = _Access(buffer, intervals)
        else:
            entry.merge(intervals)

    def _record_indices(self, table: dict, buffer: Buffer, indices: Sequence[PrimExpr]) -> None:
        if self.lets:
            indices = [substitute(i, lambda v: self.lets.get(id(v))) for i in indices]
        self._record(table, buffer, [_index_interval(i, self.doms) for i in indices])

    def _record_region(self, table: dict, buffer: Buffer, region: Sequence[Range]) -> None:
        intervals = []
        for r in region:
            if isinstance(r.extent, IntImm) and r.extent.value == 1:
                intervals.append(_index_interval(r.min, self.doms))
                continue
            lo = _bound(r.min, self.doms)
            hi = _bound(r.min + r.extent - 1, self.doms)
            intervals.append(None if lo is None or hi is None else _Interval(lo[0], hi[1], False))
        self._record(table, buffer, intervals)

    # -- visiting ----------------------------------------------------------------------------
    def visit_buffer_load_(self, op):
        super().visit_buffer_load_(op)
        self._record_indices(self.reads, op.buffer, op.indices)

    def visit_buffer_store_(self, op):
        self.visit_expr(op.value)
        for i in op.indices:
            self.visit_expr(i)
        self._record_indices(self.writes, op.buffer, op.indices)

    def visit_for_(self, op):
        self.visit_expr(op.min)
        self.visit_expr(op.extent)
        self.doms[id(op.loop_var)] = (op.min, op.extent)
        self.visit_stmt(op.body)
        del self.doms[id(op.loop_var)]

    def visit_let_stmt_(self, op):
        self.visit_expr(op.value)
        self.lets[id(op.var)] = op.value
        self.visit_stmt(op.body)
        del self.lets[id(op.var)]

    def visit_decl_buffer_(self, op):
        self.local.add(id(op.buffer))
        self.visit_stmt(op.body)

    def visit_block_realize_(self, op):
        for v in op.iter_values:
            self.visit_expr(v)
        self.visit_expr(op.predicate)
        inner = op.block
        binding, own_domain = {}, []
        for iv, value in zip(inner.iter_vars, op.iter_values):
            value = convert(value)
            if self._leaves_domain(value, iv.dom):
                own_domain.append(id(iv.var))  # relax the iterator over its domain instead
            else:
                binding[id(iv.var)] = value
        lookup = lambda v: binding.get(id(v))  # noqa: E731
        for iv in inner.iter_vars:
            if id(iv.var) in own_domain:
                self.doms[id(iv.var)] = (iv.dom.min, iv.dom.extent)
        for table, regions in ((self.reads, inner.reads), (self.writes, inner.writes)):
            for region in regions:
                self._record_region(table, region.buffer, [substitute(r, lookup) for r in region.region])
        for var_id in own_domain:
            del self.doms[var_id]

    def _leaves_domain(self, value: PrimExpr, dom: Range) -> bool:
        """True when the loops let ``value`` range beyond ``dom`` (a split that does not divide, cut
        back by a ``T.where`` predicate): the iterator itself, never outside its domain, is tighter."""
        if not (isinstance(dom.min, IntImm) and isinstance(dom.extent, IntImm)):
            return False
        bounds = _bound(value, self.doms)
        if bounds is None or not (bounds[0].is_constant() and bounds[1].is_constant()):
            return False
        return bounds[0].const < dom.min.value or bounds[1].const > dom.min.value + dom.extent.value - 1


def infer_block_access(block: S.Block, exclude_written: bool | None = None
                       ) -> tuple[list[S.BufferRegion], list[S.BufferRegion]]:
    """The ``(reads, writes)`` regions of ``block`` found from its body and ``init``.

    Parameters
    ----------
    block : Block
        The block.
    exclude_written : bool, optional
        Leave the buffers the block writes out of its reads. By default as TVM's parser: only for a
        block with ``T.init`` (a reduction's accumulator is not listed as read).

    Returns
    -------
    tuple of (list of BufferRegion, list of BufferRegion)
        The reads and the writes.
    """
    collector = _AccessCollector(block)
    if block.init is not None:
        collector.visit_stmt(block.init)
    collector.visit_stmt(block.body)
    writes = [access.region() for access in collector.writes.values()]
    # As TVM: a block with T.init (a reduction) does not list its accumulator among its reads; a
    # block without one lists every buffer it reads, written or not.
    if exclude_written is None:
        exclude_written = block.init is not None
    excluded = collector.writes if exclude_written else {}
    reads = [access.region() for key, access in collector.reads.items() if key not in excluded]
    return reads, writes
