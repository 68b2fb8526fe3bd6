"""Building expressions with TVM's operand type matching and integer constant folding.

These are the functions behind Python operators on expressions (``i * 4 + 1``); ``tensorize.ir.expr``
re-exports them, so ``from tensorize.ir.expr import convert, cast, make_const`` keeps working.

>>> from tensorize.ir.expr import Var
>>> add(Var("i"), 0).name
'i'
>>> mul(IntImm("int32", 2), 3).value
6
"""
from __future__ import annotations

from . import dtype as dt
from . import expr_scalar
from .expr_compound import Call, Op
from .expr_convert import _is_python_number, _wrap_int, cast, const, convert, make_const, match_types
from .expr_scalar import (
    EQ, GE, GT, LE, LT, NE, Add, And, Div, FloatImm, FloorDiv, FloorMod, IntImm, Max, Min, Mod, Mul, Not, Or, Sub,
)


def _fold(cls, a, b):
    """Constant-fold ``cls(a, b)`` on two scalar constants; None if not foldable."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        x, y = a.value, b.value
        if cls is Add:
            r = x + y
        elif cls is Sub:
            r = x - y
        elif cls is Mul:
            r = x * y
        elif cls is FloorDiv:
            if y == 0:
                raise ZeroDivisionError("floordiv by constant zero")
            r = x // y
        elif cls is FloorMod:
            if y == 0:
                raise ZeroDivisionError("floormod by constant zero")
            r = x % y
        elif cls in (Div,):
            if y == 0:
                raise ZeroDivisionError("division by constant zero")
            r = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        elif cls is Mod:
            if y == 0:
                raise ZeroDivisionError("mod by constant zero")
            r = x - (abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)) * y
        elif cls is Min:
            r = min(x, y)
        elif cls is Max:
            r = max(x, y)
        else:
            return None
        return IntImm(a.dtype, _wrap_int(a.dtype, r))
    if isinstance(a, FloatImm) and isinstance(b, FloatImm):
        x, y = a.value, b.value
        ops = {Add: x + y, Sub: x - y, Mul: x * y, Min: min(x, y), Max: max(x, y)}
        if cls in ops:
            return FloatImm(a.dtype, ops[cls])
        if cls is Div and y != 0:
            return FloatImm(a.dtype, x / y)
    return None


def _arith(cls, a, b):
    a, b = match_types(a, b)
    folded = _fold(cls, a, b)
    if folded is not None:
        return folded
    # Identities TVM also applies when building: x + 0, x * 1, x * 0 (integers only).
    if dt.is_int(a.dtype):
        if cls is Add:
            if isinstance(b, IntImm) and b.value == 0:
                return a
            if isinstance(a, IntImm) and a.value == 0:
                return b
        elif cls is Sub and isinstance(b, IntImm) and b.value == 0:
            return a
        elif cls is Mul:
            if isinstance(b, IntImm) and b.value == 1:
                return a
            if isinstance(a, IntImm) and a.value == 1:
                return b
            if (isinstance(b, IntImm) and b.value == 0) or (isinstance(a, IntImm) and a.value == 0):
                return make_const(a.dtype, 0)
        elif cls in (FloorDiv, Div) and isinstance(b, IntImm) and b.value == 1:
            return a
        elif cls in (FloorMod, Mod) and isinstance(b, IntImm) and b.value == 1:
            return make_const(a.dtype, 0)
    return cls(a, b)


def add(a, b):
    """``a + b`` as IR (constants fold).

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _arith(Add, a, b)


def sub(a, b):
    """``a - b`` as IR (constants fold).

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _arith(Sub, a, b)


def mul(a, b):
    """``a * b`` as IR (constants fold).

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _arith(Mul, a, b)


def div(a, b):
    """True division for floats; integer operands give truncated ``Div`` as in TVM.

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _arith(Div, a, b)


def truncdiv(a, b):
    """Integer division rounding toward zero (``Div``).

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _arith(Div, a, b)


