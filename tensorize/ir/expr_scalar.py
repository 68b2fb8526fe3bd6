"""Expression nodes: the base ``PrimExpr`` with its Python operators, variables, constants,
arithmetic, comparison and logic (``tensorize.ir.expr`` is the face that gathers all expressions).

>>> from tensorize.ir.expr import Var
>>> e = Var("i") * 4 + 1
>>> type(e).__name__, e.dtype
('Add', 'int32')
"""
from __future__ import annotations

from typing import Any

from ..errors import TVMValueError
from . import dtype as dt
from .node import Node, _set
from .types import PointerType, ScalarType


class _Upper:
    """Functions of modules above this one that the nodes call at run time.

    ``expr_build`` installs the expression builders (``add``, ``convert``, ``call_intrin``, ...) and
    ``functor`` installs ``substitute`` when they load; ``tensorize.ir`` imports both, so every
    expression built through the package finds them. This keeps the nodes below the builders that
    construct them, with no import circle.
    """


_upper = _Upper()


def install(**functions) -> None:
    """Make ``functions`` available to the expression nodes (called by ``expr_build`` and ``functor``).

    Parameters
    ----------
    **functions : callable
        The functions by name (``cast``, ``add``, ...).
    """
    for name, fn in functions.items():
        setattr(_upper, name, fn)


class PrimExpr(Node):
    """An expression with a dtype. Supports Python arithmetic, comparison and indexing operators."""

    __slots__ = ("dtype",)

    @property
    def ty(self) -> "ScalarType":
        """The expression's type, as TVM's ``expr.ty`` (its ``dtype`` is the expression's dtype)."""
        return ScalarType(self.dtype)

    # -- arithmetic -----------------------------------------------------------------------
    def __add__(self, other):
        return _upper.add(self, other)

    def __radd__(self, other):
        return _upper.add(other, self)

    def __sub__(self, other):
        return _upper.sub(self, other)

    def __rsub__(self, other):
        return _upper.sub(other, self)

    def __mul__(self, other):
        return _upper.mul(self, other)

    def __rmul__(self, other):
        return _upper.mul(other, self)

    def __truediv__(self, other):
        return _upper.div(self, other)

    def __rtruediv__(self, other):
        return _upper.div(other, self)

    def __floordiv__(self, other):
        return _upper.floordiv(self, other)

    def __rfloordiv__(self, other):
        return _upper.floordiv(other, self)

    def __mod__(self, other):
        return _upper.floormod(self, other)

    def __rmod__(self, other):
        return _upper.floormod(other, self)

    def __neg__(self):
        if isinstance(self, IntImm):
            return IntImm(self.dtype, -self.value)
        if isinstance(self, FloatImm):
            return FloatImm(self.dtype, -self.value)
        return _upper.sub(_upper.make_const(self.dtype, 0), self)

    def __lshift__(self, other):
        return _upper.call_intrin_binary("tir.shift_left", self, other)

    def __rshift__(self, other):
        return _upper.call_intrin_binary("tir.shift_right", self, other)

    def __and__(self, other):
        if dt.is_bool(self.dtype):
            return _upper.logical_and(self, other)
        return _upper.call_intrin_binary("tir.bitwise_and", self, other)

    def __or__(self, other):
        if dt.is_bool(self.dtype):
            return _upper.logical_or(self, other)
        return _upper.call_intrin_binary("tir.bitwise_or", self, other)

    def __xor__(self, other):
        return _upper.call_intrin_binary("tir.bitwise_xor", self, other)

    def __invert__(self):
        if dt.is_bool(self.dtype):
            return Not(self)
        return _upper.call_intrin(self.dtype, "tir.bitwise_not", self)

    # -- comparison ------------------------------------------------------------------------
    def __lt__(self, other):
        return _upper._compare(LT, self, other)

    def __le__(self, other):
        return _upper._compare(LE, self, other)

    def __gt__(self, other):
        return _upper._compare(GT, self, other)

    def __ge__(self, other):
        return _upper._compare(GE, self, other)

    def __eq__(self, other):  # type: ignore[override]
        return EqualOp(self, other)

    def __ne__(self, other):  # type: ignore[override]
        return NotEqualOp(self, other)

    __hash__ = Node.__hash__

    def __bool__(self):
        raise TVMValueError(
            "cannot use a symbolic expression as a Python bool; use tensorize.tir.all/any, "
            "T.if_then_else, or compare with .same_as() for identity"
        )

    def equal(self, other) -> "EQ":
        """The symbolic ``==`` as an ``EQ`` node.

        Parameters
        ----------
        other : PrimExpr or number
            The other side.

        Returns
        -------
        EQ
            The comparison.
        """
        return _upper._compare(EQ, self, other)

    def astype(self, dtype: str) -> "PrimExpr":
        """This expression cast to ``dtype``.

        Parameters
        ----------
        dtype : str
            A dtype string, e.g. ``"float32x8"``.

        Returns
        -------
        PrimExpr
            The expression.
        """
        return _upper.cast(dtype, self)


