"""Region predicates of the well-formedness checker (``verify.py``): whether a block's loads and
stores lie in its declared read/write regions, decided syntactically where cheap and with the
analyzer otherwise, and the texts that name regions in error messages."""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import post_order_visit
from .expr_forms import _attains_bounds, _show


_SIMPLE_STMTS = (S.BufferStore, S.SeqStmt, S.IfThenElse, S.Evaluate)


def _point_accesses_covered(block: S.Block) -> bool:
    """True when the block body is straight-line code (no loops, lets, nested blocks or matched
    buffers) whose every load and store is, index by index, a point its declared regions hold
    syntactically. A fast path: False means "run the full check", not "an error"."""
    if block.match_buffers:
        return False
    loads: list = []
    stores: list = []
    stack = [block.body] + ([block.init] if block.init is not None else [])
    while stack:
        stmt = stack.pop()
        if type(stmt) not in _SIMPLE_STMTS:
            return False
        if type(stmt) is S.BufferStore:
            stores.append(stmt)
            if not _collect_loads(stmt.value, loads) or not all(_collect_loads(i, loads) for i in stmt.indices):
                return False
        elif type(stmt) is S.SeqStmt:
            stack.extend(stmt.seq)
        elif type(stmt) is S.IfThenElse:
            if not _collect_loads(stmt.condition, loads):
                return False
            stack.append(stmt.then_case)
            if stmt.else_case is not None:
                stack.append(stmt.else_case)
        elif not _collect_loads(stmt.value, loads):
            return False
    local = {id(b) for b in block.alloc_buffers}
    written = {id(st.buffer) for st in stores}
    for access, declared in [(st, block.writes) for st in stores] + [(ld, block.reads) for ld in loads]:
        buffer = access.buffer
        if id(buffer) in local or (declared is block.reads and id(buffer) in written):
            continue  # local buffers are not declared; reads of written buffers are not listed
        if not any(d.buffer is buffer and _holds_point(d, access.indices) for d in declared):
            return False
    return True


def _collect_loads(expr, out: list) -> bool:
    """Append the BufferLoads in ``expr`` to ``out``; False when ``expr`` has constructs the fast
    path leaves to the full check (lets, vector indices)."""
    t = type(expr)
    if t is E.BufferLoad:
        out.append(expr)
        return all(type(i) is not E.Ramp and _collect_loads(i, out) for i in expr.indices)
    if t is E.Let:
        return False
    if not isinstance(expr, E.PrimExpr):
        return True
    for field in t._fields:
        value = getattr(expr, field)
        if isinstance(value, E.PrimExpr):
            if not _collect_loads(value, out):
                return False
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, E.PrimExpr) and not _collect_loads(item, out):
                    return False
    return True


def _holds_point(region: S.BufferRegion, indices) -> bool:
    if len(region.region) != len(indices):
        return False
    for r, index in zip(region.region, indices):
        if type(r.extent) is not E.IntImm:
            return False
        if type(r.min) is E.IntImm and type(index) is E.IntImm:
            if not r.min.value <= index.value < r.min.value + r.extent.value:
                return False
        elif not _same_expr(r.min, index):
            return False
    return True


def _const_range(entry) -> tuple[int, int] | None:
    """The inclusive constant bounds of a ``(var, Range)`` domain entry, or None."""
    if entry is None:
        return None
    dom = entry[1]
    if type(dom.min) is E.IntImm and type(dom.extent) is E.IntImm:
        return dom.min.value, dom.min.value + dom.extent.value - 1
    return None


def _single_loop_var(value):
    """The variable of a binding that is one variable, or one variable plus/minus a constant."""
    if isinstance(value, E.Var):
        return value
    if isinstance(value, (E.Add, E.Sub)):
        if isinstance(value.a, E.Var) and isinstance(value.b, E.IntImm):
            return value.a
        if isinstance(value, E.Add) and isinstance(value.b, E.Var) and isinstance(value.a, E.IntImm):
            return value.b
    return None


