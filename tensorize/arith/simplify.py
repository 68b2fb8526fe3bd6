"""The simplifier behind ``Analyzer.simplify``: integer expressions go to a linear canonical form
(``Lin``) with ``floordiv``/``floormod`` by constants normalised using known bounds; conditions are
decided by bounds and by the facts of the enclosing ``constraint_scope``.

Every rule is an identity over the integers (or holds under the analyzer's known bounds), so
simplification never changes a value; it only rewrites what it can prove.
"""
from __future__ import annotations

from functools import lru_cache

from ..ir import expr as E
from .bound import INF, mul_bounds
from .linear import (Lin, affine_lin, canonical_affine,  # noqa: F401 - canonical_affine importable from here
                     expr_key, fact_multipliers, reduce_coefficients)

_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)
_NEGATE = {E.LT: E.GE, E.LE: E.GT, E.GT: E.LE, E.GE: E.LT, E.EQ: E.NE, E.NE: E.EQ}


@lru_cache(maxsize=None)
def is_index_dtype(dtype: str) -> bool:
    """Scalar signed integers of 32 or 64 bits: the dtypes simplified through linear forms.

    Their arithmetic is assumed not to overflow (as in TVM; the LLVM code marks it ``nsw``), so
    bounds and comparisons may reason over mathematical integers. Narrower and unsigned integers
    wrap (``int8(100) + 100 == -56``), where that reasoning is wrong; they are simplified node by node.

    Parameters
    ----------
    dtype : str
        The dtype.

    Returns
    -------
    bool
        True for int32 and int64.
    """
    return dtype in ("int32", "int64")


_CACHE_LIMIT = 1 << 15  # per-analyzer caches are dropped when they grow past this


