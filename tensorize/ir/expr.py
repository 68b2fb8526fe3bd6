"""Expressions of TensorIR.

Python operators on expressions build IR, as in TVM: ``i * 4 + j`` is ``Add(Mul(i, 4), j)``.
Integer constants fold (``IntImm(2) * 3`` is ``IntImm(6)``) and operand dtypes are matched the
way TVM matches them (a Python constant takes the other side's dtype; int32 meets int64 as int64).

>>> i = Var("i", "int32")
>>> e = i * 4 + 1
>>> type(e).__name__, e.dtype
('Add', 'int32')
"""
from __future__ import annotations

from ..errors import TVMValueError

import enum
from typing import Any, Sequence

from . import dtype as dt
from .node import Node, _set


class PrimExpr(Node):
    """An expression with a dtype. Supports Python arithmetic, comparison and indexing operators."""

    __slots__ = ("dtype",)

    # -- arithmetic -----------------------------------------------------------------------
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return sub(self, other)

    def __rsub__(self, other):
        return sub(other, self)

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(other, self)

    def __truediv__(self, other):
        return div(self, other)

    def __rtruediv__(self, other):
        return div(other, self)

    def __floordiv__(self, other):
        return floordiv(self, other)

    def __rfloordiv__(self, other):
        return floordiv(other, self)

    def __mod__(self, other):
        return floormod(self, other)

    def __rmod__(self, other):
        return floormod(other, self)

    def __neg__(self):
        if isinstance(self, IntImm):
            return IntImm(self.dtype, -self.value)
        if isinstance(self, FloatImm):
            return FloatImm(self.dtype, -self.value)
        return sub(make_const(self.dtype, 0), self)

    def __lshift__(self, other):
        return call_intrin_binary("tir.shift_left", self, other)

    def __rshift__(self, other):
        return call_intrin_binary("tir.shift_right", self, other)

    def __and__(self, other):
        if dt.is_bool(self.dtype):
            return logical_and(self, other)
        return call_intrin_binary("tir.bitwise_and", self, other)

    def __or__(self, other):
        if dt.is_bool(self.dtype):
            return logical_or(self, other)
        return call_intrin_binary("tir.bitwise_or", self, other)

    def __xor__(self, other):
        return call_intrin_binary("tir.bitwise_xor", self, other)

    def __invert__(self):
        if dt.is_bool(self.dtype):
            return Not(self)
        from .op import call_intrin

        return call_intrin(self.dtype, "tir.bitwise_not", self)

    # -- comparison ------------------------------------------------------------------------
    def __lt__(self, other):
        return _compare(LT, self, other)

    def __le__(self, other):
        return _compare(LE, self, other)

    def __gt__(self, other):
        return _compare(GT, self, other)

    def __ge__(self, other):
        return _compare(GE, self, other)

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
        """The symbolic ``==`` as an ``EQ`` node."""
        return _compare(EQ, self, other)

    def astype(self, dtype: str) -> "PrimExpr":
        return cast(dtype, self)


class EqualOp:
    """Result of ``a == b`` on expressions: symbolic ``EQ`` when used as IR, identity when used as a bool
    (so that expressions work as dictionary keys and in ``in`` tests)."""

    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __bool__(self) -> bool:
        return self.a is self.b

    def asobject(self) -> "EQ":
        return _compare(EQ, self.a, self.b)


class NotEqualOp(EqualOp):
    __slots__ = ()

    def __bool__(self) -> bool:
        return self.a is not self.b

    def asobject(self) -> "NE":
        return _compare(NE, self.a, self.b)


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
        return self.name

    def copy_with_suffix(self, suffix: str) -> "Var":
        return type(self)(self.name + suffix, self.dtype, self.type_annotation)

    def copy_with_name(self, name: str) -> "Var":
        return type(self)(name, self.dtype, self.type_annotation)


class SizeVar(Var):
    """A variable known to be non-negative (a shape dimension)."""

    __slots__ = ()
    _type_key = "tir.SizeVar"


