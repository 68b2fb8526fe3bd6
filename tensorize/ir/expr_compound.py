"""Expression nodes that address memory, vectors, calls and reductions: ``BufferLoad``, ``Ramp``,
``Broadcast``, ``Shuffle``, ``Let``, ``Call`` with its ``Op`` registry, ``CommReducer``/``Reduce``,
and the ``IterVar`` and ``Range`` helpers (``tensorize.ir.expr`` is the face that gathers them).

>>> from tensorize.ir.expr import Range
>>> r = Range(2, 10)
>>> int(r.min), int(r.extent)
(2, 8)
"""
from __future__ import annotations

import enum
from typing import Sequence

from ..errors import TVMValueError
from . import dtype as dt
from .expr_scalar import PrimExpr, Var, _upper
from .node import Node, _set


class BufferLoad(PrimExpr):
    """``buffer[indices]``. A ``Ramp`` index makes a vector load."""

    __slots__ = ("buffer", "indices", "predicate")
    _fields = ("buffer", "indices", "predicate")
    _type_key = "tir.BufferLoad"

    def __init__(self, buffer, indices: Sequence, predicate=None, span=None):
        indices = tuple(_upper.convert(i) for i in indices)
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
        _set(self, "indices", tuple(_upper.convert(i) for i in indices))
        _set(self, "dtype", producer.dtype)
        _set(self, "span", span)


class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes - 1) * stride]``."""

    __slots__ = ("base", "stride", "lanes")
    _fields = ("base", "stride", "lanes")
    _type_key = "tir.Ramp"

    def __init__(self, base, stride, lanes: int, span=None):
        base, stride = _upper.match_types(base, stride)
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
        value = _upper.convert(value)
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
        vectors = tuple(_upper.convert(v) for v in vectors)
        indices = tuple(_upper.convert(i) for i in indices)
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
        _set(self, "value", _upper.convert(value))
        body = _upper.convert(body)
        _set(self, "body", body)
        _set(self, "dtype", body.dtype)
        _set(self, "span", span)


class CallEffectKind(enum.IntEnum):
    """The side effects of an operator call (TVM's ``CallEffectKind``): pure, read-state, update-state, opaque."""
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
        """The operator named ``name`` (``"tir.exp"``); unknown names raise ``ValueError``.

        Parameters
        ----------
        name : str
            The operator's name.

        Returns
        -------
        Op
            The operator.
        """
        op = cls._registry.get(name)
        if op is None:
            raise TVMValueError(f"unknown operator {name!r}; registered: {', '.join(sorted(cls._registry))}")
        return op

    @classmethod
    def register(cls, name: str, effect: CallEffectKind = CallEffectKind.PURE) -> "Op":
        """Register (or return) the operator ``name`` with its side-effect kind.

        Parameters
        ----------
        name : str
            The operator's name.
        effect : CallEffectKind
            Its side effects.

        Returns
        -------
        Op
            The operator.
        """
        op = cls._registry.get(name)
        if op is None:
            op = cls._registry[name] = cls(name, effect)
        return op

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def __reduce__(self):
        return (Op.get, (self.name,))


# The built-in operators (``tensorize.ir.op`` builds calls of them).
UNARY_MATH = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid",
    "fabs", "floor", "ceil", "round", "nearbyint", "trunc", "erf", "sin", "cos", "tan", "sinh", "cosh",
    "asin", "acos", "atan", "asinh", "acosh", "atanh", "isnan", "isinf", "isfinite", "popcount", "clz",
)
BINARY_MATH = ("pow", "atan2", "fmod", "hypot", "copysign", "nextafter", "ldexp")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right")

for _name in UNARY_MATH + BINARY_MATH + BITWISE:
    Op.register("tir." + _name)
for _name in ("if_then_else", "reinterpret", "likely", "call_pure_extern", "call_llvm_pure_intrin",
              "vectorlow", "vectorhigh", "vectorcombine", "ret"):
    Op.register("tir." + _name)
