"""Relaxing index expressions and buffer regions over the loops of a nest: the symbolic bounds of
an expression when some loop variables range over their loops (``relax_expr``/``relax_region``),
hulls of regions, and the region a block touches under a set of loops. The schedule primitives
(``compute_at``, caching, layout, blockize) use these; ``region.py`` relaxes over interval sets.

>>> from tensorize.ir.expr import Var, Range
>>> i, j = Var("i"), Var("j")
>>> lo, hi = relax_expr(i * 16 + j, {id(j): (j, Range(0, 16))}, make_analyzer({}))
>>> (str(lo), str(hi))
('i * 16', 'i * 16 + 15')
"""
from __future__ import annotations

from typing import Iterable, Mapping

from ..ir import expr as E
from ..ir.functor import collect_vars, substitute
from ..ir.op import max as op_max
from ..ir.op import min as op_min
from ..ir.stmt import BlockRealize, BufferRegion, For
from .analyzer import Analyzer

Dom = Mapping[int, tuple[E.Var, E.Range]]


# -- analyzers and simplification ----------------------------------------------------------------
def make_analyzer(ranges: Mapping | Iterable[For]) -> Analyzer:
    """An analyzer knowing the ranges of loop variables (``{Var: Range}`` or For statements).

    Parameters
    ----------
    ranges : dict of Var to Range, or list of For
        The loop ranges.

    Returns
    -------
    Analyzer
        The analyzer.
    """
    ana = Analyzer()
    if isinstance(ranges, Mapping):
        for var, rng in ranges.items():
            ana.bind(var, rng)
    else:
        for loop in ranges:
            ana.bind(loop.loop_var, E.Range.from_min_extent(loop.min, loop.extent))
    return ana


def loop_dom(loops: Iterable[For]) -> dict[int, tuple[E.Var, E.Range]]:
    """The relaxation domain of ``loops``: ``{id(var): (var, Range)}``.

    Parameters
    ----------
    loops : list of For
        The loops.

    Returns
    -------
    dict
        The domain.
    """
    return {id(f.loop_var): (f.loop_var, E.Range.from_min_extent(f.min, f.extent)) for f in loops}


# -- relaxation -----------------------------------------------------------------------------------
def _uses(expr, dom: Dom) -> bool:
    return any(id(v) in dom for v in collect_vars(expr))


def _relax(e, dom: Dom, ana: Analyzer):
    """Inclusive symbolic bounds ``(lo, hi)`` of ``e`` when the variables in ``dom`` range over their
    ranges; None when the expression is outside what this interval arithmetic handles."""
    if isinstance(e, (E.IntImm, E.FloatImm)):
        return e, e
    if isinstance(e, E.Var):
        hit = dom.get(id(e))
        if hit is None:
            return e, e
        rng = hit[1]
        return rng.min, E.sub(E.add(rng.min, rng.extent), 1)
    if not _uses(e, dom):
        return e, e
    t = type(e)
    if t in (E.Add, E.Sub):
        a, b = _relax(e.a, dom, ana), _relax(e.b, dom, ana)
        if a is None or b is None:
            return None
        if t is E.Add:
            return E.add(a[0], b[0]), E.add(a[1], b[1])
        return E.sub(a[0], b[1]), E.sub(a[1], b[0])
    if t is E.Mul:
        const, other = (e.b, e.a) if isinstance(e.b, E.IntImm) else (e.a, e.b) if isinstance(e.a, E.IntImm) else (None, None)
        if const is None:
            return None
        r = _relax(other, dom, ana)
        if r is None:
            return None
        lo, hi = E.mul(r[0], const), E.mul(r[1], const)
        return (lo, hi) if const.value >= 0 else (hi, lo)
    if t is E.FloorDiv and isinstance(e.b, E.IntImm) and e.b.value > 0:
        r = _relax(e.a, dom, ana)
        if r is None:
            return None
        return E.floordiv(r[0], e.b), E.floordiv(r[1], e.b)
    if t is E.FloorMod and isinstance(e.b, E.IntImm) and e.b.value > 0:
        r = _relax(e.a, dom, ana)
        if r is not None and ana.can_prove_equal(E.floordiv(r[0], e.b), E.floordiv(r[1], e.b)):
            return E.floormod(r[0], e.b), E.floormod(r[1], e.b)
        return E.make_const(e.dtype, 0), E.make_const(e.dtype, e.b.value - 1)
    if t in (E.Min, E.Max):
        a, b = _relax(e.a, dom, ana), _relax(e.b, dom, ana)
        if a is None or b is None:
            return None
        f = op_min if t is E.Min else op_max
        return f(a[0], b[0]), f(a[1], b[1])
    return None


