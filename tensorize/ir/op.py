"""Built-in operators and the functions that build calls of them (``tvm.tir.exp``, ``T.max``, ...).

>>> from tensorize.ir.expr import Var
>>> x = Var("x", "float32")
>>> exp(x).op.name
'tir.exp'
"""
from __future__ import annotations

from typing import Sequence

from . import dtype as dt
from .expr import (
    BINARY_MATH,
    BITWISE,
    UNARY_MATH,
    Call,
    FloatImm,
    IntImm,
    Op,
    PrimExpr,
    Select,
    StringImm,
    cast,
    convert,
    logical_and,
    logical_or,
    make_const,
    match_types,
    max_value_expr,
    min_value_expr,
)
from .expr_build import call_intrin
from .op_call import call_extern, call_llvm_intrin, call_llvm_pure_intrin, call_pure_extern  # noqa: F401

def _unary(name: str):
    def build(x: PrimExpr) -> PrimExpr:
        x = convert(x)
        result_dtype = dt.with_lanes("bool", dt.lanes_of(x.dtype)) if name in ("isnan", "isinf", "isfinite") else x.dtype
        return Call(result_dtype, Op.get("tir." + name), (x,))

    build.__name__ = name
    build.__doc__ = f"``{name}(x)`` elementwise."
    return build


def _binary(name: str):
    def build(x, y) -> PrimExpr:
        x, y = match_types(x, y)
        return Call(x.dtype, Op.get("tir." + name), (x, y))

    build.__name__ = name
    build.__doc__ = f"``{name}(x, y)`` elementwise."
    return build


exp, exp2, exp10, log, log2, log10, log1p, sqrt, rsqrt, tanh, sigmoid = (_unary(n) for n in UNARY_MATH[:11])
fabs, floor, ceil, round, nearbyint, trunc, erf, sin, cos, tan, sinh, cosh = (_unary(n) for n in UNARY_MATH[11:23])
asin, acos, atan, asinh, acosh, atanh, isnan, isinf, isfinite, popcount, clz = (_unary(n) for n in UNARY_MATH[23:])
pow, atan2, fmod, hypot, copysign, nextafter, ldexp = (_binary(n) for n in BINARY_MATH)
power = pow
abs = fabs  # noqa: A001 - TVM names it abs too


def bitwise_and(x, y):
    """``x & y`` as IR.

    Parameters
    ----------
    x : PrimExpr or int
        The left operand.
    y : PrimExpr or int
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return x & y


def bitwise_or(x, y):
    """``x | y`` as IR.

    Parameters
    ----------
    x : PrimExpr or int
        The left operand.
    y : PrimExpr or int
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return x | y


def bitwise_xor(x, y):
    """``x ^ y`` as IR.

    Parameters
    ----------
    x : PrimExpr or int
        The left operand.
    y : PrimExpr or int
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return x ^ y


def bitwise_not(x):
    """``~x`` as IR.

    Parameters
    ----------
    x : PrimExpr or int
        The operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return ~convert(x)


def shift_left(x, y):
    """``x << y`` as IR.

    Parameters
    ----------
    x : PrimExpr or int
        The left operand.
    y : PrimExpr or int
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return convert(x) << y


def shift_right(x, y):
    """``x >> y`` as IR.

    Parameters
    ----------
    x : PrimExpr or int
        The left operand.
    y : PrimExpr or int
        The right operand.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return convert(x) >> y


def min(a, b, *rest):  # noqa: A001 - TVM's name
    """``min(a, b, ...)`` as IR.

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.
    *rest : PrimExpr or number
        More operands.

    Returns
    -------
    PrimExpr
        The expression.
    """
    result = min_value_expr(a, b)
    for r in rest:
        result = min_value_expr(result, r)
    return result


def max(a, b, *rest):  # noqa: A001 - TVM's name
    """``max(a, b, ...)`` as IR.

    Parameters
    ----------
    a : PrimExpr or number
        The left operand.
    b : PrimExpr or number
        The right operand.
    *rest : PrimExpr or number
        More operands.

    Returns
    -------
    PrimExpr
        The expression.

    Examples
    --------
    >>> tvm.tir.max(tvm.tir.const(2), 5)
    5
    """
    result = max_value_expr(a, b)
    for r in rest:
        result = max_value_expr(result, r)
    return result


