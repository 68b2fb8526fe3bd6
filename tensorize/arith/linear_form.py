"""``LinearForm`` (with ``to_linear``, ``simplify_linear``, ``difference``): ``const + sum(coeff * term)``,
a small exact algebra over integer expressions that needs no analyzer and keeps its terms as
expressions; it cancels ``(vi * 4 + 4) - vi * 4`` to ``4``, which is what region extents, slice
lengths and block-access inference need. (The simplifier's canonical form is ``linear.Lin``.)

>>> from tensorize.ir.expr import Var
>>> vi = Var("vi")
>>> int(simplify_linear((vi * 4 + 4) - vi * 4))
4
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir.expr import Add, IntImm, Mul, PrimExpr, Sub, Var, convert, make_const
from ..ir.structural import structural_equal, structural_hash

__all__ = ["LinearForm", "to_linear", "simplify_linear", "difference"]


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
