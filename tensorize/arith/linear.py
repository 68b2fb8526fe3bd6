"""``Lin``, the canonical form of the simplifier: ``sum(coeff * atom) + const`` over integer atoms,
atoms keyed by ``expr_key`` (structurally identical expressions, variables by identity), and
``affine_lin``, the form of a pure affine expression.

Atoms are variables or non-linear sub-expressions (``floordiv(x, 4)``, ``min(a, b)``, ``x * y``, loads).
The knowledge-free algebra ``LinearForm`` (``to_linear``, ``simplify_linear``, ``difference``) lives in
``linear_form`` and is importable from here too.

>>> from tensorize.ir.expr import Var
>>> vi = Var("vi")
>>> affine_lin(vi * 4 + 4 - vi * 3).to_expr()
vi + 4
"""
from __future__ import annotations

from ..ir import expr as E
from .expr_key import expr_key, same_key
from .linear_form import LinearForm, difference, simplify_linear, to_linear  # noqa: F401 - importable from here

class Lin:
    """``sum(coeff * atom) + const`` with integer coefficients; immutable once built.

    ``terms`` maps an atom key to ``(atom, coeff)``; insertion order is kept for stable printing."""

    __slots__ = ("terms", "const", "dtype")

    def __init__(self, terms: dict, const: int, dtype: str):
        self.terms, self.const, self.dtype = terms, const, dtype

    @staticmethod
    def constant(value: int, dtype: str) -> "Lin":
        """The constant form ``value``.

        Parameters
        ----------
        value : int
            The constant.
        dtype : str
            The dtype.

        Returns
        -------
        Lin
            The form.
        """
        return Lin({}, value, dtype)

    @staticmethod
    def atom(e, coeff: int = 1) -> "Lin":
        """The form ``coeff * e``.

        Parameters
        ----------
        e : PrimExpr
            The expression.
        coeff : int
            The coefficient.

        Returns
        -------
        Lin
            The form.
        """
        if type(e) is E.IntImm:
            return Lin({}, e.value * coeff, e.dtype)
        return Lin({expr_key(e): (e, coeff)}, 0, e.dtype)

    def is_const(self) -> bool:
        """Whether the form has no terms.

        Returns
        -------
        bool
            The answer.
        """
        return not self.terms

    def combine(self, other: "Lin", sign: int = 1) -> "Lin":
        """``self + sign * other``.

        Parameters
        ----------
        other : Lin
            The other form.
        sign : int
            +1 or -1.

        Returns
        -------
        Lin
            The sum.
        """
        terms = dict(self.terms)
        for key, (atom, coeff) in other.terms.items():
            old = terms.get(key)
            c = (old[1] if old else 0) + sign * coeff
            if c:
                terms[key] = (atom, c)
            elif old:
                del terms[key]
        return Lin(terms, self.const + sign * other.const, self.dtype)

    def scale(self, k: int) -> "Lin":
        """``self * k``.

        Parameters
        ----------
        k : int
            The factor.

        Returns
        -------
        Lin
            The form.
        """
        if k == 0:
            return Lin({}, 0, self.dtype)
        if k == 1:
            return self
        return Lin({key: (a, c * k) for key, (a, c) in self.terms.items()}, self.const * k, self.dtype)

    def add_const(self, c: int) -> "Lin":
        """``self + c``.

        Parameters
        ----------
        c : int
            The constant.

        Returns
        -------
        Lin
            The form.
        """
        return Lin(self.terms, self.const + c, self.dtype) if c else self

    def split_by_divisor(self, c: int) -> tuple["Lin", "Lin"]:
        """``(q, r)`` with ``self = q * c + r``: terms whose coefficient ``c`` divides go to ``q``;
        the rest and the whole constant stay in ``r``.

        Parameters
        ----------
        c : int
            The divisor.

        Returns
        -------
        tuple of (Lin, Lin)
            ``(q, r)``.
        """
        q, r = {}, {}
        for key, (a, k) in self.terms.items():
            if k % c == 0:
                q[key] = (a, k // c)
            else:
                r[key] = (a, k)
        return Lin(q, 0, self.dtype), Lin(r, self.const, self.dtype)

    def scale_down(self, g: int) -> "Lin":
        """``self / g`` for a ``g`` that divides every coefficient and the constant.

        Parameters
        ----------
        g : int
            The divisor.

        Returns
        -------
        Lin
            The form.
        """
        return Lin({key: (a, c // g) for key, (a, c) in self.terms.items()}, self.const // g, self.dtype)

    def coeff_gcd(self) -> int:
        """The gcd of the coefficients (0 for a constant form).

        Returns
        -------
        int
            The gcd.
        """
        from math import gcd

        g = 0
        for _, k in self.terms.values():
            g = gcd(g, k)
        return g

    def single_atom(self):
        """The atom when this is exactly ``1 * atom + 0``, else None.

        Returns
        -------
        PrimExpr or None
            The atom.
        """
        if self.const == 0 and len(self.terms) == 1:
            (a, k), = self.terms.values()
            if k == 1:
                return a
        return None

    def to_expr(self):
        """The expression: larger coefficients first, positive before negative, constant last.

        Returns
        -------
        PrimExpr
            The expression.
        """
        dtype = self.dtype
        if not self.terms:
            return E.make_const(dtype, self.const)
        items = list(self.terms.values())
        pos = sorted((t for t in items if t[1] > 0), key=lambda t: -t[1])
        neg = sorted((t for t in items if t[1] < 0), key=lambda t: t[1])
        result = None
        for atom, k in pos:
            term = atom if k == 1 else E.Mul(atom, E.IntImm(dtype, k))
            result = term if result is None else E.Add(result, term)
        if result is None:
            if self.const > 0:
                result = E.IntImm(dtype, self.const)
                const = 0
            else:
                atom, k = neg.pop(0)
                result = E.Mul(atom, E.IntImm(dtype, k))
                const = self.const
        else:
            const = self.const
        for atom, k in neg:
            term = atom if k == -1 else E.Mul(atom, E.IntImm(dtype, -k))
            result = E.Sub(result, term)
        if const > 0:
            result = E.Add(result, E.IntImm(dtype, const))
        elif const < 0:
            result = E.Sub(result, E.IntImm(dtype, -const))
        return result


# -- knowledge-free linear forms, shared by every analyzer -----------------------------------------
# The linear form of an expression built only from variables, integer constants, +, - and
# multiplication by a constant does not depend on what an analyzer knows (as long as it substitutes
# no variable), so it is computed once per expression object and shared. Entries keep their
# expression alive, which keeps ``id`` keys unique; the table is dropped when it grows large.
_AFFINE_CACHE: dict[int, tuple] = {}
_AFFINE_CACHE_LIMIT = 1 << 16
_NOT_AFFINE = object()


def affine_lin(e) -> "Lin | None":
    """The linear form of ``e`` when it is a pure affine integer expression, else None.

    Parameters
    ----------
    e : PrimExpr
        The expression.

    Returns
    -------
    Lin or None
        The form.

    Examples
    --------
    >>> i = E.Var("i")
    >>> affine_lin(i * 4 + 2 - i).to_expr()
    i * 3 + 2
    """
    hit = _AFFINE_CACHE.get(id(e))
    if hit is not None and hit[0] is e:
        lin = hit[1]
        return None if lin is _NOT_AFFINE else lin
    t = type(e)
    if t is E.IntImm:
        lin = Lin({}, e.value, e.dtype)
    elif t is E.Var or t is E.SizeVar:
        lin = Lin({e: (e, 1)}, 0, e.dtype)
    elif t is E.Add or t is E.Sub:
        a = affine_lin(e.a)
        b = affine_lin(e.b) if a is not None else None
        lin = None if b is None else a.combine(b, 1 if t is E.Add else -1)
    elif t is E.Mul:
        a = affine_lin(e.a)
        b = affine_lin(e.b) if a is not None else None
        if b is None:
            lin = None
        elif b.is_const():
            lin = a.scale(b.const)
        elif a.is_const():
            lin = b.scale(a.const)
        else:
            lin = None
    else:
        lin = None
    if len(_AFFINE_CACHE) >= _AFFINE_CACHE_LIMIT:
        _AFFINE_CACHE.clear()
    _AFFINE_CACHE[id(e)] = (e, _NOT_AFFINE if lin is None else lin)
    return lin


# Simplified forms of pure affine expressions (variables, constants, +, -, * by a constant) do not
# depend on an analyzer's bounds or facts, only on it substituting no variable: they are computed
# once per expression object and shared by all analyzers. A result maps to itself, so simplifying
# an already simplified affine expression is a dictionary lookup.
_CANONICAL: dict[int, tuple] = {}
_CANONICAL_LIMIT = 1 << 16


def canonical_affine(e):
    """The simplified form of ``e`` if it is a pure affine index expression, else None.

    Parameters
    ----------
    e : PrimExpr
        The expression.

    Returns
    -------
    PrimExpr or None
        The simplified form.
    """
    hit = _CANONICAL.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    lin = affine_lin(e)
    if lin is None:
        return None
    result = lin.to_expr()
    if len(_CANONICAL) >= _CANONICAL_LIMIT:
        _CANONICAL.clear()
    if same_key(result, e):
        result = e  # already canonical: keep the object (callers test identity to skip rebuilds)
    _CANONICAL[id(e)] = (e, result)
    _CANONICAL[id(result)] = (result, result)
    return result


def fact_multipliers(lin: Lin, fact: Lin) -> list[int]:
    """Positive ``m`` to try in ``lin - m * fact``: 1, and each ratio of a term's coefficient in
    ``lin`` to its coefficient in ``fact`` that is a positive integer.

    Parameters
    ----------
    lin : Lin
        The form to bound.
    fact : Lin
        A known fact ``fact <= 0``.

    Returns
    -------
    list of int
        The multipliers.
    """
    out = [1]
    for key, (_, kf) in fact.terms.items():
        hit = lin.terms.get(key)
        if hit is not None and kf and hit[1] % kf == 0 and hit[1] // kf > 1 and hit[1] // kf not in out:
            out.append(hit[1] // kf)
    return out


def reduce_coefficients(q: Lin, r: Lin, c: int):
    """``(whole, rest)`` with ``q * c + r == whole * c + rest``, where ``rest`` keeps each coefficient of
    ``r`` modulo ``c``; None when no coefficient of ``r`` reaches ``c``.

    Parameters
    ----------
    q : Lin
        The quotient so far.
    r : Lin
        The remainder so far.
    c : int
        The divisor.

    Returns
    -------
    tuple of (Lin, Lin) or None
        ``(whole, rest)``.
    """
    whole, rest, moved = dict(q.terms), {}, False
    for key, (atom, k) in r.terms.items():
        if k // c:
            prev = whole.get(key)
            whole[key] = (atom, (prev[1] if prev else 0) + k // c)
            moved = True
        if k % c:
            rest[key] = (atom, k % c)
    if not moved:
        return None
    return Lin({key: v for key, v in whole.items() if v[1]}, 0, q.dtype), Lin(rest, r.const, r.dtype)
