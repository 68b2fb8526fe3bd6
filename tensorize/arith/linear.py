"""Linear forms ``sum(coeff * atom) + const`` over integer atoms.

Atoms are variables or non-linear sub-expressions (``floordiv(x, 4)``, ``min(a, b)``, ``x * y``, loads).
Two faces of one idea:

* ``Lin`` (with ``expr_key``, ``affine_lin``): the canonical form of the simplifier, atoms keyed by
  ``expr_key`` (structurally identical expressions, variables by identity);
* ``LinearForm`` (with ``to_linear``, ``simplify_linear``, ``difference``): a small exact algebra that
  needs no analyzer and keeps its terms as expressions; it cancels ``(vi * 4 + 4) - vi * 4`` to ``4``,
  which is what region extents, slice lengths and block-access inference need.

>>> from tensorize.ir.expr import Var
>>> vi = Var("vi")
>>> int(simplify_linear((vi * 4 + 4) - vi * 4))
4
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir.expr import Add, IntImm, Mul, PrimExpr, Sub, Var, convert, make_const
from ..ir.structural import structural_equal, structural_hash


def expr_key(e):
    """A hashable key equal for structurally identical expressions (variables by identity).

    Parameters
    ----------
    e : PrimExpr
        The expression.

    Returns
    -------
    tuple
        The key.
    """
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


# -- LinearForm: terms kept as expressions -----------------------------------------------


class LinearForm:
    """``const + sum(coeff * term)``; ``terms`` maps a key to ``[term_expr, coeff]`` in first-seen order."""

    __slots__ = ("terms", "const", "dtype")

    def __init__(self, terms: dict | None = None, const: int = 0, dtype: str = "int32"):
        self.terms = terms if terms is not None else {}
        self.const = const
        self.dtype = dtype

    @staticmethod
    def constant(value: int, dtype: str = "int32") -> "LinearForm":
        """The constant form ``value``.

        Parameters
        ----------
        value : int
            The constant.
        dtype : str
            The dtype.

        Returns
        -------
        LinearForm
            The form.
        """
        return LinearForm({}, int(value), dtype)

    @staticmethod
    def term(expr: PrimExpr) -> "LinearForm":
        """The form ``1 * expr``.

        Parameters
        ----------
        expr : PrimExpr
            The expression.

        Returns
        -------
        LinearForm
            The form.
        """
        return LinearForm({_key(expr): [expr, 1]}, 0, expr.dtype)

    def is_constant(self) -> bool:
        """Whether the form has no terms.

        Returns
        -------
        bool
            The answer.
        """
        return not self.terms

    def scaled(self, factor: int) -> "LinearForm":
        """``self * factor``.

        Parameters
        ----------
        factor : int
            The factor.

        Returns
        -------
        LinearForm
            The form.
        """
        terms = {k: [e, c * factor] for k, (e, c) in self.terms.items() if c * factor}
        return LinearForm(terms, self.const * factor, self.dtype)

    def __add__(self, other: "LinearForm") -> "LinearForm":
        terms = {k: [e, c] for k, (e, c) in self.terms.items()}
        for k, (e, c) in other.terms.items():
            if k in terms:
                terms[k][1] += c
                if terms[k][1] == 0:
                    del terms[k]
            else:
                terms[k] = [e, c]
        return LinearForm(terms, self.const + other.const, _wider(self.dtype, other.dtype))

    def __sub__(self, other: "LinearForm") -> "LinearForm":
        return self + other.scaled(-1)

    def divisible_by(self, factor: int) -> bool:
        """Whether every coefficient (not the constant) is a multiple of ``factor``.

        Parameters
        ----------
        factor : int
            The divisor.

        Returns
        -------
        bool
            True when divisible.
        """
        return all(c % factor == 0 for _, c in self.terms.values())

    def floordiv(self, factor: int) -> "LinearForm":
        """Exact when ``divisible_by(factor)``: coefficients divide, the constant floors.

        Parameters
        ----------
        factor : int
            The divisor.

        Returns
        -------
        LinearForm
            The quotient.
        """
        terms = {k: [e, c // factor] for k, (e, c) in self.terms.items()}
        return LinearForm(terms, self.const // factor, self.dtype)

    def to_expr(self, dtype: str | None = None) -> PrimExpr:
        """The form as an expression: terms in first-seen order, then the constant.

        Parameters
        ----------
        dtype : str, optional
            The dtype (default: the form's).

        Returns
        -------
        PrimExpr
            The expression.
        """
        dtype = dtype or self.dtype
        result = None
        for expr, coeff in self.terms.values():
            if coeff == 1:
                part, negative = expr, False
            elif coeff == -1:
                part, negative = expr, True
            elif coeff > 0:
                part, negative = expr * coeff, False
            else:
                part, negative = expr * (-coeff), True
            if result is None:
                result = (make_const(dtype, 0) - part) if negative else part
            else:
                result = result - part if negative else result + part
        if result is None:
            return make_const(dtype, self.const)
        if self.const > 0:
            result = result + self.const
        elif self.const < 0:
            result = result - (-self.const)
        return result


def _wider(a: str, b: str) -> str:
    return a if dt.bits_of(a) >= dt.bits_of(b) else b


class _Key:
    """Hashable structural key of a term (variables by identity, other terms by structure)."""

    __slots__ = ("expr", "hash")

    def __init__(self, expr: PrimExpr):
        self.expr = expr
        self.hash = hash(("var", id(expr))) if isinstance(expr, Var) else structural_hash(expr, map_free_vars=False)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other) -> bool:
        if self.expr is other.expr:  # the same term object (the common case): equal without a walk
            return True
        if isinstance(self.expr, Var) or isinstance(other.expr, Var):
            return False
        return _same_structure(self.expr, other.expr)


def _same_structure(a, b) -> bool:
    # Free variables must be the very same objects: x + 1 and y + 1 are different terms.
    from ..ir.functor import collect_vars

    if not structural_equal(a, b):
        return False
    va, vb = collect_vars(a), collect_vars(b)
    return len(va) == len(vb) and all(x is y for x, y in zip(va, vb))


def _key(expr: PrimExpr) -> _Key:
    return _Key(expr)


def to_linear(expr) -> LinearForm:
    """The linear form of an integer expression; non-linear parts become opaque terms.

    Parameters
    ----------
    expr : PrimExpr
        The expression.

    Returns
    -------
    LinearForm
        The form.
    """
    expr = convert(expr)
    if isinstance(expr, IntImm):
        return LinearForm.constant(expr.value, expr.dtype)
    if isinstance(expr, Add):
        return to_linear(expr.a) + to_linear(expr.b)
    if isinstance(expr, Sub):
        return to_linear(expr.a) - to_linear(expr.b)
    if isinstance(expr, Mul):
        if isinstance(expr.b, IntImm):
            return to_linear(expr.a).scaled(expr.b.value)
        if isinstance(expr.a, IntImm):
            return to_linear(expr.b).scaled(expr.a.value)
    return LinearForm.term(expr)


def simplify_linear(expr) -> PrimExpr:
    """``expr`` with linear terms collected; returns ``expr`` itself when nothing cancels.

    Parameters
    ----------
    expr : PrimExpr
        The expression.

    Returns
    -------
    PrimExpr
        The simplified expression.
    """
    expr = convert(expr)
    if not isinstance(expr, PrimExpr) or not (dt.is_int(expr.dtype) or dt.is_uint(expr.dtype)):
        return expr
    if dt.lanes_of(expr.dtype) != 1:
        return expr
    form = to_linear(expr)
    if form.is_constant():
        return make_const(expr.dtype, form.const)
    return form.to_expr(expr.dtype)


def difference(a, b) -> int | None:
    """``a - b`` as a Python int when it is a constant, else None.

    Parameters
    ----------
    a : PrimExpr
        One expression.
    b : PrimExpr
        Another.

    Returns
    -------
    int or None
        The difference.

    Examples
    --------
    >>> from tensorize.arith.linear import difference
    >>> i = tvm.tir.Var("i", "int32")
    >>> difference(i + 5, i + 2)
    3
    """
    form = to_linear(a) - to_linear(b)
    return form.const if form.is_constant() else None