for _name in ("call_extern", "call_llvm_intrin", "call_packed", "tvm_access_ptr", "address_of",
              "tvm_storage_sync", "tvm_thread_allreduce", "ptx_mma", "ptx_ldmatrix", "ptx_wgmma",
              "ptx_wgmma_fence", "ptx_wgmma_commit_group", "ptx_wgmma_wait_group",
              "tvm_load_matrix_sync", "tvm_store_matrix_sync", "tvm_mma_sync", "tvm_fill_fragment",
              "type_annotation", "assume", "undef", "tvm_stack_make_shape", "prefetch", "ptx_commit_group",
              "ptx_wait_group", "ptx_tma_load", "ptx_mbarrier_init", "ptx_mbarrier_arrive",
              "ptx_mbarrier_arrive_expect_tx", "ptx_mbarrier_wait", "ptx_setmaxnreg", "ptx_cluster_sync",
              "ptx_cluster_rank"):
    Op.register("tir." + _name, CallEffectKind.OPAQUE)


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
        _set(self, "args", tuple(_upper.convert(a) for a in args))
        _set(self, "span", span)


class CommReducer(Node):
    """A commutative reducer: ``result`` combines ``lhs`` and ``rhs`` (one variable per value);
    ``identity_element`` starts the reduction. ``te.sum`` / ``te.comm_reducer`` build these.

    >>> from tensorize.ir.expr import FloatImm, Var
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
        _set(self, "result", tuple(_upper.convert(r) for r in result))
        _set(self, "identity_element", tuple(_upper.convert(e) for e in identity_element))
        _set(self, "span", span)

    def __call__(self, a: Sequence, b: Sequence) -> list:
        """The combined values for operands ``a`` (accumulators) and ``b`` (new values)."""
        if len(a) != len(self.lhs) or len(b) != len(self.rhs):
            raise TVMValueError(f"reducer takes {len(self.lhs)} value(s) per side, got {len(a)} and {len(b)}")
        mapping = {}
        for var, value in zip(self.lhs, a):
            mapping[var] = value
        for var, value in zip(self.rhs, b):
            mapping[var] = value
        return [_upper.substitute(r, mapping) for r in self.result]


class Reduce(PrimExpr):
    """A reduction of ``source`` over the reduction ``axis`` IterVars with ``combiner``, counting only
    points where ``condition`` holds; value number ``value_index`` of a multi-value reduction.
    Only ``te.compute`` bodies hold these (at the top level)."""

    __slots__ = ("combiner", "source", "init", "axis", "condition", "value_index")
    _fields = ("combiner", "source", "init", "axis", "condition", "value_index")
    _type_key = "tir.Reduce"

    def __init__(self, combiner: CommReducer, source: Sequence, axis: Sequence["IterVar"], condition=True,
                 value_index: int = 0, init: Sequence = (), span=None):
        source = tuple(_upper.convert(s) for s in source)
        _set(self, "combiner", combiner)
        _set(self, "source", source)
        _set(self, "init", tuple(_upper.convert(i) for i in (init or ())))
        _set(self, "axis", tuple(axis))
        _set(self, "condition", _upper.convert(condition))
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
    __add__ = lambda self, o: _upper.add(self.var, o)  # noqa: E731
    __radd__ = lambda self, o: _upper.add(o, self.var)  # noqa: E731
    __sub__ = lambda self, o: _upper.sub(self.var, o)  # noqa: E731
    __rsub__ = lambda self, o: _upper.sub(o, self.var)  # noqa: E731
    __mul__ = lambda self, o: _upper.mul(self.var, o)  # noqa: E731
    __rmul__ = lambda self, o: _upper.mul(o, self.var)  # noqa: E731
    __floordiv__ = lambda self, o: _upper.floordiv(self.var, o)  # noqa: E731
    __mod__ = lambda self, o: _upper.floormod(self.var, o)  # noqa: E731
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
        begin, end = _upper.convert(begin), _upper.convert(end)
        begin, end = _upper.match_types(begin, end)
        _set(self, "min", begin)
        _set(self, "extent", _upper.sub(end, begin))
        _set(self, "span", span)

    @staticmethod
    def from_min_extent(min_value, extent, span=None) -> "Range":
        """The range ``[min_value, min_value + extent)``.

        Parameters
        ----------
        min_value : PrimExpr or int
            The start.
        extent : PrimExpr or int
            The length.
        span : Span, optional
            The source location.

        Returns
        -------
        Range
            The range.
        """
        r = object.__new__(Range)
        min_value, extent = _upper.match_types(_upper.convert(min_value), _upper.convert(extent))
        _set(r, "min", min_value)
        _set(r, "extent", extent)
        _set(r, "span", span)
        return r