def relax_expr(expr, dom: Dom, ana: Analyzer):
    """Simplified inclusive bounds ``(lo, hi)`` of ``expr`` over ``dom`` (None if not analysable).

    Parameters
    ----------
    expr : PrimExpr
        The expression.
    dom : dict
        ``{id(var): (var, Range)}`` from ``loop_dom``.
    ana : Analyzer
        Knows the variables' bounds.

    Returns
    -------
    tuple of (PrimExpr, PrimExpr) or None
        The bounds.
    """
    r = _relax(E.convert(expr), dom, ana)
    if r is None:
        return None
    return ana.simplify(r[0]), ana.simplify(r[1])


def relax_range(rng: E.Range, dom: Dom, ana: Analyzer) -> E.Range | None:
    """The range covered by ``rng`` (whose min may use the variables of ``dom``) over ``dom``.

    Parameters
    ----------
    rng : Range
        The range.
    dom : dict
        ``{id(var): (var, Range)}`` from ``loop_dom``.
    ana : Analyzer
        Knows the variables' bounds.

    Returns
    -------
    Range or None
        The covered range.
    """
    # The last element is min + extent - 1, whose upper bound is hi(min) + hi(extent) - 1: relax the
    # min once instead of relaxing it again inside that sum.
    r_min = _relax(E.convert(rng.min), dom, ana)
    if r_min is None:
        return None
    r_ext = _relax(E.convert(rng.extent), dom, ana)
    if r_ext is None:
        return None
    lo = ana.simplify(r_min[0])
    return E.Range.from_min_extent(lo, ana.simplify(E.sub(E.add(r_min[1], r_ext[1]), lo)))


def relax_region(region: BufferRegion, dom: Dom, ana: Analyzer) -> list[E.Range]:
    """The ranges ``region`` covers over ``dom``; an axis that cannot be analysed becomes the full axis.

    Parameters
    ----------
    region : BufferRegion
        The region.
    dom : dict
        ``{id(var): (var, Range)}`` from ``loop_dom``.
    ana : Analyzer
        Knows the variables' bounds.

    Returns
    -------
    list of Range
        One range per axis.
    """
    out = []
    for axis, rng in enumerate(region.region):
        r = relax_range(rng, dom, ana) if dom else E.Range.from_min_extent(ana.simplify(rng.min), ana.simplify(rng.extent))
        out.append(r if r is not None else E.Range.from_min_extent(0, region.buffer.shape[axis]))
    return out


def hull(a: list[E.Range], b: list[E.Range], ana: Analyzer) -> list[E.Range]:
    """The smallest region containing both ``a`` and ``b`` (axis by axis).

    Parameters
    ----------
    a : list of Range
        A region.
    b : list of Range
        Another.
    ana : Analyzer
        Knows the variables' bounds.

    Returns
    -------
    list of Range
        The hull.
    """
    out = []
    for ra, rb in zip(a, b):
        ha = E.add(ra.min, ra.extent)
        hb = E.add(rb.min, rb.extent)
        lo = _pick(ra.min, rb.min, ana, op_min, lambda x, y: E.LE(x, y))
        hi = _pick(ha, hb, ana, op_max, lambda x, y: E.GE(x, y))
        out.append(E.Range.from_min_extent(lo, ana.simplify(E.sub(hi, lo))))
    return out


def _pick(x, y, ana, combine, better):
    if ana.can_prove(better(x, y)):
        return x
    if ana.can_prove(better(y, x)):
        return y
    return ana.simplify(combine(x, y))


def block_region_in_loops(realize: BlockRealize, region: BufferRegion, dom: Dom, ana: Analyzer) -> list[E.Range]:
    """A block's access ``region`` seen from outside the block: iterators replaced by their bindings,
    then relaxed over the loops in ``dom``.

    Parameters
    ----------
    realize : BlockRealize
        The block.
    region : BufferRegion
        One of its regions.
    dom : dict
        ``{id(var): (var, Range)}`` from ``loop_dom``.
    ana : Analyzer
        Knows the variables' bounds.

    Returns
    -------
    list of Range
        One range per axis.
    """
    vmap = {iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    bound = substitute(region, vmap)
    return relax_region(bound, dom, ana)