class Simplifier:
    """Stateless rules; all knowledge (bounds, bindings, facts) comes from ``analyzer``."""

    __slots__ = ("an", "lin_cache", "expr_cache")

    def __init__(self, analyzer):
        self.an = analyzer
        self.lin_cache: dict[int, tuple] = {}
        self.expr_cache: dict[int, tuple] = {}

    def clear(self) -> None:
        """Forget the memoised results (after the known facts changed)."""
        self.lin_cache.clear()
        self.expr_cache.clear()

    # -- entry points ----------------------------------------------------------------------
    def simplify(self, e):
        """``e`` simplified under the known bounds and facts (memoised).

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        PrimExpr
            The simplified expression.
        """
        e = E.convert(e)
        hit = self.expr_cache.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        if not isinstance(e, E.PrimExpr):
            return e
        if is_index_dtype(e.dtype):
            result = canonical_affine(e) if not self.an._var_subst else None
            if result is not None:
                return result
            result = self.linear(e).to_expr()
        elif e.dtype == "bool":
            result = self.simplify_bool(e)
        else:
            result = self.simplify_children(e)
        if len(self.expr_cache) >= _CACHE_LIMIT:
            self.expr_cache.clear()
        self.expr_cache[id(e)] = (e, result)
        return result

    def linear(self, e) -> Lin:
        """The linear form of ``e`` (non-linear parts simplified and kept as atoms).

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        Lin
            The form.
        """
        hit = self.lin_cache.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        if not self.an._var_subst:
            result = affine_lin(e)
            if result is not None:
                return result
        result = self._merge_div_mod(self._linear(e))
        if len(self.lin_cache) >= _CACHE_LIMIT:
            self.lin_cache.clear()
        self.lin_cache[id(e)] = (e, result)
        return result

    # -- bounds and proofs on linear forms ---------------------------------------------------
    def lin_bound(self, lin: Lin) -> tuple[int, int]:
        """Constant bounds of a linear form from the bounds of its atoms.

        Parameters
        ----------
        lin : Lin
            The linear form.

        Returns
        -------
        tuple of (int, int)
            The result's bounds.
        """
        lo = hi = lin.const
        for atom, k in lin.terms.values():
            a = self.an._bound_of(atom)
            x, y = mul_bounds(a, (k, k))
            lo += x
            hi += y
        return lo, hi

    def prove_le0(self, lin: Lin) -> bool:
        """True when ``lin <= 0`` follows from bounds or one known fact ``f <= 0`` (times ``fact_multipliers``).

        Parameters
        ----------
        lin : Lin
            The linear form.

        Returns
        -------
        bool
            True when proven.
        """
        if self.lin_bound(lin)[1] <= 0:
            return True
        for fact in self.an._facts:
            for m in fact_multipliers(lin, fact):
                if self.lin_bound(lin.combine(fact.scale(m), -1))[1] <= 0:
                    return True
        return False

    def decide_cmp(self, cls, g: Lin):
        """Decide ``g cls 0`` (g = a - b): True, False or None when unknown.

        Parameters
        ----------
        cls : type
            The comparison node type.
        g : Lin
            ``a - b``.

        Returns
        -------
        bool or None
            The decision.
        """
        neg = g.scale(-1)
        if cls is E.LT:
            return True if self.prove_le0(g.add_const(1)) else False if self.prove_le0(neg) else None
        if cls is E.LE:
            return True if self.prove_le0(g) else False if self.prove_le0(neg.add_const(1)) else None
        if cls is E.GT:
            return True if self.prove_le0(neg.add_const(1)) else False if self.prove_le0(g) else None
        if cls is E.GE:
            return True if self.prove_le0(neg) else False if self.prove_le0(g.add_const(1)) else None
        if cls in (E.EQ, E.NE):
            if g.is_const():
                eq = g.const == 0
            elif self.prove_le0(g.add_const(1)) or self.prove_le0(neg.add_const(1)):
                eq = False
            elif self._divisibility_excludes_zero(g):
                eq = False
            elif self.prove_le0(g) and self.prove_le0(neg):
                eq = True
            else:
                return None
            return eq if cls is E.EQ else not eq
        return None

    @staticmethod
    def _divisibility_excludes_zero(g: Lin) -> bool:
        k = g.coeff_gcd()
        return k > 1 and g.const % k != 0

    # -- integer expressions ---------------------------------------------------------------
    def _linear(self, e) -> Lin:  # noqa: C901 - one dispatch table
        t = type(e)
        if t is E.IntImm:
            return Lin.constant(e.value, e.dtype)
        if isinstance(e, E.Var):
            bound_to = self.an._var_subst.get(e)
            if bound_to is not None:
                return self.linear(bound_to)
            return Lin.atom(e)
        if t is E.Add:
            return self.linear(e.a).combine(self.linear(e.b))
        if t is E.Sub:
            return self.linear(e.a).combine(self.linear(e.b), -1)
        if t is E.Mul:
            la, lb = self.linear(e.a), self.linear(e.b)
            if la.is_const():
                return lb.scale(la.const)
            if lb.is_const():
                return la.scale(lb.const)
            x, y = la.to_expr(), lb.to_expr()
            if _order_key(y) < _order_key(x):
                x, y = y, x
            return Lin.atom(E.Mul(x, y))
        if t in (E.FloorDiv, E.FloorMod, E.Div, E.Mod):
            return self._division(e)
        if t in (E.Min, E.Max):
            return self._min_max(e)
        if t is E.Select or (t is E.Call and e.op.name == "tir.if_then_else"):
            cond, tv, fv = (e.condition, e.true_value, e.false_value) if t is E.Select else e.args
            cond = self.simplify(cond)
            if isinstance(cond, E.IntImm):
                return self.linear(tv if cond.value else fv)
            lt, lf = self.linear(tv), self.linear(fv)
            if _same(lt, lf):
                return lt
            if t is E.Select:
                return Lin.atom(E.Select(cond, lt.to_expr(), lf.to_expr()))
            return Lin.atom(E.Call(e.dtype, e.op, (cond, lt.to_expr(), lf.to_expr())))
        if t is E.Cast:
            value = self.simplify(e.value)
            if isinstance(value, E.IntImm):
                return Lin.atom(E.cast(e.dtype, value))
            return Lin.atom(value if value.dtype == e.dtype else E.Cast(e.dtype, value))
        return Lin.atom(self.simplify_children(e))

    def _division(self, e) -> Lin:
        t = type(e)
        la, lb = self.linear(e.a), self.linear(e.b)
        if t in (E.Div, E.Mod):
            # Truncated division equals floor division for a non-negative dividend and positive divisor.
            if self.lin_bound(la)[0] >= 0 and lb.is_const() and lb.const > 0:
                t = E.FloorDiv if t is E.Div else E.FloorMod
            else:
                if la.is_const() and lb.is_const() and lb.const != 0:
                    return Lin.constant(E._fold(t, E.IntImm(la.dtype, la.const), E.IntImm(la.dtype, lb.const)).value, la.dtype)
                return Lin.atom(t(la.to_expr(), lb.to_expr()))
        if not (lb.is_const() and lb.const > 0):
            if lb.is_const() and lb.const == 0:
                raise ZeroDivisionError(f"{t.__name__.lower()} by zero in {e}")
            # 0 <= a < b gives floordiv 0 and floormod a.
            if self.lin_bound(la)[0] >= 0 and self.lin_bound(lb)[0] > 0 and self.prove_le0(la.combine(lb, -1).add_const(1)):
                return Lin.constant(0, la.dtype) if t is E.FloorDiv else la
            return Lin.atom(t(la.to_expr(), lb.to_expr()))
        c = lb.const
        if c == 1:
            return la if t is E.FloorDiv else Lin.constant(0, la.dtype)
        q, r = la.split_by_divisor(c)
        lo, hi = self.lin_bound(r)
        if t is E.FloorDiv:
            if -INF < lo and hi < INF and lo // c == hi // c:
                return q.add_const(lo // c)
            if not r.terms:
                return q.add_const(r.const // c)
            folded = self._fold_reduced_remainder(q, r, c)
            if folded is not None:
                return folded
            inner = r.single_atom()
            if inner is not None and type(inner) is E.FloorDiv and isinstance(inner.b, E.IntImm) and inner.b.value > 0:
                # floordiv(floordiv(x, a), b) == floordiv(x, a * b), a, b > 0; simplified again (x*3//2//3 -> x//2)
                return q.combine(self._division(E.FloorDiv(inner.a, E.IntImm(la.dtype, inner.b.value * c))))
            g = r.coeff_gcd()
            if g > 1 and c % g == 0:
                # floordiv(g * y + s, g * c') == floordiv(y, c') for 0 <= s < g (the low bits never carry)
                y = Lin(r.terms, r.const - r.const % g, r.dtype).scale_down(g)
                return q.combine(self._division(E.FloorDiv(y.to_expr(), E.IntImm(la.dtype, c // g))))
            return q.combine(Lin.atom(E.FloorDiv(r.to_expr(), E.IntImm(la.dtype, c))))
        # floormod: the multiples of c vanish.
        r = Lin(r.terms, r.const % c, r.dtype)
        lo, hi = self.lin_bound(r)
        if -INF < lo and hi < INF and lo // c == hi // c:
            return r.add_const(-(lo // c) * c)
        if not r.terms:
            return Lin.constant(r.const % c, r.dtype)
        inner = r.single_atom()
        if inner is not None and type(inner) is E.FloorMod and isinstance(inner.b, E.IntImm) and inner.b.value % c == 0:
            # floormod(floormod(x, k * c), c) == floormod(x, c)
            return self._division(E.FloorMod(inner.a, E.IntImm(la.dtype, c)))
        g = r.coeff_gcd()
        if g > 1 and c % g == 0 and r.const % g == 0:
            # floormod(g * y, g * c') == g * floormod(y, c')
            return self._division(E.FloorMod(r.scale_down(g).to_expr(), E.IntImm(la.dtype, c // g))).scale(g)
        return Lin.atom(E.FloorMod(r.to_expr(), E.IntImm(la.dtype, c)))

    def _fold_reduced_remainder(self, q: Lin, r: Lin, c: int) -> Lin | None:
        """``floordiv(q * c + r, c)`` when ``r`` reduced modulo ``c`` has one constant quotient, else None."""
        parts = reduce_coefficients(q, r, c)
        lo, hi = self.lin_bound(parts[1]) if parts is not None else (-INF, INF)
        return parts[0].add_const(lo // c) if -INF < lo and hi < INF and lo // c == hi // c else None

    def _merge_div_mod(self, lin: Lin) -> Lin:
        """``k * c * floordiv(x, c) + k * floormod(x, c)`` collapses to ``k * x``.

        ``x`` may itself be ``floordiv(y, a)``, whose quotient by ``c`` the simplifier writes as
        ``floordiv(y, a * c)``: so ``floordiv(y, a * c) * c + floormod(floordiv(y, a), c)`` collapses
        to ``floordiv(y, a)`` (exact for every integer ``y`` and positive ``a``, ``c``). Repeating the
        rule undoes a multi-level split of a fused index: ``v // 18 * 18 + v // 6 % 3 * 6 + v % 6``
        is ``v``.
        """
        if len(lin.terms) < 2:
            return lin
        for atom, k in list(lin.terms.values()):
            if type(atom) is E.FloorMod and isinstance(atom.b, E.IntImm) and atom.b.value > 0:
                c = atom.b.value
                div_key = _quotient_key(atom.a, c)
                entry = lin.terms.get(div_key)
                dividend = atom.a
                if entry is None:
                    div_key, entry, dividend = self._shifted_quotient(lin, atom, k * c)
                if entry is not None and entry[1] == k * c:
                    rest = Lin({key: v for key, v in lin.terms.items() if key != div_key and v[0] is not atom}, lin.const, lin.dtype)
                    return self._merge_div_mod(rest.combine(self.linear(dividend).scale(k)))
        return lin

    def _shifted_quotient(self, lin: Lin, mod, coeff: int):
        """A term ``coeff * floordiv(y + d', c)`` of ``lin`` matching ``mod = floormod(y + d, c)``
        with ``d' - d`` a multiple of ``c`` (the simplifier reduces a floormod's constant, so
        ``floormod(x - 1, 2)`` appears as ``floormod(x + 1, 2)``). Returns ``(key, entry, the
        dividend y + d')`` or ``(None, None, None)``."""
        c = mod.b.value
        lm = None
        for key, entry in lin.terms.items():
            div = entry[0]
            if entry[1] != coeff or type(div) is not E.FloorDiv or not isinstance(div.b, E.IntImm) or div.b.value != c:
                continue
            lm = self.linear(mod.a) if lm is None else lm
            diff = self.linear(div.a).combine(lm, -1)
            if diff.is_const() and diff.const % c == 0:
                return key, entry, div.a
        return None, None, None

    def _min_max(self, e) -> Lin:
        la, lb = self.linear(e.a), self.linear(e.b)
        g = la.combine(lb, -1)
        a_le_b = self.prove_le0(g)
        if a_le_b:
            return la if type(e) is E.Min else lb
        if self.prove_le0(g.scale(-1)):
            return lb if type(e) is E.Min else la
        x, y = la.to_expr(), lb.to_expr()
        return Lin.atom(type(e)(x, y))

    # -- conditions --------------------------------------------------------------------------
    def simplify_bool(self, e):  # noqa: C901 - one dispatch table
        """A boolean expression simplified (comparisons decided where the bounds allow).

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        PrimExpr
            The simplified expression.
        """
        t = type(e)
        if t is E.IntImm:
            return e
        if t in _NEGATE:
            if is_index_dtype(e.a.dtype):
                la, lb = self.linear(e.a), self.linear(e.b)
                decided = self.decide_cmp(t, la.combine(lb, -1))
                if decided is not None:
                    return E.IntImm("bool", decided)
                return _normalise_cmp(t, la, lb)
            return self.simplify_children(e)
        if t is E.And or t is E.Or:
            a = self.simplify(e.a)
            if isinstance(a, E.IntImm):
                if bool(a.value) == (t is E.Or):
                    return a
                return self.simplify(e.b)
            b = self.simplify(e.b)
            if isinstance(b, E.IntImm):
                return b if bool(b.value) == (t is E.Or) else a
            if expr_key(a) == expr_key(b):
                return a
            return t(a, b)
        if t is E.Not:
            a = self.simplify(e.a)
            if isinstance(a, E.IntImm):
                return E.IntImm("bool", not a.value)
            if type(a) in _NEGATE:
                return _NEGATE[type(a)](a.a, a.b)
            if type(a) is E.Not:
                return a.a
            return E.Not(a)
        if t is E.Select or (t is E.Call and e.op.name == "tir.if_then_else"):
            cond = e.condition if t is E.Select else e.args[0]
            cond = self.simplify(cond)
            if isinstance(cond, E.IntImm):
                branch = (e.true_value if cond.value else e.false_value) if t is E.Select else e.args[1 if cond.value else 2]
                return self.simplify(branch)
        return self.simplify_children(e)

    # -- everything else ---------------------------------------------------------------------
    def simplify_children(self, e):
        """Simplify the operands of ``e`` and rebuild it (folding constants) when any changed.

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        PrimExpr
            The rebuilt expression.
        """
        t = type(e)
        if t is E.Select or (t is E.Call and e.op.name == "tir.if_then_else"):
            cond = self.simplify(e.condition if t is E.Select else e.args[0])
            if isinstance(cond, E.IntImm):
                return self.simplify((e.true_value if cond.value else e.false_value) if t is E.Select else e.args[1 if cond.value else 2])
        changes = {}
        for name in t._fields:
            value = getattr(e, name)
            if isinstance(value, E.PrimExpr):
                new = self.simplify(value)
            elif isinstance(value, tuple) and value and all(isinstance(v, E.PrimExpr) for v in value):
                new = tuple(self.simplify(v) for v in value)
                if all(n is v for n, v in zip(new, value)):
                    new = value
            else:
                continue
            if new is not value:
                changes[name] = new
        if not changes:
            return e
        if t in _ARITH:
            return E._arith(t, changes.get("a", e.a), changes.get("b", e.b))
        if t is E.Cast:
            return E.cast(e.dtype, changes["value"])
        return e.replace(**changes)


def _quotient_key(x, c: int):
    """The atom key of ``floordiv(x, c)`` as the simplifier writes it: ``floordiv(y, a * c)`` when
    ``x`` is ``floordiv(y, a)`` with a positive constant ``a``."""
    if type(x) is E.FloorDiv and isinstance(x.b, E.IntImm) and x.b.value > 0:
        return expr_key(E.FloorDiv(x.a, E.IntImm(x.b.dtype, x.b.value * c)))
    return expr_key(E.FloorDiv(x, E.IntImm(x.dtype, c)))


def _normalise_cmp(cls, la: Lin, lb: Lin):
    """``la cls lb`` with the constants gathered on the side without variables:
    ``i + 1 < 10`` becomes ``i < 9`` and ``4 <= j + 2`` becomes ``2 <= j``."""
    if la.terms and lb.is_const() and la.const:
        moved = _const_or_none(la.dtype, lb.const - la.const)
        if moved is not None:
            return cls(Lin(la.terms, 0, la.dtype).to_expr(), moved)
    elif lb.terms and la.is_const() and lb.const:
        moved = _const_or_none(lb.dtype, la.const - lb.const)
        if moved is not None:
            return cls(moved, Lin(lb.terms, 0, lb.dtype).to_expr())
    return cls(la.to_expr(), lb.to_expr())


def _const_or_none(dtype: str, value: int):
    try:
        return E.make_const(dtype, value)
    except ValueError:  # the moved constant does not fit the dtype: keep the comparison as written
        return None


def _same(a: Lin, b: Lin) -> bool:
    return a.const == b.const and a.terms.keys() == b.terms.keys() and all(a.terms[k][1] == b.terms[k][1] for k in a.terms)


def _order_key(e):
    """Deterministic operand order for commutative atoms: variables by name, then others."""
    if isinstance(e, E.Var):
        return (0, e.name)
    return (1, type(e).__name__)
