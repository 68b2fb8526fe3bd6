"""A small exact evaluator of integer/boolean expressions (for tests and constant checks).

>>> from tensorize.ir.expr import Var
>>> x = Var("x")
>>> evaluate((x * 4 + 3) // 2, {x: 5})
11
"""
from __future__ import annotations

from typing import Mapping

from ..ir import expr as E

_BITWISE = {"tir.bitwise_and": lambda a, b: a & b, "tir.bitwise_or": lambda a, b: a | b,
            "tir.bitwise_xor": lambda a, b: a ^ b, "tir.bitwise_not": lambda a: ~a,
            "tir.shift_left": lambda a, b: a << b, "tir.shift_right": lambda a, b: a >> b}


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def evaluate(expr, env: Mapping | None = None):
    """The value of a scalar ``expr`` with variables taken from ``env`` (``{Var: int}``).

    Integers follow TVM semantics (``floordiv``/``floormod`` floor, ``Div``/``Mod`` truncate);
    comparisons and logic give Python bools. Raises ``KeyError`` naming an unbound variable and
    ``NotImplementedError`` for nodes it cannot evaluate (loads, calls other than if_then_else and the
    bitwise ops).

    Parameters
    ----------
    expr : PrimExpr
        The expression.
    env : dict, optional
        Variable to value.

    Returns
    -------
    int, float or bool
        The value.

    Examples
    --------
    >>> from tensorize.arith.evaluate import evaluate
    >>> i = tvm.tir.Var("i", "int32")
    >>> evaluate(i * 3 + 1, {i: 2})
    7
    """
    env = env or {}
    return _Evaluator(env).eval(E.convert(expr))


class _Evaluator:
    __slots__ = ("env",)

    def __init__(self, env):
        self.env = env

    def eval(self, e):  # noqa: C901 - one dispatch table
        ev = self.eval
        if isinstance(e, E.IntImm):
            return bool(e.value) if e.dtype == "bool" else e.value
        if isinstance(e, E.FloatImm):
            return e.value
        if isinstance(e, E.Var):
            if e in self.env:
                value = self.env[e]
                return int(value) if not isinstance(value, (bool, float)) else value
            raise KeyError(f"variable {e.name!r} has no value in the environment; pass it in env")
        t = type(e)
        if t is E.Add:
            return ev(e.a) + ev(e.b)
        if t is E.Sub:
            return ev(e.a) - ev(e.b)
        if t is E.Mul:
            return ev(e.a) * ev(e.b)
        if t is E.FloorDiv:
            return ev(e.a) // ev(e.b)
        if t is E.FloorMod:
            return ev(e.a) % ev(e.b)
        if t is E.Div:
            a, b = ev(e.a), ev(e.b)
            return a / b if isinstance(a, float) or isinstance(b, float) else _trunc_div(a, b)
        if t is E.Mod:
            a, b = ev(e.a), ev(e.b)
            return a - _trunc_div(a, b) * b
        if t is E.Min:
            return min(ev(e.a), ev(e.b))
        if t is E.Max:
            return max(ev(e.a), ev(e.b))
        if t is E.EQ:
            return ev(e.a) == ev(e.b)
        if t is E.NE:
            return ev(e.a) != ev(e.b)
        if t is E.LT:
            return ev(e.a) < ev(e.b)
        if t is E.LE:
            return ev(e.a) <= ev(e.b)
        if t is E.GT:
            return ev(e.a) > ev(e.b)
        if t is E.GE:
            return ev(e.a) >= ev(e.b)
        if t is E.And:
            return bool(ev(e.a)) and bool(ev(e.b))
        if t is E.Or:
            return bool(ev(e.a)) or bool(ev(e.b))
        if t is E.Not:
            return not ev(e.a)
        if t is E.Select:
            return ev(e.true_value) if ev(e.condition) else ev(e.false_value)
        if t is E.Cast:
            value = ev(e.value)
            if e.dtype == "bool":
                return bool(value)
            if e.dtype.startswith(("int", "uint")):
                return int(value)
            return float(value)
        if t is E.Let:
            return _Evaluator({**self.env, e.var: ev(e.value)}).eval(e.body)
        if t is E.Call and e.op.name == "tir.if_then_else":
            cond, a, b = e.args
            return ev(a) if ev(cond) else ev(b)
        if t is E.Call and e.op.name in _BITWISE:
            return _BITWISE[e.op.name](*(ev(a) for a in e.args))
        raise NotImplementedError(f"cannot evaluate {type(e).__name__} nodes; only scalar arithmetic and logic")
