"""``tvm.arith.Analyzer``: simplification, bounds and proofs over integer index expressions.

>>> from tensorize.ir.expr import Var, Range
>>> a = Analyzer()
>>> i, j = Var("i"), Var("j")
>>> a.bind(j, Range(0, 4))
>>> a.simplify((i * 4 + j) // 4)
i
>>> a.const_int_bound(i * 0 + j * 2)
ConstIntBound(min_value=0, max_value=6)
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from ..ir import expr as E
from .bound import INF, BoundComputer, ConstIntBound, dtype_range, internal
from . import int_set as _int_set
from .int_set import eval_int_set
from .linear import Lin
from .simplify import Simplifier, is_index_dtype


class Analyzer:
    """Holds what is known about variables (bounds, bindings, assumed conditions) and answers
    questions about expressions under that knowledge.

    State changes (``bind``, ``update``, ``constraint_scope``) drop the internal caches, so answers
    always reflect the current knowledge.
    """

    def __init__(self):
        self._var_bounds: dict = {}   # Var -> (lo, hi)
        self._var_subst: dict = {}    # Var -> expression it stands for
        self._facts: list[Lin] = []   # known facts f <= 0
        self._bounds = BoundComputer(self._var_bound)
        self._simplifier = Simplifier(self)

    # -- knowledge ---------------------------------------------------------------------------
    def bind(self, var: E.Var, value, allow_override: bool = False) -> None:
        """Know that ``var`` lies in ``value`` (a ``Range``) or equals ``value`` (an expression).

        Parameters
        ----------
        var : Var
            The variable.
        value : Range or PrimExpr
            Its range, or the expression it stands for (substituted during simplification).
        allow_override : bool
            Replace what is known about ``var`` instead of intersecting with it.

        Examples
        --------
        >>> a = Analyzer(); i = E.Var("i")
        >>> a.bind(i, E.Range(0, 8))
        >>> a.can_prove(i < 8)
        True
        """
        if isinstance(value, E.Range):
            lo, ext = value.min, value.extent
            if type(lo) is E.IntImm and type(ext) is E.IntImm:
                # The common case (a loop over a constant range): no simplification needed.
                self._set_bound(var, (lo.value, lo.value + ext.value - 1), allow_override)
                return
            self._changed()
            lo = self._bound_of(self.simplify(value.min))
            ext = self._bound_of(self.simplify(value.extent))
            new = (lo[0], lo[1] + ext[1] - 1)
            self._set_bound(var, new, allow_override)
            if not (isinstance(value.min, E.IntImm) and isinstance(value.extent, E.IntImm)):
                # Symbolic range: remember min <= var < min + extent as linear facts.
                self._add_fact(E.LE(value.min, var))
                self._add_fact(E.LT(var, E.add(value.min, value.extent)))
            return
        self._changed()
        value = E.convert(value)
        if isinstance(value, E.PrimExpr):
            self._var_subst[var] = self.simplify(value)
            self._changed()
            self._set_bound(var, self._bound_of(self._var_subst[var]), True)
            return
        raise TypeError(f"bind expects a Range or an expression for {var}, got {type(value).__name__}")

    def update(self, var: E.Var, info, override: bool = False) -> None:
        """Set the constant bound of ``var`` from a ``ConstIntBound`` (intersected with what is known
        unless ``override``).

        Parameters
        ----------
        var : Var
            The variable.
        info : ConstIntBound
            Its bound.
        override : bool
            Replace instead of intersect.
        """
        if not isinstance(info, ConstIntBound):
            raise TypeError(f"update expects a ConstIntBound, got {type(info).__name__}; use bind for ranges")
        self._changed()
        self._set_bound(var, (internal(info.min_value), internal(info.max_value)), override)

    @contextlib.contextmanager
    def constraint_scope(self, constraint) -> Iterator[None]:
        """Assume ``constraint`` (e.g. ``i < 100``, ``tir.all(...)``) inside the ``with`` block.

        Parameters
        ----------
        constraint : PrimExpr
            A boolean fact.

        Yields
        ------
        None
            Inside the ``with`` block the fact holds.

        Examples
        --------
        >>> a = Analyzer(); i = E.Var("i")
        >>> with a.constraint_scope(i < 100):
        ...     a.can_prove(i < 128)
        True
        """
        saved = (dict(self._var_bounds), dict(self._var_subst), list(self._facts))
        self._changed()
        self._add_fact(E.convert(constraint))
        try:
            yield
        finally:
            self._var_bounds, self._var_subst, self._facts = saved
            self._changed()

    # -- questions ---------------------------------------------------------------------------
    def simplify(self, expr, steps: int = 2):
        """The simplest equivalent expression this analyzer can prove.

        Parameters
        ----------
        expr : PrimExpr
            The expression.
        steps : int
            Accepted for TVM compatibility; the simplifier runs to a fixed point.

        Returns
        -------
        PrimExpr
            The canonical linear form for integer indices; decided conditions become ``True``/``False``.

        Examples
        --------
        >>> i = E.Var("i")
        >>> Analyzer().simplify(i * 4 + i - i * 5 + 2)
        2
        """
        return self._simplifier.simplify(expr)

    def rewrite_simplify(self, expr):
        """``simplify(expr)`` (TVM's rewrite simplifier; one simplifier here).

        Parameters
        ----------
        expr : PrimExpr
            The expression.

        Returns
        -------
        PrimExpr
            The simplified expression.
        """
        return self._simplifier.simplify(expr)

    def canonical_simplify(self, expr):
        """``simplify(expr)`` (TVM's canonical simplifier; one simplifier here).

        Parameters
        ----------
        expr : PrimExpr
            The expression.

        Returns
        -------
        PrimExpr
            The simplified expression.
        """
        return self._simplifier.simplify(expr)

    def can_prove(self, cond, strength=None) -> bool:
        """Whether ``cond`` holds for every value the variables may take.

        Parameters
        ----------
        cond : PrimExpr
            A boolean expression.
        strength
            Accepted for TVM compatibility.

        Returns
        -------
        bool
            True only when proved; False means "not proved", not "false".

        Examples
        --------
        >>> i = E.Var("i")
        >>> Analyzer().can_prove(i * 2 - i == i)
        True
        """
        cond = self.simplify(cond)
        return isinstance(cond, E.IntImm) and bool(cond.value)

    def can_prove_equal(self, lhs, rhs) -> bool:
        """Whether ``lhs == rhs`` provably holds.

        Parameters
        ----------
        lhs : PrimExpr
            One side.
        rhs : PrimExpr
            The other side.

        Returns
        -------
        bool
            True when proven; False when false or unknown.

        Examples
        --------
        >>> ana = tvm.arith.Analyzer()
        >>> i = tvm.tir.Var("i", "int32")
        >>> ana.can_prove_equal((i * 4 + 3) // 4, i)
        True
        """
        lhs, rhs = E.match_types(lhs, rhs)
        if is_index_dtype(lhs.dtype):
            d = self._simplifier.linear(E.sub(lhs, rhs))
            return d.is_const() and d.const == 0
        return self.can_prove(E.EQ(lhs, rhs))

    def const_int_bound(self, expr) -> ConstIntBound:
        """The constant interval containing every value of ``expr``.

        Parameters
        ----------
        expr : PrimExpr
            An integer expression.

        Returns
        -------
        ConstIntBound
            ``min_value`` and ``max_value`` (``ConstIntBound.NEG_INF``/``POS_INF`` when unbounded).

        Examples
        --------
        >>> a = Analyzer(); i = E.Var("i")
        >>> a.bind(i, E.Range(0, 4))
        >>> a.const_int_bound(i * 3 + 1)
        ConstIntBound(min_value=1, max_value=10)
        """
        expr = E.convert(expr)
        direct = self._bound_of(expr)
        if is_index_dtype(expr.dtype):
            # The canonical form cancels repeated variables (x - x), often giving a tighter bound.
            via_linear = self._simplifier.lin_bound(self._simplifier.linear(expr))
            direct = (max(direct[0], via_linear[0]), min(direct[1], via_linear[1]))
        return ConstIntBound(*direct)

    def int_set(self, expr, dom_map=None):
        """The symbolic interval of ``expr`` when variables range over ``dom_map``.

        Parameters
        ----------
        expr : PrimExpr
            An integer expression.
        dom_map : dict of Var to Range or IntervalSet, optional
            The domains of the variables that vary.

        Returns
        -------
        IntervalSet
            ``[min_value, max_value]`` (inclusive, symbolic in the variables that do not vary).

        Examples
        --------
        >>> i, n = E.Var("i"), E.Var("n")
        >>> s = Analyzer().int_set(n + i, {i: E.Range(0, 4)})
        >>> str(s.min_value), str(s.max_value)
        ('n', 'n + 3')
        """
        return eval_int_set(expr, dom_map or {}, self)

    # -- internals ---------------------------------------------------------------------------
    def _changed(self) -> None:
        if self._bounds.cache:
            self._bounds.cache.clear()
        if self._simplifier.lin_cache or self._simplifier.expr_cache:
            self._simplifier.clear()

    def _var_bound(self, var) -> tuple[int, int]:
        known = self._var_bounds.get(var)
        if known is not None:
            return known
        lo, hi = dtype_range(var.dtype)
        if isinstance(var, E.SizeVar):
            lo = max(lo, 0)
        return lo, hi

    def _bound_of(self, expr) -> tuple[int, int]:
        return self._bounds.bound(expr)

    def _set_bound(self, var, new, override: bool) -> None:
        if not override and var in self._var_bounds:
            old = self._var_bounds[var]
            new = (max(old[0], new[0]), min(old[1], new[1]))
        self._var_bounds[var] = new
        self._changed()

    def _add_fact(self, cond) -> None:
        """Record ``cond`` (a comparison, a conjunction, or a bool) as known."""
        t = type(cond)
        if t is E.And:
            self._add_fact(cond.a)
            self._add_fact(cond.b)
            return
        if t is E.Not and type(cond.a) in (E.LT, E.LE, E.GT, E.GE):
            inverse = {E.LT: E.GE, E.LE: E.GT, E.GT: E.LE, E.GE: E.LT}[type(cond.a)]
            self._add_fact(inverse(cond.a.a, cond.a.b))
            return
        if t not in (E.LT, E.LE, E.GT, E.GE, E.EQ) or not is_index_dtype(cond.a.dtype):
            return  # facts the linear reasoning cannot use are ignored (never assumed wrongly)
        g = self._simplifier.linear(E.sub(cond.a, cond.b))  # a - b
        if t is E.LT:
            facts = [g.add_const(1)]
        elif t is E.LE:
            facts = [g]
        elif t is E.GT:
            facts = [g.scale(-1).add_const(1)]
        elif t is E.GE:
            facts = [g.scale(-1)]
        else:
            facts = [g, g.scale(-1)]
        for f in facts:
            self._facts.append(f)
            self._tighten_from_fact(f)
        self._changed()

    def _tighten_from_fact(self, f: Lin) -> None:
        """From ``sum(k * atom) + c <= 0`` derive a constant bound for each variable term."""
        for key, (atom, k) in f.terms.items():
            if not isinstance(atom, E.Var):
                continue
            rest = Lin({kk: v for kk, v in f.terms.items() if kk != key}, f.const, f.dtype)
            rest_lo = self._simplifier.lin_bound(rest)[0]
            if rest_lo <= -INF:
                continue
            lo, hi = self._var_bound(atom)
            if k > 0:   # k * x <= -rest
                hi = min(hi, (-rest_lo) // k)
            else:       # |k| * x >= rest
                lo = max(lo, -((-rest_lo) // -k))
            self._var_bounds[atom] = (lo, hi)
            self._changed()


_int_set._new_analyzer = Analyzer
