"""Symbolic integer intervals (``tvm.arith.IntervalSet``) and their evaluation over loop domains.

>>> from tensorize.ir.expr import Var, Range
>>> from tensorize.arith import Analyzer
>>> i, j = Var("i"), Var("j")
>>> s = Analyzer().int_set(i * 4 + j, {i: Range(0, 8), j: Range(0, 4)})
>>> int(s.min_value), int(s.max_value)
(0, 31)
"""
from __future__ import annotations

from ..ir import expr as E
from .bound import INF, dtype_range

# Set by ``analyzer.py`` (which sits above this module): makes the analyzer ``to_range`` uses when none is given.
_new_analyzer = None

POS_INF = E.Var("pos_inf", "int64")
NEG_INF = E.Var("neg_inf", "int64")


class IntervalSet:
    """``[min_value, max_value]`` (both inclusive, symbolic); ``pos_inf``/``neg_inf`` mark open ends."""

    __slots__ = ("min_value", "max_value")

    def __init__(self, min_value, max_value):
        self.min_value, self.max_value = E.convert(min_value), E.convert(max_value)

    @staticmethod
    def single_point(value) -> "IntervalSet":
        """The interval ``[value, value]``.

        Parameters
        ----------
        value : PrimExpr or int
            The point.

        Returns
        -------
        IntervalSet
            The interval.
        """
        return IntervalSet(value, value)

    @staticmethod
    def everything() -> "IntervalSet":
        """The unbounded interval.

        Returns
        -------
        IntervalSet
            The interval.
        """
        return IntervalSet(NEG_INF, POS_INF)

    def is_everything(self) -> bool:
        """Whether both ends are open.

        Returns
        -------
        bool
            The answer.
        """
        return self.min_value is NEG_INF and self.max_value is POS_INF

    def has_lower_bound(self) -> bool:
        """Whether the lower end is finite.

        Returns
        -------
        bool
            The answer.
        """
        return self.min_value is not NEG_INF

    def has_upper_bound(self) -> bool:
        """Whether the upper end is finite.

        Returns
        -------
        bool
            The answer.
        """
        return self.max_value is not POS_INF

    def is_single_point(self) -> bool:
        """Whether both ends are the same expression.

        Returns
        -------
        bool
            The answer.
        """
        from .linear import expr_key

        return expr_key(self.min_value) == expr_key(self.max_value)

    def to_range(self, analyzer=None) -> E.Range:
        """The ``Range`` ``[min, max + 1)``; raises when an end is open.

        Parameters
        ----------
        analyzer : Analyzer, optional
            Knows the variables' bounds (a fresh one when None).

        Returns
        -------
        Range
            The range.
        """
        if not (self.has_lower_bound() and self.has_upper_bound()):
            raise ValueError("cannot make a Range from an unbounded interval; bound the loop variables first")
        ana = analyzer if analyzer is not None else _new_analyzer()
        return E.Range.from_min_extent(self.min_value, ana.simplify(self.max_value - self.min_value + 1))

    def __repr__(self):
        return f"IntervalSet[{self.min_value!r}, {self.max_value!r}]"


def _point_min(x, y, ana, take_min: bool):
    """min/max of two interval ends; open ends win."""
    if take_min and (x is NEG_INF or y is NEG_INF):
        return NEG_INF
    if not take_min and (x is POS_INF or y is POS_INF):
        return POS_INF
    if x is POS_INF or x is NEG_INF:
        return y
    if y is POS_INF or y is NEG_INF:
        return x
    return ana.simplify(E.min_value_expr(x, y) if take_min else E.max_value_expr(x, y))


def union(sets, analyzer) -> IntervalSet:
    """The smallest interval containing all ``sets``.

    Parameters
    ----------
    sets : list of IntervalSet
        The intervals.
    analyzer : Analyzer
        Simplifies the ends.

    Returns
    -------
    IntervalSet
        The union hull.
    """
    sets = list(sets)
    lo, hi = sets[0].min_value, sets[0].max_value
    for s in sets[1:]:
        lo = _point_min(lo, s.min_value, analyzer, True)
        hi = _point_min(hi, s.max_value, analyzer, False)
    return IntervalSet(lo, hi)


