"""``expr_key``: a hashable key equal for structurally identical expressions (variables by identity),
and ``same_key``, the same equality decided by walking both expressions without building keys.

The simplifier keys the atoms of its linear forms by ``expr_key``; ``same_key(a, b)`` is
``expr_key(a) == expr_key(b)`` for a caller that only compares (it stops at the first difference
and at shared sub-expressions).

>>> from tensorize.ir.expr import Var
>>> i = Var("i")
>>> same_key(i * 4 + 1, i * 4 + 1), same_key(i * 4 + 1, Var("i") * 4 + 1)
(True, False)
"""
from __future__ import annotations

from ..ir import expr as E

__all__ = ["expr_key", "same_key"]


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


def same_key(a, b) -> bool:
    """``expr_key(a) == expr_key(b)``, without building the keys.

    Parameters
    ----------
    a, b : PrimExpr
        The expressions.

    Returns
    -------
    bool
        Whether they are structurally identical (variables by identity).
    """
    while True:
        if a is b:
            return True
        t = type(a)
        if t is not type(b) or isinstance(a, E.Var):
            return False  # a variable's key is itself: another variable or a node differs
        if t is E.IntImm:
            return a.dtype == b.dtype and a.value == b.value
        if getattr(a, "dtype", None) != getattr(b, "dtype", None):
            return False
        binary = _BINARY.get(t)
        if binary is None:
            binary = _BINARY[t] = tuple(t._fields) == ("a", "b")
        if not binary:
            return all(_same_any(getattr(a, f), getattr(b, f)) for f in t._fields)
        if not same_key(a.a, b.a):
            return False
        a, b = a.b, b.b  # the right operand in the loop: long sums recurse on one side only


_BINARY: dict = {}  # node type -> whether its fields are exactly (a, b)


def _same_any(x, y) -> bool:
    """``_key_any(x) == _key_any(y)``, without building the keys."""
    if x is y:
        return True
    if isinstance(x, E.PrimExpr) or isinstance(y, E.PrimExpr):
        if not (isinstance(x, E.PrimExpr) and isinstance(y, E.PrimExpr)):
            return _key_any(x) == _key_any(y)
        return same_key(x, y)
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        return len(x) == len(y) and all(_same_any(u, v) for u, v in zip(x, y))
    return _key_any(x) == _key_any(y)
