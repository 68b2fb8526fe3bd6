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

from typing import Any

from . import dtype as dt
from . import expr_scalar
from .expr_compound import Broadcast, Call, IterVar, Op
from .expr_scalar import (
    EQ, GE, GT, LE, LT, NE, Add, And, Cast, Div, EqualOp, FloatImm, FloorDiv, FloorMod, IntImm, Max, Min, Mod, Mul, Not,
    Or, PrimExpr, StringImm, Sub,
)




def make_const(dtype: str, value) -> PrimExpr:
    """A constant of ``dtype``; vector dtypes give a Broadcast.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.
    value : int, float or bool
        The value.

    Returns
    -------
    PrimExpr
        The expression.
    """
    lanes = dt.lanes_of(dtype)
    if lanes > 1:
        return Broadcast(make_const(dt.element_of(dtype), value), lanes)
    if dt.is_float(dtype):
        return FloatImm(dtype, value)
    return IntImm(dtype, value)


const = make_const


def convert(value: Any) -> Any:
    """Python numbers to IR constants (int -> int32 or int64, float -> float32, bool -> bool);
    expressions, buffers and other nodes pass through.

    Parameters
    ----------
    value : any
        A number, an expression or another node.

    Returns
    -------
    any
        The IR value.
    """
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, EqualOp):
        return value.asobject()
    if isinstance(value, IterVar):  # TVM converts an IterVar to its variable in expressions
        return value.var
    if isinstance(value, bool):
        return IntImm("bool", value)
    if isinstance(value, int):
        return IntImm("int32" if -(1 << 31) <= value < (1 << 31) else "int64", value)
    if isinstance(value, float):
        return FloatImm("float32", value)
    if isinstance(value, str):
        return StringImm(value)
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return make_const(dt.from_numpy(value.dtype), value.item())
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    return value


def _is_python_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def match_types(a, b) -> tuple[PrimExpr, PrimExpr]:
    """Convert and match the dtypes of two operands the way TVM's operators do.

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.

    Returns
    -------
    tuple of PrimExpr
        The two operands with one dtype.
    """
    if isinstance(a, PrimExpr) and isinstance(b, PrimExpr) and a.dtype == b.dtype:
        return a, b  # the common case, answered before any conversion
    if _is_python_number(a) and isinstance(b, PrimExpr):
        return make_const(b.dtype if not (isinstance(a, float) and dt.is_int(b.dtype)) else "float32", a), b
    if _is_python_number(b) and isinstance(a, PrimExpr):
        return a, make_const(a.dtype if not (isinstance(b, float) and dt.is_int(a.dtype)) else "float32", b)
    a, b = convert(a), convert(b)
    if a.dtype == b.dtype:
        return a, b
    ta, tb = dt.parse(a.dtype), dt.parse(b.dtype)
    if ta.lanes != tb.lanes:
        if ta.lanes == 1:
            a = Broadcast(a, tb.lanes)
            ta = dt.parse(a.dtype)
        elif tb.lanes == 1:
            b = Broadcast(b, ta.lanes)
            tb = dt.parse(b.dtype)
        if a.dtype == b.dtype:
            return a, b
    # Constants adopt the other side's type.
    if isinstance(a, (IntImm, FloatImm)) and not isinstance(b, (IntImm, FloatImm)):
        return make_const(b.dtype, a.value), b
    if isinstance(b, (IntImm, FloatImm)) and not isinstance(a, (IntImm, FloatImm)):
        return a, make_const(a.dtype, b.value)
    if ta.code in ("float", "bfloat") and tb.code not in ("float", "bfloat"):
        return a, cast(a.dtype, b)
    if tb.code in ("float", "bfloat") and ta.code not in ("float", "bfloat"):
        return cast(b.dtype, a), b
    if ta.code == tb.code or {ta.code, tb.code} <= {"int", "uint"}:
        if ta.bits >= tb.bits:
            return a, cast(a.dtype if ta.code == tb.code or ta.code == "int" else dt.with_lanes(f"int{ta.bits}", ta.lanes), b)
        return cast(b.dtype, a), b
    if ta.code == "bool":
        return cast(b.dtype, a), b
    if tb.code == "bool":
        return a, cast(a.dtype, b)
    raise TypeError(f"cannot match operand types {a.dtype} and {b.dtype}; cast one side explicitly")


def cast(dtype: str, value) -> PrimExpr:
    """``value`` converted to ``dtype`` (constants fold).

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.
    value : PrimExpr or number
        The value.

    Returns
    -------
    PrimExpr
        The expression.
    """
    value = convert(value)
    if value.dtype == dtype:
        return value
    if isinstance(value, IntImm) and dt.lanes_of(dtype) == 1:
        if dt.is_float(dtype):
            return FloatImm(dtype, float(value.value))
        if dt.is_int(dtype) or dt.is_bool(dtype):
            return IntImm(dtype, _wrap_int(dtype, value.value))
    if isinstance(value, FloatImm) and dt.lanes_of(dtype) == 1:
        if dt.is_float(dtype):
            return FloatImm(dtype, value.value)
        if dt.is_int(dtype):
            return IntImm(dtype, _wrap_int(dtype, int(value.value)))
    if dt.lanes_of(dtype) > 1 and dt.lanes_of(value.dtype) == 1:
        return Broadcast(cast(dt.element_of(dtype), value), dt.lanes_of(dtype))
    return Cast(dtype, value)


def _wrap_int(dtype: str, value: int) -> int:
    t = dt.parse(dtype)
    if t.code == "bool":
        return int(bool(value))
    mask = (1 << t.bits) - 1
    value &= mask
    if t.code == "int" and value >= 1 << (t.bits - 1):
        value -= 1 << t.bits
    return value


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