class EqualOp:
    """Result of ``a == b`` on expressions: symbolic ``EQ`` when used as IR, identity when used as a bool
    (so that expressions work as dictionary keys and in ``in`` tests)."""

    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __bool__(self) -> bool:
        return self.a is self.b

    def asobject(self) -> "EQ":
        """The ``EQ`` node of this comparison.

        Returns
        -------
        EQ
            The node.
        """
        return _upper._compare(EQ, self.a, self.b)


class NotEqualOp(EqualOp):
    """The result of ``a != b`` on expressions: usable as a bool (identity) and as an ``NE`` node."""
    __slots__ = ()

    def __bool__(self) -> bool:
        return self.a is not self.b

    def asobject(self) -> "NE":
        """The ``NE`` node of this comparison.

        Returns
        -------
        NE
            The node.
        """
        return _upper._compare(NE, self.a, self.b)


# ------------------------------------------------------------------------------------------
# Leaves


class Var(PrimExpr):
    """A variable. Equal only to itself; ``name`` is a hint for printing.

    ``type_annotation`` is ``PointerType`` for buffer data pointers (dtype ``"handle"``)."""

    __slots__ = ("name", "type_annotation")
    _fields = ()
    _type_key = "tir.Var"

    def __init__(self, name: str = "v", dtype: str = "int32", type_annotation: Any = None, span=None):
        if isinstance(dtype, PointerType):
            type_annotation, dtype = dtype, "handle"
        _set(self, "name", name)
        _set(self, "dtype", dtype)
        _set(self, "type_annotation", type_annotation)
        _set(self, "span", span)

    @property
    def name_hint(self) -> str:
        """The variable's name."""
        return self.name

    def copy_with_suffix(self, suffix: str) -> "Var":
        """A new variable named ``name + suffix`` with the same dtype.

        Parameters
        ----------
        suffix : str
            The suffix.

        Returns
        -------
        Var
            The new variable.
        """
        return type(self)(self.name + suffix, self.dtype, self.type_annotation)

    def copy_with_name(self, name: str) -> "Var":
        """A new variable named ``name`` with the same dtype.

        Parameters
        ----------
        name : str
            The name.

        Returns
        -------
        Var
            The new variable.
        """
        return type(self)(name, self.dtype, self.type_annotation)


class SizeVar(Var):
    """A variable known to be non-negative (a shape dimension)."""

    __slots__ = ()
    _type_key = "tir.SizeVar"


# Values that need no check or normalisation when building an IntImm of the common dtypes.
_INT_LIMITS = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
               "int8": (-128, 127), "int16": (-(1 << 15), (1 << 15) - 1), "bool": (0, 1)}


class IntImm(PrimExpr):
    """An integer (or bool) constant."""

    __slots__ = ("value",)
    _fields = ("value",)
    _type_key = "IntImm"

    def __init__(self, dtype: str, value: int, span=None):
        value = int(value)
        limits = _INT_LIMITS.get(dtype)
        if limits is None or not limits[0] <= value <= limits[1]:
            t = dt.parse(dtype)
            if t.code == "bool":
                value = int(bool(value))
            elif t.code == "int" and t.bits < 64 and not -(1 << (t.bits - 1)) <= value < (1 << (t.bits - 1)):
                raise TVMValueError(f"IntImm {value} does not fit in {dtype}; use a wider dtype such as int64")
            elif t.code == "uint" and t.bits < 64 and not 0 <= value < (1 << t.bits):
                raise TVMValueError(f"IntImm {value} does not fit in {dtype}")
        _set(self, "dtype", dtype)
        _set(self, "value", value)
        _set(self, "span", span)

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __bool__(self) -> bool:
        return bool(self.value)

    __hash__ = PrimExpr.__hash__

    def __eq__(self, other):  # type: ignore[override]
        if isinstance(other, (int, bool)) and not isinstance(other, PrimExpr):
            return self.value == other
        return EqualOp(self, other)

    def __ne__(self, other):  # type: ignore[override]
        if isinstance(other, (int, bool)):
            return self.value != other
        return NotEqualOp(self, other)


