"""Expression forms the well-formedness checker (``verify.py``) asks about: sums whose constant
bounds are attained, quasi-affine index expressions, and the short text of an index expression
that error messages show."""
from __future__ import annotations

from ..ir import expr as E


def _attains_bounds(expr) -> bool:
    """True for ``c0 + sum(k * v)`` with each variable once: its constant bound is reached."""
    seen: set[int] = set()

    def walk(e) -> bool:
        if isinstance(e, E.IntImm):
            return True
        if isinstance(e, E.Var):
            if id(e) in seen:
                return False
            seen.add(id(e))
            return True
        if isinstance(e, (E.Add, E.Sub)):
            return walk(e.a) and walk(e.b)
        if isinstance(e, E.Mul):
            return (isinstance(e.a, E.IntImm) and walk(e.b)) or (isinstance(e.b, E.IntImm) and walk(e.a))
        return False

    return walk(expr)


def _is_quasi_affine(expr) -> bool:
    """Sums of variables times constants, with floordiv/floormod by positive constants."""
    if isinstance(expr, (E.IntImm, E.Var)):
        return True
    if isinstance(expr, (E.Add, E.Sub)):
        return _is_quasi_affine(expr.a) and _is_quasi_affine(expr.b)
    if isinstance(expr, E.Mul):
        if isinstance(expr.a, E.IntImm):
            return _is_quasi_affine(expr.b)
        if isinstance(expr.b, E.IntImm):
            return _is_quasi_affine(expr.a)
        return False
    if isinstance(expr, (E.FloorDiv, E.FloorMod)):
        return isinstance(expr.b, E.IntImm) and expr.b.value > 0 and _is_quasi_affine(expr.a)
    if isinstance(expr, E.Cast):
        return _is_quasi_affine(expr.value)
    return False


def _show(e) -> str:
    """A short readable form of an index expression for messages."""
    if isinstance(e, E.IntImm):
        return str(e.value)
    if isinstance(e, E.Var):
        return e.name
    ops = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//", E.FloorMod: "%"}
    op = ops.get(type(e))
    if op is not None:
        return f"{_show(e.a)} {op} {_show(e.b)}"
    return type(e).__name__


def _name(v) -> str:
    return getattr(v, "name", None) or type(v).__name__
