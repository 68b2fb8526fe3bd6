"""The guard conditions two lowering passes read: the conjuncts of the conditions of ``if_then_else``
and ``Select`` expressions (a convolution reading its zero padding inline), the range of a loop
variable where such a conjunct holds, and their replacement by ``True`` where it is known to.

>>> from tensorize.ir.expr import Var
>>> i, k = Var("i"), Var("k")
>>> always_true_bound(i * 14 + k * 2 >= 3, i, {k: (0, 6)})
('lo', 1)
>>> always_true_bound(i * 14 + k * 2 < 227, i, {k: (0, 6)})
('hi', 16)
"""
from __future__ import annotations

from ..arith.expr_key import expr_key
from ..arith.linear_form import to_linear
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, collect_vars, post_order_visit

__all__ = ["COMPARISONS", "TRUE", "ReplaceWithTrue", "always_true_bound", "conjuncts", "guard_condition", "has_guards",
           "is_guard", "is_op", "is_true"]

COMPARISONS = (E.LT, E.LE, E.GT, E.GE)
TRUE = E.const("bool", 1)


def is_op(e, name: str) -> bool:
    """Whether ``e`` is a call of the operator ``name`` (``"tir.if_then_else"``).

    Parameters
    ----------
    e : PrimExpr
    name : str

    Returns
    -------
    bool
    """
    return isinstance(e, E.Call) and getattr(e.op, "name", None) == name


def is_true(e) -> bool:
    """Whether ``e`` is the constant ``True``.

    Parameters
    ----------
    e : PrimExpr

    Returns
    -------
    bool
    """
    return isinstance(e, E.IntImm) and e.dtype == "bool" and e.value == 1


def is_guard(n, statements: bool = False) -> bool:
    """Whether ``n`` is an ``if_then_else`` or ``Select`` (with ``statements``, also an ``if`` statement).

    Parameters
    ----------
    n : Stmt or PrimExpr
    statements : bool

    Returns
    -------
    bool
    """
    return isinstance(n, E.Select) or is_op(n, "tir.if_then_else") or (statements and isinstance(n, S.IfThenElse))


def guard_condition(n):
    """The condition of a guard (``is_guard``).

    Parameters
    ----------
    n : Stmt or PrimExpr

    Returns
    -------
    PrimExpr
    """
    return n.args[0] if isinstance(n, E.Call) else n.condition


def has_guards(stmt, statements: bool = False) -> bool:
    """Whether ``stmt`` holds an ``if_then_else`` or ``Select`` (with ``statements``, also an ``if``
    statement): what the padding passes read; a program without one is left as it is without walking its loops.

    Parameters
    ----------
    stmt : Stmt
    statements : bool

    Returns
    -------
    bool
    """
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if is_guard(n, statements) else None)
    return bool(found)


def conjuncts(cond) -> list:
    """The conjuncts of ``cond`` (``a and b and c`` -> ``[a, b, c]``; ``likely(x)`` read as ``x``).

    Parameters
    ----------
    cond : PrimExpr

    Returns
    -------
    list of PrimExpr
    """
    if isinstance(cond, E.And):
        return conjuncts(cond.a) + conjuncts(cond.b)
    if is_op(cond, "tir.likely"):
        return conjuncts(cond.args[0])
    return [cond]


def _as_nonnegative_form(cond):
    """``cond`` as the linear form ``f`` with ``cond <=> f >= 0``; None for another expression."""
    if not isinstance(cond, COMPARISONS) or not dt.is_int(cond.a.dtype):
        return None
    one = to_linear(E.IntImm(cond.a.dtype, 1))
    a, b = to_linear(cond.a), to_linear(cond.b)
    if isinstance(cond, E.GE):
        return a - b
    if isinstance(cond, E.GT):
        return a - b - one
    if isinstance(cond, E.LE):
        return b - a
    return b - a - one


def _pure_index_expr(e) -> bool:
    """Whether ``e`` reads no memory and calls nothing (its value depends on variables alone)."""
    impure = []
    post_order_visit(e, lambda n: impure.append(n) if isinstance(n, (E.BufferLoad, E.Call, E.Let)) else None)
    return not impure


def always_true_bound(cond, var, inner: dict | None = None):
    """Where the comparison ``cond`` holds for every value of the ``inner`` variables, as a bound on ``var``.

    ``("lo", e)`` means it holds for ``var >= e``, ``("hi", e)`` for ``var < e``; None when ``cond`` is not
    a comparison linear in ``var`` (a non-linear term holding ``var``) or reads memory (a loop could
    change it). ``inner`` maps a variable to its inclusive range ``(lo, hi)`` of constants; every other
    variable stays in ``e``.

    Parameters
    ----------
    cond : PrimExpr
        The comparison.
    var : Var
        The variable to bound.
    inner : dict, optional
        ``{Var: (lo, hi)}`` of variables to take at their worst.

    Returns
    -------
    tuple or None
        ``("lo" or "hi", PrimExpr)``.
    """
    form = _as_nonnegative_form(cond) if _pure_index_expr(cond) else None
    if form is None:
        return None
    inner = {id(v): r for v, r in (inner or {}).items()}
    coeff, rest, worst = 0, {}, 0
    for key, (term, c) in form.terms.items():
        if term is var:
            coeff = c
        elif isinstance(term, E.Var) and id(term) in inner:
            lo, hi = inner[id(term)]
            worst += c * (lo if c > 0 else hi)
        elif any(v is var or id(v) in inner for v in collect_vars(term)):
            return None
        else:
            rest[key] = [term, c]
    if coeff == 0:
        return None
    form.terms, form.const = rest, form.const + worst
    r = form.to_expr(var.dtype)  # holds where coeff * var + r >= 0
    if isinstance(r, E.IntImm):
        r = r.value
    if coeff > 0:  # var >= ceil(-r / coeff)
        return "lo", (0 - r) if coeff == 1 else (coeff - 1 - r) // coeff
    return "hi", (r if coeff == -1 else r // -coeff) + 1  # var <= floor(r / -coeff)


class ReplaceWithTrue(StmtExprMutator):
    """Replace the comparisons whose ``expr_key`` is in ``keys`` by ``True``, folding what that decides
    (``True and x`` -> ``x``, ``if_then_else(True, a, b)`` -> ``a``, ``if True: a`` -> ``a``).

    Parameters
    ----------
    keys : set
        ``expr_key`` of the comparisons known to hold.
    """

    def __init__(self, keys: set):
        self.keys = keys

    def visit_expr(self, expr):
        if isinstance(expr, COMPARISONS) and expr_key(expr) in self.keys:
            return TRUE
        new = super().visit_expr(expr)
        if isinstance(new, E.And) and (is_true(new.a) or is_true(new.b)):
            return new.b if is_true(new.a) else new.a
        if is_op(new, "tir.if_then_else") and is_true(new.args[0]):
            return new.args[1]
        if isinstance(new, E.Select) and is_true(new.condition):
            return new.true_value
        return new

    def visit_if_then_else_(self, op):
        new = super().visit_if_then_else_(op)
        return new.then_case if isinstance(new, S.IfThenElse) and is_true(new.condition) else new