def _region_text(region: S.BufferRegion) -> str:
    parts = []
    for r in region.region:
        if isinstance(r.extent, E.IntImm) and r.extent.value == 1:
            parts.append(_show(r.min))
        else:
            parts.append(f"{_show(r.min)}:{_show(r.min + r.extent)}")
    return f"{region.buffer.name}[{', '.join(parts)}]"


def _same_or_inside(outer: S.BufferRegion, inner: S.BufferRegion) -> bool:
    """A cheap syntactic cover: per dimension the same start (or a constant start inside a
    constant range) and an extent no larger."""
    if len(outer.region) != len(inner.region):
        return False
    for o, i in zip(outer.region, inner.region):
        o_min, i_min, o_ext, i_ext = o.min, i.min, o.extent, i.extent
        if type(o_ext) is not E.IntImm or type(i_ext) is not E.IntImm:
            if not (_same_expr(o_min, i_min) and _same_expr(o_ext, i_ext)):
                return False
            continue
        if type(o_min) is E.IntImm and type(i_min) is E.IntImm:
            if not (o_min.value <= i_min.value and i_min.value + i_ext.value <= o_min.value + o_ext.value):
                return False
        elif not (i_ext.value <= o_ext.value and _same_expr(o_min, i_min)):
            return False
    return True


def _same_expr(a, b) -> bool:
    """Structural equality of index expressions where a variable matches only itself."""
    if a is b:
        return True
    if type(a) is not type(b) or isinstance(a, E.Var):
        return False
    if isinstance(a, E.IntImm):
        return a.value == b.value and a.dtype == b.dtype
    if isinstance(a, E.PrimExpr):
        if a.dtype != b.dtype:
            return False
        return all(_same_expr(getattr(a, f), getattr(b, f)) for f in type(a)._fields)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_expr(x, y) for x, y in zip(a, b))
    return a == b


def _cover_verdict(ana, outer: S.BufferRegion, inner: S.BufferRegion):
    """True when ``outer`` provably covers ``inner``, False when ``inner`` provably leaves it (in
    every instance, or by constant bounds that are attained), None when undecided."""
    if len(outer.region) != len(inner.region):
        return False
    covered = True
    for o, i in zip(outer.region, inner.region):
        o_lo, i_lo = E.match_types(o.min, i.min)
        o_hi, i_hi = E.match_types(o.min + o.extent, i.min + i.extent)
        below_ok, above_ok = ana.can_prove(E.LE(o_lo, i_lo)), ana.can_prove(E.LE(i_hi, o_hi))
        if below_ok and above_ok:
            continue
        covered = False
        if ana.can_prove(E.LT(i_lo, o_lo)) or ana.can_prove(E.LT(o_hi, i_hi)):
            return False
        # Constant hulls over the iterators: the declared region never leaves its hull, and the
        # access attains its bounds when it is a sum of distinct variables times constants.
        if _attains_bounds(i.min) and isinstance(i.extent, E.IntImm):
            access = ana.const_int_bound(i.min)
            hull_lo, hull_hi = ana.const_int_bound(o.min), ana.const_int_bound(o.min + o.extent)
            finite = all(not (b.min_value <= b.NEG_INF or b.max_value >= b.POS_INF) for b in (access, hull_lo, hull_hi))
            if finite and (access.min_value < hull_lo.min_value
                           or access.max_value + i.extent.value > hull_hi.max_value):
                return False
    return True if covered else None


def _has_dependent_extent(value, domains) -> bool:
    """Whether a variable of ``value`` runs over a domain that is not constant (``T.min(31, 126 - i * 32)``)."""
    found = []
    post_order_visit(value, lambda n: found.append(n) if isinstance(n, E.Var) else None)
    return any(id(v) in domains and _const_range(domains[id(v)]) is None for v in found)
