"""The read/write regions of a block as the schedule primitives recompute them after a rewrite
(``detect_block_regions``): one region per buffer covering all accesses, inner loops relaxed over
their constant ranges, nested blocks seen through their declared regions and bindings.

Unlike ``block_access.infer_block_access`` (what the parser fills in for ``T.reads``/``T.writes``),
a buffer both read and written stays in the reads, and buffers the block allocates are left out.

>>> from tensorize import te
>>> A = te.placeholder((8,), name="A")
>>> B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
>>> block = te.create_prim_func([A, B]).body.block.body.body.block
>>> reads, writes = detect_block_regions(block)
>>> [r.buffer.name for r in reads], [w.buffer.name for w in writes]
(['A'], ['B'])
"""
from __future__ import annotations

from typing import Iterable, Mapping

from ..ir import expr as E
from ..ir.buffer import Buffer
from ..ir.functor import StmtExprVisitor, substitute, uses_any
from ..ir.stmt import Block, BufferRegion
from ..ir.structural import structural_equal
from .analyzer import Analyzer
from .linear import to_linear

_ANALYZER = Analyzer()


def simplify(expr: E.PrimExpr) -> E.PrimExpr:
    """``expr`` simplified by a shared analyzer that knows nothing about variables.

    Parameters
    ----------
    expr : PrimExpr
        The expression.

    Returns
    -------
    PrimExpr
        The simplified expression.
    """
    if isinstance(expr, (E.IntImm, E.Var, E.FloatImm)):
        return expr
    return _ANALYZER.simplify(expr)


def const_value(expr) -> int | None:
    """The value of an integer constant expression, or None.

    Parameters
    ----------
    expr : PrimExpr
        The expression.

    Returns
    -------
    int or None
        The value.
    """
    if isinstance(expr, int):
        return expr
    if isinstance(expr, E.IntImm):
        return expr.value
    return None


def _linear(expr) -> tuple[dict[int, tuple[E.Var, int]], int] | None:
    """``expr`` as ``{var: coeff}`` plus a constant, or None when it is not affine in variables."""
    form = to_linear(expr)
    terms = {}
    for term, coeff in form.terms.values():
        if not isinstance(term, E.Var):
            return None
        terms[id(term)] = (term, coeff)
    return terms, form.const


def _relax_index(index: E.PrimExpr, dom: Mapping[int, tuple[int, int]]) -> tuple[E.PrimExpr, E.PrimExpr] | None:
    """(min, extent) of ``index`` as the variables in ``dom`` (id -> (min, extent)) range over their
    domains; None when that is not computable exactly."""
    if not uses_any(index, set(dom)):
        return index, E.make_const(index.dtype, 1)
    lin = _linear(index)
    if lin is None:
        return None
    terms, const = lin
    base: E.PrimExpr = E.make_const(index.dtype, const)
    span = 0
    for key, (var, coeff) in terms.items():
        if key in dom:
            lo, ext = dom[key]
            base = E.add(base, coeff * lo if coeff > 0 else coeff * (lo + ext - 1))
            span += abs(coeff) * (ext - 1)
        else:
            base = E.add(base, E.mul(var, coeff) if coeff != 1 else var)
    return base, E.make_const(index.dtype, span + 1)


def _union(ranges: list[tuple[E.PrimExpr, E.PrimExpr]], full: E.PrimExpr) -> E.Range:
    """The smallest range covering ``ranges`` when they differ by constants; the whole axis otherwise."""
    if len(ranges) == 1:
        return E.Range.from_min_extent(*ranges[0])
    first = ranges[0][0]
    lo, hi = None, None
    for mn, ext in ranges:
        diff = E.sub(mn, first)
        d = const_value(simplify(diff)) if not structural_equal(mn, first) else 0
        if d is None or const_value(ext) is None:
            return E.Range.from_min_extent(0, full)
        lo = d if lo is None else min(lo, d)
        hi = d + ext.value if hi is None else max(hi, d + ext.value)
    return E.Range.from_min_extent(simplify(E.add(first, lo)), E.make_const(first.dtype, hi - lo))


class _AccessCollector(StmtExprVisitor):
    def __init__(self):
        self.dom: dict[int, tuple[int, int]] = {}
        self.reads: dict[int, tuple[Buffer, list]] = {}
        self.writes: dict[int, tuple[Buffer, list]] = {}
        self.unknown_dom: set[int] = set()

    def _record(self, table, buffer, indices):
        relaxed = []
        for axis, index in enumerate(indices):
            r = None if uses_any(index, self.unknown_dom) else _relax_index(index, self.dom)
            relaxed.append(r if r is not None else (E.make_const(index.dtype, 0), buffer.shape[axis]))
        table.setdefault(id(buffer), (buffer, []))[1].append(relaxed)

    def visit_buffer_load_(self, op):
        self._record(self.reads, op.buffer, op.indices)
        super().visit_buffer_load_(op)

    def visit_buffer_store_(self, op):
        self._record(self.writes, op.buffer, op.indices)
        super().visit_buffer_store_(op)

    def visit_for_(self, op):
        lo, ext = const_value(op.min), const_value(op.extent)
        if lo is None or ext is None:
            self.unknown_dom.add(id(op.loop_var))
        else:
            self.dom[id(op.loop_var)] = (lo, ext)
        super().visit_for_(op)

    def visit_block_realize_(self, op):
        # A nested block accesses what its declared regions say, seen through its bindings.
        mapping = {iv.var: v for iv, v in zip(op.block.iter_vars, op.iter_values)}
        for region in op.block.reads:
            self._record_region(self.reads, substitute(region, mapping))
        for region in op.block.writes:
            self._record_region(self.writes, substitute(region, mapping))

    def _record_region(self, table, region: BufferRegion):
        relaxed = []
        for axis, r in enumerate(region.region):
            lo = None if uses_any(r.min, self.unknown_dom) else _relax_index(r.min, self.dom)
            ext = const_value(r.extent)
            if lo is None or ext is None:
                relaxed.append((E.make_const(r.min.dtype, 0), region.buffer.shape[axis]))
            else:
                relaxed.append((lo[0], E.make_const(r.min.dtype, int(lo[1]) + ext - 1)))
        table.setdefault(id(region.buffer), (region.buffer, []))[1].append(relaxed)


def detect_block_regions(block: Block, alloc_buffers: Iterable[Buffer] = ()) -> tuple[list[BufferRegion], list[BufferRegion]]:
    """The (reads, writes) regions of ``block``'s body (and init), as the parser would fill them:
    one region per buffer, covering all accesses; inner loops are relaxed over their ranges.
    Buffers the block allocates itself are left out. A buffer both read and written stays in both.

    Parameters
    ----------
    block : Block
        The block.
    alloc_buffers : list of Buffer
        Buffers allocated in the block (left out).

    Returns
    -------
    tuple of (list of BufferRegion, list of BufferRegion)
        The reads and the writes.
    """
    collector = _AccessCollector()
    if block.init is not None:
        collector.visit(block.init)
    collector.visit(block.body)
    local = {id(b) for b in block.alloc_buffers} | {id(b) for b in alloc_buffers}

    def regions(table):
        out = []
        for key, (buffer, accesses) in table.items():
            if key in local:
                continue
            axes = []
            for axis in range(len(buffer.shape)):
                axes.append(_union([acc[axis] for acc in accesses], buffer.shape[axis]))
            out.append(BufferRegion(buffer, axes))
        return out

    reads = regions(collector.reads)
    writes = regions(collector.writes)
    # A reduction reads what it updates; TVM lists that read only when the update reads it.
    return reads, writes
