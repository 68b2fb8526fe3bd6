"""Constants, conversion and operand type matching: ``make_const``, ``convert``, ``cast`` and
``match_types``, the first step of every builder in ``expr_build.py`` (``tensorize.ir.expr``
re-exports them).

>>> make_const("float32x4", 1).dtype
'float32x4'
>>> a, b = match_types(IntImm("int64", 2), 3)
>>> b.dtype
'int64'
"""
from __future__ import annotations

from typing import Any

from . import dtype as dt
from .expr_compound import Broadcast, IterVar
from .expr_scalar import Cast, EqualOp, FloatImm, IntImm, PrimExpr, StringImm


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
