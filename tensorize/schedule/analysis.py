"""Analysis helpers the schedule primitives share: substituting loop variables in a loop nest,
iterator kinds of blocks, index simplification, and read/write region detection.

For example::

    new_body = substitute_in_nest(loop.body, {loop.loop_var: i0 * 4 + i1})
"""
from __future__ import annotations

from typing import Iterable, Mapping

from ..ir import expr as E
from ..ir.buffer import Buffer
from ..ir.functor import StmtExprMutator, StmtExprVisitor, collect_vars, post_order_visit
from ..ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, SeqStmt, Stmt

DATA_PAR = E.IterVar.DataPar
COMM_REDUCE = E.IterVar.CommReduce


# -- substitution ---------------------------------------------------------------------------------
class _NestSubstituter(StmtExprMutator):
    """Substitutes loop variables in a loop nest: in loop bounds, non-block statements and the
    bindings/predicates of block realizes, but not inside blocks (a block sees outer loop variables
    only through its bindings)."""

    _methods: dict = {}

    def __init__(self, table: dict[int, E.PrimExpr]):
        self.table = table

    def visit_var_(self, op):
        new = self.table.get(id(op))
        return op if new is None else new

    visit_size_var_ = visit_var_

    def visit_block_realize_(self, op):
        values = self._exprs(op.iter_values)
        pred = self.visit_expr(op.predicate)
        if values is op.iter_values and pred is op.predicate:
            return op
        return BlockRealize(values, simplify(pred), op.block)


def substitute_in_nest(stmt: Stmt, vmap: Mapping[E.Var, E.PrimExpr]) -> Stmt:
    """``stmt`` with loop variables replaced per ``vmap`` (see ``_NestSubstituter``); bindings are simplified."""
    if not vmap:
        return stmt
    table = {id(k): E.convert(v) for k, v in vmap.items()}
    out = _NestSubstituter(table).visit(stmt)
    return _simplify_bindings(out)


def substitute_expr(expr: E.PrimExpr, vmap: Mapping[E.Var, E.PrimExpr]) -> E.PrimExpr:
    table = {id(k): E.convert(v) for k, v in vmap.items()}
    return _NestSubstituter(table).visit(expr)


def _simplify_bindings(stmt: Stmt) -> Stmt:
    """Simplify the binding expressions of block realizes in a nest (not inside blocks)."""
    if isinstance(stmt, BlockRealize):
        values = tuple(simplify(v) for v in stmt.iter_values)
        if all(a is b for a, b in zip(values, stmt.iter_values)):
            return stmt
        return stmt.replace(iter_values=values)
    if isinstance(stmt, SeqStmt):
        seq = [_simplify_bindings(s) for s in stmt.seq]
        return stmt if all(a is b for a, b in zip(seq, stmt.seq)) else SeqStmt(seq)
    body = getattr(stmt, "body", None)
    if isinstance(stmt, Block) or not isinstance(body, Stmt):
        return stmt
    changes = {}
    for name in ("body", "then_case", "else_case"):
        child = getattr(stmt, name, None)
        if isinstance(child, Stmt):
            new = _simplify_bindings(child)
            if new is not child:
                changes[name] = new
    return stmt.replace(**changes) if changes else stmt


# -- simplification -------------------------------------------------------------------------------
_analyzer = None


def simplify(expr: E.PrimExpr) -> E.PrimExpr:
    """Simplify an index expression with ``tensorize.arith`` (constant folding only while the
    analyzer is not installed)."""
    global _analyzer
    if isinstance(expr, (E.IntImm, E.Var, E.FloatImm)):
        return expr
    if _analyzer is None:
        try:
            from ..arith import Analyzer  # the analyzer lands independently of the schedule
        except ImportError:
            _analyzer = False
        else:
            _analyzer = Analyzer()
    if _analyzer:
        return _analyzer.simplify(expr)
    return expr


def const_value(expr) -> int | None:
    """The value of an integer constant expression, or None."""
    if isinstance(expr, int):
        return expr
    if isinstance(expr, E.IntImm):
        return expr.value
    return None


def conjoin(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """``a and b`` with ``True`` operands dropped."""
    return E.logical_and(a, b)


# -- variables and iterators ----------------------------------------------------------------------
def var_ids(node) -> set[int]:
    """Ids of the variables ``node`` uses."""
    return {id(v) for v in collect_vars(node)}


def uses_any(node, ids: set[int]) -> bool:
    if not ids:
        return False
    found = []

    def f(n):
        if not found and isinstance(n, E.Var) and id(n) in ids:
            found.append(n)

    post_order_visit(node, f)
    return bool(found)


def iter_kind_name(iter_type: int) -> str:
    return {DATA_PAR: "spatial", COMM_REDUCE: "reduction", E.IterVar.Ordered: "scan",
            E.IterVar.Opaque: "opaque"}.get(iter_type, f"kind {iter_type}")


def is_reduction_block(block: Block) -> bool:
    return block.init is not None or any(iv.iter_type == COMM_REDUCE for iv in block.iter_vars)


def block_realizes_under(stmt: Stmt) -> list[BlockRealize]:
    """Block realizes in ``stmt`` not nested inside another block, in program order."""
    out: list[BlockRealize] = []

    def walk(s):
        if isinstance(s, BlockRealize):
            out.append(s)
        elif isinstance(s, SeqStmt):
            for c in s.seq:
                walk(c)
        elif not isinstance(s, Block):
            for name in ("body", "then_case", "else_case"):
                child = getattr(s, name, None)
                if isinstance(child, Stmt):
                    walk(child)

    walk(stmt)
    return out


def loops_under(stmt: Stmt) -> list[For]:
    """Loops in ``stmt`` not nested inside a block."""
    out: list[For] = []

    def walk(s):
        if isinstance(s, For):
            out.append(s)
        if isinstance(s, SeqStmt):
            for c in s.seq:
                walk(c)
        elif not isinstance(s, (Block, BlockRealize)):
            for name in ("body", "then_case", "else_case"):
                child = getattr(s, name, None)
                if isinstance(child, Stmt):
                    walk(child)

    walk(stmt)
    return out


# -- regions --------------------------------------------------------------------------------------
def _linear(expr) -> tuple[dict[int, tuple[E.Var, int]], int] | None:
    """``expr`` as ``{var: coeff}`` plus a constant, or None when it is not affine in variables."""
    if isinstance(expr, E.IntImm):
        return {}, expr.value
    if isinstance(expr, E.Var):
        return {id(expr): (expr, 1)}, 0
    if isinstance(expr, (E.Add, E.Sub)):
        a, b = _linear(expr.a), _linear(expr.b)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(expr, E.Add) else -1
        terms = dict(a[0])
        for k, (v, c) in b[0].items():
            old = terms.get(k, (v, 0))[1]
            terms[k] = (v, old + sign * c)
        return {k: vc for k, vc in terms.items() if vc[1] != 0}, a[1] + sign * b[1]
    if isinstance(expr, E.Mul):
        a, b = _linear(expr.a), _linear(expr.b)
        if a is None or b is None:
            return None
        if not a[0]:
            a, b = b, a
        if b[0]:
            return None
        return {k: (v, c * b[1]) for k, (v, c) in a[0].items()}, a[1] * b[1]
    return None


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
    from ..ir.structural import structural_equal

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
    _methods: dict = {}

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
        from ..ir.functor import substitute

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
    Buffers the block allocates itself are left out. A buffer both read and written stays in both."""
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


def single_buffer_store(block: Block) -> BufferStore | None:
    """The block body when it is exactly one BufferStore."""
    return block.body if isinstance(block.body, BufferStore) else None