class PointerType:
    """The type of a buffer's data pointer: element dtype and storage scope (``"global"``, ``"shared"``, ...)."""

    __slots__ = ("element_dtype", "storage_scope")

    def __init__(self, element_dtype: str, storage_scope: str = "global"):
        self.element_dtype, self.storage_scope = element_dtype, storage_scope or "global"

    def __eq__(self, other):
        return isinstance(other, PointerType) and (self.element_dtype, self.storage_scope) == (other.element_dtype, other.storage_scope)

    def __hash__(self):
        return hash((self.element_dtype, self.storage_scope))

    def __repr__(self):
        return f"PointerType({self.element_dtype!r}, {self.storage_scope!r})"


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
    __slots__ = ("value",)
    _fields = ("value",)
    _type_key = "tir.Cast"

    def __init__(self, dtype: str, value: PrimExpr, span=None):
        _set(self, "dtype", dtype)
        _set(self, "value", convert(value))
        _set(self, "span", span)


class BinaryOpExpr(PrimExpr):
    """Base of two-operand operations; ``a`` and ``b`` have the same dtype."""

    __slots__ = ("a", "b")
    _fields = ("a", "b")

    def __init__(self, a, b, span=None):
        a, b = match_types(a, b)
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
    __slots__ = ("a",)
    _fields = ("a",)
    _type_key = "tir.Not"

    def __init__(self, a, span=None):
        a = convert(a)
        _set(self, "a", a)
        _set(self, "dtype", a.dtype)
        _set(self, "span", span)


class Select(PrimExpr):
    """``true_value if condition else false_value``; both sides may be evaluated."""

    __slots__ = ("condition", "true_value", "false_value")
    _fields = ("condition", "true_value", "false_value")
    _type_key = "tir.Select"

    def __init__(self, condition, true_value, false_value, span=None):
        true_value, false_value = match_types(true_value, false_value)
        _set(self, "condition", convert(condition))
        _set(self, "true_value", true_value)
        _set(self, "false_value", false_value)
        _set(self, "dtype", true_value.dtype)
        _set(self, "span", span)


class BufferLoad(PrimExpr):
    """``buffer[indices]``. A ``Ramp`` index makes a vector load."""

    __slots__ = ("buffer", "indices", "predicate")
    _fields = ("buffer", "indices", "predicate")
    _type_key = "tir.BufferLoad"

    def __init__(self, buffer, indices: Sequence, predicate=None, span=None):
        indices = tuple(convert(i) for i in indices)
        lanes = 1
        for index in indices:
            lanes *= dt.lanes_of(index.dtype)
        _set(self, "buffer", buffer)
        _set(self, "indices", indices)
        _set(self, "predicate", predicate)
        _set(self, "dtype", dt.with_lanes(buffer.dtype, dt.lanes_of(buffer.dtype) * lanes))
        _set(self, "span", span)


class ProducerLoad(PrimExpr):
    """``tensor[indices]`` on a ``te`` tensor (before ``create_prim_func`` turns it into a BufferLoad)."""

    __slots__ = ("producer", "indices")
    _fields = ("producer", "indices")
    _type_key = "tir.ProducerLoad"

    def __init__(self, producer, indices: Sequence, span=None):
        _set(self, "producer", producer)
        _set(self, "indices", tuple(convert(i) for i in indices))
        _set(self, "dtype", producer.dtype)
        _set(self, "span", span)