def intersect(a: IntervalSet, b: IntervalSet, analyzer) -> IntervalSet:
    """The intersection of two intervals.

    Parameters
    ----------
    a : IntervalSet
        One interval.
    b : IntervalSet
        Another.
    analyzer : Analyzer
        Simplifies the ends.

    Returns
    -------
    IntervalSet
        The intersection.
    """
    lo = b.min_value if a.min_value is NEG_INF else a.min_value if b.min_value is NEG_INF else analyzer.simplify(E.max_value_expr(a.min_value, b.min_value))
    hi = b.max_value if a.max_value is POS_INF else a.max_value if b.max_value is POS_INF else analyzer.simplify(E.min_value_expr(a.max_value, b.max_value))
    return IntervalSet(lo, hi)


def eval_int_set(expr, dom_map, analyzer) -> IntervalSet:
    """The interval of ``expr`` when each variable of ``dom_map`` ranges over its Range/IntervalSet.

    Parameters
    ----------
    expr : PrimExpr
        The expression.
    dom_map : dict
        Var to Range or IntervalSet.
    analyzer : Analyzer
        Knows the variables' bounds.

    Returns
    -------
    IntervalSet
        The interval.
    """
    doms = {}
    for var, dom in dom_map.items():
        if isinstance(dom, E.Range):
            doms[var] = IntervalSet(dom.min, analyzer.simplify(dom.min + dom.extent - 1))
        elif isinstance(dom, IntervalSet):
            doms[var] = dom
        else:
            raise TypeError(f"domain of {var.name} must be a Range or IntervalSet, got {type(dom).__name__}")
    expr = analyzer.simplify(expr)
    return _Evaluator(doms, analyzer).eval(expr)


