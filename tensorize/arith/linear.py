"""Linear forms ``sum(coeff * atom) + const`` over integer atoms, the canonical form of the simplifier.

Atoms are variables or non-linear sub-expressions (``floordiv(x, 4)``, ``min(a, b)``, ``x * y``, loads);
two atoms are the same when they are structurally identical (``expr_key``).
"""
from __future__ import annotations

from ..ir import expr as E


def expr_key(e):
    """A hashable key equal for structurally identical expressions (variables by identity)."""
    if isinstance(e, E.Var):
        return e
    t = type(e)
    if t is E.IntImm:
        return (e.dtype, e.value)
    return (t, getattr(e, "dtype", None)) + tuple(_key_any(getattr(e, f)) for f in t._fields)


def _key_any(v):
    if isinstance(v, E.PrimExpr):
        return expr_key(v)
    if isinstance(v, (tuple, list)):
        return tuple(_key_any(x) for x in v)
    if isinstance(v, E.Op):
        return ("op", v.name)
    if isinstance(v, E.Range):
        return ("range", expr_key(v.min), expr_key(v.extent))
    try:
        hash(v)
        return v
    except TypeError:
        return ("id", id(v))


class Lin:
    """``sum(coeff * atom) + const`` with integer coefficients; immutable once built.

    ``terms`` maps an atom key to ``(atom, coeff)``; insertion order is kept for stable printing."""

    __slots__ = ("terms", "const", "dtype")

    def __init__(self, terms: dict, const: int, dtype: str):
        self.terms, self.const, self.dtype = terms, const, dtype

    @staticmethod
    def constant(value: int, dtype: str) -> "Lin":
        return Lin({}, value, dtype)

    @staticmethod
    def atom(e, coeff: int = 1) -> "Lin":
        if type(e) is E.IntImm:
            return Lin({}, e.value * coeff, e.dtype)
        return Lin({expr_key(e): (e, coeff)}, 0, e.dtype)

    def is_const(self) -> bool:
        return not self.terms

    def combine(self, other: "Lin", sign: int = 1) -> "Lin":
        """``self + sign * other``."""
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
        if k == 0:
            return Lin({}, 0, self.dtype)
        if k == 1:
            return self
        return Lin({key: (a, c * k) for key, (a, c) in self.terms.items()}, self.const * k, self.dtype)

    def add_const(self, c: int) -> "Lin":
        return Lin(self.terms, self.const + c, self.dtype) if c else self

    def split_by_divisor(self, c: int) -> tuple["Lin", "Lin"]:
        """``(q, r)`` with ``self = q * c + r``: terms whose coefficient ``c`` divides go to ``q``;
        the rest and the whole constant stay in ``r``."""
        q, r = {}, {}
        for key, (a, k) in self.terms.items():
            if k % c == 0:
                q[key] = (a, k // c)
            else:
                r[key] = (a, k)
        return Lin(q, 0, self.dtype), Lin(r, self.const, self.dtype)

    def scale_down(self, g: int) -> "Lin":
        """``self / g`` for a ``g`` that divides every coefficient and the constant."""
        return Lin({key: (a, c // g) for key, (a, c) in self.terms.items()}, self.const // g, self.dtype)

    def coeff_gcd(self) -> int:
        from math import gcd

        g = 0
        for _, k in self.terms.values():
            g = gcd(g, k)
        return g

    def single_atom(self):
        """The atom when this is exactly ``1 * atom + 0``, else None."""
        if self.const == 0 and len(self.terms) == 1:
            (a, k), = self.terms.values()
            if k == 1:
                return a
        return None

    def to_expr(self):
        """The expression: larger coefficients first, positive before negative, constant last."""
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