def if_then_else(cond, t, f) -> PrimExpr:
    """``t if cond else f`` where only the taken side is evaluated (guards out-of-bounds loads).

    Parameters
    ----------
    cond : PrimExpr
        The condition.
    t : PrimExpr
        The value when true.
    f : PrimExpr
        The value when false.

    Returns
    -------
    PrimExpr
        The expression.
    """
    cond = convert(cond)
    t, f = match_types(t, f)
    if isinstance(cond, IntImm):
        return t if cond.value else f
    return Call(t.dtype, Op.get("tir.if_then_else"), (cond, t, f))


def Select_(cond, t, f) -> Select:  # noqa: N802
    """``Select(cond, t, f)``: both sides evaluated, one kept.

    Parameters
    ----------
    cond : PrimExpr
        The condition.
    t : PrimExpr
        The value when true.
    f : PrimExpr
        The value when false.

    Returns
    -------
    Select
        The node.
    """
    return Select(cond, t, f)


def likely(cond) -> PrimExpr:
    """``cond`` marked as likely true (a branch hint).

    Parameters
    ----------
    cond : PrimExpr
        The condition.

    Returns
    -------
    PrimExpr
        The expression.
    """
    cond = convert(cond)
    return Call(cond.dtype, Op.get("tir.likely"), (cond,))


def reinterpret(dtype: str, value) -> PrimExpr:
    """The bits of ``value`` read as ``dtype`` (same total width).

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.
    value : PrimExpr
        The value.

    Returns
    -------
    PrimExpr
        The expression.
    """
    value = convert(value)
    return Call(dtype, Op.get("tir.reinterpret"), (value,))


def max_value(dtype: str) -> PrimExpr:
    """The largest value of ``dtype``.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    PrimExpr
        The expression.
    """
    t = dt.parse(dtype)
    if t.code == "int":
        return IntImm(dtype, (1 << (t.bits - 1)) - 1)
    if t.code == "uint":
        return IntImm(dtype, (1 << t.bits) - 1)
    if t.code == "bool":
        return IntImm(dtype, 1)
    if t.code == "float":
        return FloatImm(dtype, {16: 65504.0, 32: 3.4028234663852886e38, 64: 1.7976931348623157e308}[t.bits])
    if t.code == "bfloat":
        return FloatImm(dtype, 3.3895313892515355e38)
    raise ValueError(f"no max_value for {dtype}")


def min_value(dtype: str) -> PrimExpr:
    """The smallest value of ``dtype``.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    PrimExpr
        The expression.
    """
    t = dt.parse(dtype)
    if t.code == "int":
        return IntImm(dtype, -(1 << (t.bits - 1)))
    if t.code in ("uint", "bool"):
        return IntImm(dtype, 0)
    return FloatImm(dtype, -max_value(dtype).value)


def infinity(dtype: str) -> PrimExpr:
    """Positive infinity of a float ``dtype``.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    FloatImm
        The constant.
    """
    return FloatImm(dtype, float("inf"))


def all(*conds) -> PrimExpr:  # noqa: A001 - TVM's name
    """Logical and of all ``conds``.

    Parameters
    ----------
    *conds : PrimExpr
        Boolean expressions.

    Returns
    -------
    PrimExpr
        The expression.
    """
    result = convert(True)
    for c in conds:
        result = logical_and(result, c)
    return result


def any(*conds) -> PrimExpr:  # noqa: A001 - TVM's name
    """Logical or of all ``conds``.

    Parameters
    ----------
    *conds : PrimExpr
        Boolean expressions.

    Returns
    -------
    PrimExpr
        The expression.
    """
    result = convert(False)
    for c in conds:
        result = logical_or(result, c)
    return result


def const(value, dtype: str | None = None) -> PrimExpr:
    """``tvm.tir.const(value, dtype)``: a constant; dtype defaults to int32/float32 by the value.

    Parameters
    ----------
    value : int, float or bool
        The value.
    dtype : str, optional
        The dtype.

    Returns
    -------
    PrimExpr
        The expression.

    Examples
    --------
    >>> tvm.tir.const(3).dtype, tvm.tir.const(0.5).dtype
    ('int32', 'float32')
    """
    if dtype is None:
        return convert(value)
    return make_const(dtype, value)


__all__ = [n for n in dir() if not n.startswith("_")] + ["cast"]