class _Evaluator:
    def __init__(self, doms, analyzer):
        self.doms, self.ana = doms, analyzer

    def uses_dom(self, e) -> bool:
        from ..ir.functor import collect_vars

        return any(v in self.doms for v in collect_vars(e))

    def eval(self, e) -> IntervalSet:  # noqa: C901 - one dispatch table
        t = type(e)
        if isinstance(e, E.Var):
            return self.doms.get(e) or IntervalSet.single_point(e)
        if t is E.IntImm or not self.uses_dom(e):
            return IntervalSet.single_point(e)
        simp = self.ana.simplify
        if t is E.Add or t is E.Sub:
            a, b = self.eval(e.a), self.eval(e.b)
            if t is E.Sub:
                b = IntervalSet(_neg(b.max_value), _neg(b.min_value))
            return IntervalSet(_add(a.min_value, b.min_value, simp), _add(a.max_value, b.max_value, simp))
        if t is E.Mul:
            a, b = self.eval(e.a), self.eval(e.b)
            const = _const_of(b) if _const_of(b) is not None else _const_of(a)
            other = a if _const_of(b) is not None else b
            if const is not None:
                return _scale(other, const, simp)
            # A product with a factor that does not vary over the domain (``i * n``): scale the other
            # side's ends when the factor's sign is known.
            for point, other in ((b, a), (a, b)):
                if point.is_single_point() and other.has_lower_bound() and other.has_upper_bound():
                    sign = self.ana.const_int_bound(point.min_value)
                    if sign.min_value >= 0 or sign.max_value <= 0:
                        lo = simp(E.mul(other.min_value, point.min_value))
                        hi = simp(E.mul(other.max_value, point.min_value))
                        return IntervalSet(lo, hi) if sign.min_value >= 0 else IntervalSet(hi, lo)
            return self.fallback(e)
        if t in (E.FloorDiv, E.Div) and isinstance(e.b, E.IntImm) and e.b.value > 0:
            a = self.eval(e.a)
            if t is E.Div and self.ana.const_int_bound(e.a).min_value < 0:
                return self.fallback(e)
            c = e.b.value
            return IntervalSet(a.min_value if a.min_value is NEG_INF else simp(E.floordiv(a.min_value, c)),
                               a.max_value if a.max_value is POS_INF else simp(E.floordiv(a.max_value, c)))
        if t in (E.FloorMod, E.Mod) and isinstance(e.b, E.IntImm) and e.b.value > 0:
            c = e.b.value
            a = self.eval(e.a)
            if t is E.Mod and self.ana.const_int_bound(e.a).min_value < 0:
                return self.fallback(e)
            if a.has_lower_bound() and a.has_upper_bound():
                same_block = simp(E.floordiv(a.max_value, c) - E.floordiv(a.min_value, c))
                if isinstance(same_block, E.IntImm) and same_block.value == 0:
                    return IntervalSet(simp(E.floormod(a.min_value, c)), simp(E.floormod(a.max_value, c)))
            return IntervalSet(E.make_const(e.dtype, 0), E.make_const(e.dtype, c - 1))
        if t is E.Min or t is E.Max:
            a, b = self.eval(e.a), self.eval(e.b)
            take_min = t is E.Min
            return IntervalSet(_monotone(a.min_value, b.min_value, take_min, self.ana),
                               _monotone(a.max_value, b.max_value, take_min, self.ana))
        if t is E.Select:
            return union([self.eval(e.true_value), self.eval(e.false_value)], self.ana)
        return self.fallback(e)

    def fallback(self, e) -> IntervalSet:
        """Constant bounds of ``e`` with the domain variables at their constant extremes."""
        ana = type(self.ana)()
        ana._var_bounds = dict(self.ana._var_bounds)
        for var, dom in self.doms.items():
            lo = self.ana.const_int_bound(dom.min_value).min_value if dom.has_lower_bound() else -INF
            hi = self.ana.const_int_bound(dom.max_value).max_value if dom.has_upper_bound() else INF
            ana._var_bounds[var] = (lo, hi)
        b = ana.const_int_bound(e)
        lo_limit, hi_limit = dtype_range(e.dtype)
        # A bound the dtype cannot hold (the product of two large ranges) counts as unbounded.
        lo = NEG_INF if b.min_value <= max(b.NEG_INF, lo_limit - 1) else E.make_const(e.dtype, b.min_value)
        hi = POS_INF if b.max_value >= min(b.POS_INF, hi_limit + 1) else E.make_const(e.dtype, b.max_value)
        return IntervalSet(lo, hi)


def _const_of(s: IntervalSet):
    if isinstance(s.min_value, E.IntImm) and s.is_single_point():
        return s.min_value.value
    return None


def _neg(x):
    if x is POS_INF:
        return NEG_INF
    if x is NEG_INF:
        return POS_INF
    return E.sub(E.make_const(x.dtype, 0), x)


def _add(x, y, simp):
    for inf in (POS_INF, NEG_INF):
        if x is inf or y is inf:
            return inf
    return simp(E.add(x, y))


def _scale(s: IntervalSet, k: int, simp) -> IntervalSet:
    def mul(x):
        if x is POS_INF or x is NEG_INF:
            return x if k > 0 else _neg(x)
        return simp(E.mul(x, k))

    if k == 0:
        return IntervalSet.single_point(0)
    lo, hi = mul(s.min_value), mul(s.max_value)
    return IntervalSet(lo, hi) if k > 0 else IntervalSet(hi, lo)


def _monotone(x, y, take_min, ana):
    if x in (POS_INF, NEG_INF) or y in (POS_INF, NEG_INF):
        if take_min:
            return NEG_INF if NEG_INF in (x, y) else (y if x is POS_INF else x)
        return POS_INF if POS_INF in (x, y) else (y if x is NEG_INF else x)
    return ana.simplify(E.min_value_expr(x, y) if take_min else E.max_value_expr(x, y))