class FloatImm(PrimExpr):
    """A floating-point constant."""

    __slots__ = ("value",)
    _fields = ("value",)
    _type_key = "FloatImm"

    def __init__(self, dtype: str, value: float, span=None):
        _set(self, "dtype", dtype)
        _set(self, "value", float(value))
        _set(self, "span", span)

    def __float__(self) -> float:
        return self.value


class StringImm(PrimExpr):
    """A string constant (used as an argument of calls)."""

    __slots__ = ("value",)
    _fields = ("value",)
    _type_key = "StringImm"

    def __init__(self, value: str, span=None):
        _set(self, "dtype", "handle")
        _set(self, "value", str(value))
        _set(self, "span", span)


# ------------------------------------------------------------------------------------------
# Operations


class Cast(PrimExpr):
    """``value`` converted to ``dtype``."""
    __slots__ = ("value",)
    _fields = ("value",)
    _type_key = "tir.Cast"

    def __init__(self, dtype: str, value: PrimExpr, span=None):
        _set(self, "dtype", dtype)
        _set(self, "value", _upper.convert(value))
        _set(self, "span", span)


class BinaryOpExpr(PrimExpr):
    """Base of two-operand operations; ``a`` and ``b`` have the same dtype."""

    __slots__ = ("a", "b")
    _fields = ("a", "b")

    def __init__(self, a, b, span=None):
        a, b = _upper.match_types(a, b)
        _set(self, "a", a)
        _set(self, "b", b)
        _set(self, "dtype", self._result_dtype(a.dtype))
        _set(self, "span", span)

    @staticmethod
    def _result_dtype(operand_dtype: str) -> str:
        return operand_dtype


def _binary(name: str, doc: str) -> type:
    return type(name, (BinaryOpExpr,), {"__slots__": (), "_type_key": f"tir.{name}", "__doc__": doc})


Add = _binary("Add", "a + b")
Sub = _binary("Sub", "a - b")
Mul = _binary("Mul", "a * b")
Div = _binary("Div", "a / b (true division for floats, truncated for integers)")
Mod = _binary("Mod", "truncated remainder of a / b")
FloorDiv = _binary("FloorDiv", "floor(a / b)")
FloorMod = _binary("FloorMod", "a - floor(a / b) * b")
Min = _binary("Min", "min(a, b)")
Max = _binary("Max", "max(a, b)")


class CmpOpExpr(BinaryOpExpr):
    """Base of the comparison nodes (``EQ``, ``NE``, ``LT``, ``LE``, ``GT``, ``GE``); their dtype is bool."""
    __slots__ = ()

    @staticmethod
    def _result_dtype(operand_dtype: str) -> str:
        return dt.with_lanes("bool", dt.lanes_of(operand_dtype))


def _cmp(name: str, doc: str) -> type:
    return type(name, (CmpOpExpr,), {"__slots__": (), "_type_key": f"tir.{name}", "__doc__": doc})


EQ = _cmp("EQ", "a == b")
NE = _cmp("NE", "a != b")
LT = _cmp("LT", "a < b")
LE = _cmp("LE", "a <= b")
GT = _cmp("GT", "a > b")
GE = _cmp("GE", "a >= b")


class And(BinaryOpExpr):
    """Logical and of two bools."""

    __slots__ = ()
    _type_key = "tir.And"


class Or(BinaryOpExpr):
    """Logical or of two bools."""

    __slots__ = ()
    _type_key = "tir.Or"


class Not(PrimExpr):
    """Logical negation of a boolean expression."""
    __slots__ = ("a",)
    _fields = ("a",)
    _type_key = "tir.Not"

    def __init__(self, a, span=None):
        a = _upper.convert(a)
        _set(self, "a", a)
        _set(self, "dtype", a.dtype)
        _set(self, "span", span)


class Select(PrimExpr):
    """``true_value if condition else false_value``; both sides may be evaluated."""

    __slots__ = ("condition", "true_value", "false_value")
    _fields = ("condition", "true_value", "false_value")
    _type_key = "tir.Select"

    def __init__(self, condition, true_value, false_value, span=None):
        true_value, false_value = _upper.match_types(true_value, false_value)
        _set(self, "condition", _upper.convert(condition))
        _set(self, "true_value", true_value)
        _set(self, "false_value", false_value)
        _set(self, "dtype", true_value.dtype)
        _set(self, "span", span)