def truncmod(a, b):
    """The remainder of ``truncdiv`` (``Mod``).

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _arith(Mod, a, b)


def floordiv(a, b):
    """Integer division rounding toward minus infinity (``FloorDiv``).

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    a, b = match_types(a, b)
    if dt.is_float(a.dtype):
        q = div(a, b)
        return call_intrin(q.dtype, "tir.floor", q)
    return _arith(FloorDiv, a, b)


def ceildiv(a, b):
    """Division rounding toward plus infinity: ``floordiv(a + b - 1, b)`` for integers (TVM's
    ``tir.ceildiv``), ``ceil(a / b)`` for floats.

    Parameters
    ----------
    a : PrimExpr or number
        The dividend.
    b : PrimExpr or number
        The divisor.

    Returns
    -------
    PrimExpr
        The expression.

    Examples
    --------
    >>> from tensorize.ir.expr import Var
    >>> str(ceildiv(Var("n"), 4))
    '(n + 3) // 4'
    """
    a, b = match_types(a, b)
    if dt.is_float(a.dtype):
        return call_intrin(a.dtype, "tir.ceil", div(a, b))
    return floordiv(a + (b - 1), b)


def floormod(a, b):
    """The remainder of ``floordiv`` (``FloorMod``), with the sign of ``b``.

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    a, b = match_types(a, b)
    if dt.is_float(a.dtype):
        q = div(a, b)
        return sub(a, mul(call_intrin(q.dtype, "tir.floor", q), b))
    return _arith(FloorMod, a, b)


def min_value_expr(a, b):
    """``Min(a, b)`` as IR.

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _arith(Min, a, b)


def max_value_expr(a, b):
    """``Max(a, b)`` as IR.

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _arith(Max, a, b)


def _compare(cls, a, b):
    a, b = match_types(a, b)
    if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)):
        x, y = a.value, b.value
        r = {EQ: x == y, NE: x != y, LT: x < y, LE: x <= y, GT: x > y, GE: x >= y}[cls]
        return IntImm("bool", r)
    return cls(a, b)


def logical_and(a, b):
    """``a and b`` as IR; a constant true operand is dropped.

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    a, b = convert(a), convert(b)
    if isinstance(a, IntImm):
        return b if a.value else a
    if isinstance(b, IntImm):
        return a if b.value else b
    return And(a, b)


def logical_or(a, b):
    """``a or b`` as IR; a constant false operand is dropped.

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    a, b = convert(a), convert(b)
    if isinstance(a, IntImm):
        return a if a.value else b
    if isinstance(b, IntImm):
        return b if b.value else a
    return Or(a, b)


def logical_not(a):
    """``not a`` as IR.

    Parameters
    ----------
    a : PrimExpr
        A boolean expression.

    Returns
    -------
    PrimExpr
        The expression.
    """
    a = convert(a)
    if isinstance(a, IntImm):
        return IntImm("bool", not a.value)
    return Not(a)


def call_intrin_binary(name: str, a, b):
    """A call of the built-in ``name`` on ``a`` and ``b``, of ``a``'s dtype.

    Parameters
    ----------
    name : str
        The operator, e.g. ``"tir.pow"``.
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    Call
        The call.
    """
    a, b = match_types(a, b)
    return call_intrin(a.dtype, name, a, b)


def call_intrin(dtype: str, op_name: str, *args) -> Call:
    """A call of the built-in ``op_name`` (``"tir.exp"``) returning ``dtype``.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.
    op_name : str
        The operator's name.
    *args : PrimExpr
        The arguments.

    Returns
    -------
    Call
        The call.
    """
    return Call(dtype, Op.get(op_name), args)


expr_scalar.install(
    add=add, sub=sub, mul=mul, div=div, floordiv=floordiv, floormod=floormod, truncdiv=truncdiv, truncmod=truncmod,
    make_const=make_const, const=const, convert=convert, cast=cast, match_types=match_types,
    logical_and=logical_and, logical_or=logical_or, logical_not=logical_not, min_value_expr=min_value_expr,
    max_value_expr=max_value_expr, call_intrin_binary=call_intrin_binary, call_intrin=call_intrin,
    _compare=_compare, _fold=_fold, _arith=_arith, _is_python_number=_is_python_number, _wrap_int=_wrap_int,
)