class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes - 1) * stride]``."""

    __slots__ = ("base", "stride", "lanes")
    _fields = ("base", "stride", "lanes")
    _type_key = "tir.Ramp"

    def __init__(self, base, stride, lanes: int, span=None):
        base, stride = match_types(base, stride)
        lanes = int(lanes)
        _set(self, "base", base)
        _set(self, "stride", stride)
        _set(self, "lanes", lanes)
        _set(self, "dtype", dt.with_lanes(base.dtype, lanes))
        _set(self, "span", span)


class Broadcast(PrimExpr):
    """The vector with ``value`` in each of ``lanes`` lanes."""

    __slots__ = ("value", "lanes")
    _fields = ("value", "lanes")
    _type_key = "tir.Broadcast"

    def __init__(self, value, lanes: int, span=None):
        value = convert(value)
        lanes = int(lanes)
        _set(self, "value", value)
        _set(self, "lanes", lanes)
        _set(self, "dtype", dt.with_lanes(value.dtype, lanes))
        _set(self, "span", span)


class Shuffle(PrimExpr):
    """Concatenate ``vectors`` and pick lanes by ``indices``."""

    __slots__ = ("vectors", "indices")
    _fields = ("vectors", "indices")
    _type_key = "tir.Shuffle"

    def __init__(self, vectors: Sequence, indices: Sequence, span=None):
        vectors = tuple(convert(v) for v in vectors)
        indices = tuple(convert(i) for i in indices)
        _set(self, "vectors", vectors)
        _set(self, "indices", indices)
        _set(self, "dtype", dt.with_lanes(dt.element_of(vectors[0].dtype), len(indices)))
        _set(self, "span", span)


class Let(PrimExpr):
    """``let var = value in body``."""

    __slots__ = ("var", "value", "body")
    _fields = ("var", "value", "body")
    _type_key = "tir.Let"

    def __init__(self, var: Var, value, body, span=None):
        _set(self, "var", var)
        _set(self, "value", convert(value))
        body = convert(body)
        _set(self, "body", body)
        _set(self, "dtype", body.dtype)
        _set(self, "span", span)


class CallEffectKind(enum.IntEnum):
    EXPR_ANNOTATION = 0
    PURE = 1
    READ_STATE = 2
    UPDATE_STATE = 3
    OPAQUE = 4


class Op:
    """A named built-in operator (``tir.exp``, ``tir.call_llvm_pure_intrin``, ...). Interned by name."""

    __slots__ = ("name", "effect")
    _registry: dict[str, "Op"] = {}

    def __init__(self, name: str, effect: CallEffectKind = CallEffectKind.PURE):
        self.name, self.effect = name, effect

    @classmethod
    def get(cls, name: str) -> "Op":
        """The operator named ``name`` (``"tir.exp"``); unknown names raise ``ValueError``."""
        op = cls._registry.get(name)
        if op is None:
            raise TVMValueError(f"unknown operator {name!r}; registered: {', '.join(sorted(cls._registry))}")
        return op

    @classmethod
    def register(cls, name: str, effect: CallEffectKind = CallEffectKind.PURE) -> "Op":
        op = cls._registry.get(name)
        if op is None:
            op = cls._registry[name] = cls(name, effect)
        return op

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def __reduce__(self):
        return (Op.get, (self.name,))


class Call(PrimExpr):
    """A call of a built-in ``Op`` (math, hardware intrinsic, extern function) with ``args``."""

    __slots__ = ("op", "args")
    _fields = ("op", "args")
    _type_key = "tir.Call"

    def __init__(self, dtype: str, op, args: Sequence, span=None):
        if isinstance(op, str):
            op = Op.get(op)
        _set(self, "dtype", dtype)
        _set(self, "op", op)
        _set(self, "args", tuple(convert(a) for a in args))
        _set(self, "span", span)


class CommReducer(Node):
    """A commutative reducer: ``result`` combines ``lhs`` and ``rhs`` (one variable per value);
    ``identity_element`` starts the reduction. ``te.sum`` / ``te.comm_reducer`` build these.

    >>> x, y = Var("x", "float32"), Var("y", "float32")
    >>> r = CommReducer([x], [y], [x + y], [FloatImm("float32", 0.0)])
    >>> type(r([FloatImm("float32", 1.0)], [y])[0]).__name__
    'Add'
    """

    __slots__ = ("lhs", "rhs", "result", "identity_element")
    _fields = ("lhs", "rhs", "result", "identity_element")
    _type_key = "tir.CommReducer"

    def __init__(self, lhs: Sequence[Var], rhs: Sequence[Var], result: Sequence, identity_element: Sequence, span=None):
        _set(self, "lhs", tuple(lhs))
        _set(self, "rhs", tuple(rhs))
        _set(self, "result", tuple(convert(r) for r in result))
        _set(self, "identity_element", tuple(convert(e) for e in identity_element))
        _set(self, "span", span)

    def __call__(self, a: Sequence, b: Sequence) -> list:
        """The combined values for operands ``a`` (accumulators) and ``b`` (new values)."""
        from .functor import substitute

        if len(a) != len(self.lhs) or len(b) != len(self.rhs):
            raise TVMValueError(f"reducer takes {len(self.lhs)} value(s) per side, got {len(a)} and {len(b)}")
        mapping = {}
        for var, value in zip(self.lhs, a):
            mapping[var] = value
        for var, value in zip(self.rhs, b):
            mapping[var] = value
        return [substitute(r, mapping) for r in self.result]


class Reduce(PrimExpr):
    """A reduction of ``source`` over the reduction ``axis`` IterVars with ``combiner``, counting only
    points where ``condition`` holds; value number ``value_index`` of a multi-value reduction.
    Only ``te.compute`` bodies hold these (at the top level)."""

    __slots__ = ("combiner", "source", "init", "axis", "condition", "value_index")
    _fields = ("combiner", "source", "init", "axis", "condition", "value_index")
    _type_key = "tir.Reduce"

    def __init__(self, combiner: CommReducer, source: Sequence, axis: Sequence["IterVar"], condition=True,
                 value_index: int = 0, init: Sequence = (), span=None):
        source = tuple(convert(s) for s in source)
        _set(self, "combiner", combiner)
        _set(self, "source", source)
        _set(self, "init", tuple(convert(i) for i in (init or ())))
        _set(self, "axis", tuple(axis))
        _set(self, "condition", convert(condition))
        _set(self, "value_index", int(value_index))
        _set(self, "dtype", source[int(value_index)].dtype)
        _set(self, "span", span)


class IterVar(Node):
    """An iteration variable with domain ``dom`` (a Range) and kind ``iter_type``.

    Block iterators use DataPar (spatial ``S``), CommReduce (reduce ``R``), Ordered (scan) or
    Opaque; thread-bound loops use ThreadIndex with ``thread_tag``."""

    DataPar = 0
    ThreadIndex = 1
    CommReduce = 2
    Ordered = 3
    DimInfo = 4
    Opaque = 5
    Unrolled = 6
    Vectorized = 7
    Parallel = 8
    Tensorized = 9

    __slots__ = ("dom", "var", "iter_type", "thread_tag")
    _fields = ("dom", "var", "iter_type", "thread_tag")
    _type_key = "tir.IterVar"

    def __init__(self, dom, var, iter_type: int, thread_tag: str = "", span=None):
        if dom is not None and not isinstance(dom, Range):
            dom = Range.from_min_extent(0, dom) if not isinstance(dom, (tuple, list)) else Range(*dom)
        if isinstance(var, str):
            var = Var(var, dom.extent.dtype if dom is not None else "int32")
        _set(self, "dom", dom)
        _set(self, "var", var)
        _set(self, "iter_type", int(iter_type))
        _set(self, "thread_tag", thread_tag)
        _set(self, "span", span)

    # In expressions an IterVar stands for its variable (``k + 1`` with ``k = te.reduce_axis(...)``).
    __add__ = lambda self, o: add(self.var, o)  # noqa: E731
    __radd__ = lambda self, o: add(o, self.var)  # noqa: E731
    __sub__ = lambda self, o: sub(self.var, o)  # noqa: E731
    __rsub__ = lambda self, o: sub(o, self.var)  # noqa: E731
    __mul__ = lambda self, o: mul(self.var, o)  # noqa: E731
    __rmul__ = lambda self, o: mul(o, self.var)  # noqa: E731
    __floordiv__ = lambda self, o: floordiv(self.var, o)  # noqa: E731
    __mod__ = lambda self, o: floormod(self.var, o)  # noqa: E731
    __lt__ = lambda self, o: self.var < o  # noqa: E731
    __le__ = lambda self, o: self.var <= o  # noqa: E731
    __gt__ = lambda self, o: self.var > o  # noqa: E731
    __ge__ = lambda self, o: self.var >= o  # noqa: E731
    __hash__ = Node.__hash__


class Range(Node):
    """The half-open interval ``[min, min + extent)``. ``Range(begin, end)`` as in TVM;
    ``Range.from_min_extent(min, extent)`` for the other spelling."""

    __slots__ = ("min", "extent")
    _fields = ("min", "extent")
    _type_key = "Range"

    def __init__(self, begin, end=None, span=None):
        if end is None:
            begin, end = 0, begin
        begin, end = convert(begin), convert(end)
        begin, end = match_types(begin, end)
        _set(self, "min", begin)
        _set(self, "extent", sub(end, begin))
        _set(self, "span", span)

    @staticmethod
    def from_min_extent(min_value, extent, span=None) -> "Range":
        r = object.__new__(Range)
        min_value, extent = match_types(convert(min_value), convert(extent))
        _set(r, "min", min_value)
        _set(r, "extent", extent)
        _set(r, "span", span)
        return r


# The builders live in expr_build.py; they are looked up at call time by the classes above.
from .expr_build import (  # noqa: E402,F401
    _compare, _fold, _arith, _is_python_number, _wrap_int, add, call_intrin_binary, cast, const, convert, div,
    floordiv, floormod, logical_and, logical_not, logical_or, make_const, match_types, max_value_expr,
    min_value_expr, mul, sub, truncdiv, truncmod,
)
