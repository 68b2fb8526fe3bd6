"""The ``T`` namespace of TVMScript: ``from tensorize.script import tir as T``.

Every name works in two places. Inside ``@T.prim_func`` the parser gives it its TVMScript
meaning; from plain Python it is an ordinary function: ``T.float32(1)`` is a ``FloatImm``,
``T.max(a, b)`` a ``Max``, ``T.Buffer((8,), "float32")`` a ``Buffer``. Constructs that only
mean something inside a function body (``T.block``, ``T.axis.spatial``, ``T.reads``, loops)
return small records (``tensorize.script.parser.specs``) that the parser interprets.

>>> from tensorize.script import tir as T
>>> @T.prim_func
... def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
...     for i in range(8):
...         with T.block("B"):
...             vi = T.axis.spatial(8, i)
...             B[vi] = A[vi] + T.float32(1)
>>> type(add_one).__name__
'PrimFunc'
"""
from __future__ import annotations

from .. import errors as _errors

import builtins as _builtins
import re
from typing import Any, Sequence

from ..ir import dtype as _dt
from ..ir.buffer import Buffer as _Buffer
from ..ir.buffer import decl_buffer as _decl_buffer
from ..ir.expr import (  # noqa: F401  (re-exported TVM names)
    Broadcast, Call, Cast as _CastNode, FloatImm, IntImm, IterVar, PrimExpr, Ramp, Range, Select, Shuffle,
    StringImm, Var, cast as _cast, convert, floordiv, floormod, make_const, truncdiv, truncmod,
)
from ..ir.expr import Op as _Op
from ..ir.op import (  # noqa: F401
    abs, acos, acosh, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_not, bitwise_or, bitwise_xor,
    call_extern, call_intrin, call_pure_extern, ceil, clz, copysign, cos, cosh, erf, exp, exp2, exp10, fabs,
    floor, fmod, hypot, if_then_else, infinity, isfinite, isinf, isnan, ldexp, likely, log, log1p, log2, log10,
    max, max_value, min, min_value, nearbyint, nextafter, popcount, pow, power, round, rsqrt,
    shift_left, shift_right, sigmoid, sin, sinh, sqrt, tan, tanh, trunc,
)
from ..ir.op import all as all_  # noqa: F401
from ..ir.op import any as any_  # noqa: F401
from ..ir.op import call_llvm_intrin as _call_llvm_intrin
from ..ir.op import call_llvm_pure_intrin as _call_llvm_pure_intrin
from ..ir.op import reinterpret as _reinterpret
from ..ir.stmt import Evaluate as _Evaluate
from ..ir.stmt import ForKind as _ForKind
from .parser import hooks as _hooks
from .parser import specs as _specs
from .tir_ops import *  # noqa: F401,F403  (T.Add, T.FloorMod, T.LT, ..., T.tvm_storage_sync, ...)

# -- decorators ------------------------------------------------------------------------------

def prim_func(func=None, *, private: bool = False, s_tir: bool = False, check_well_formed: bool = True):
    """Parse the decorated Python function as TVMScript; the result is a ``PrimFunc``.

    As in TVM, a function that is not ``private`` gets the attribute ``global_symbol`` (its name,
    unless ``T.func_attr`` gives another); ``@T.prim_func(private=True)`` gets none.
    ``@T.prim_func(s_tir=True)`` (TVM 0.27's printed form) is accepted. ``check_well_formed=False``
    skips the verifier."""
    def decorate(f):
        return _hooks.get("prim_func")(f, check_well_formed=check_well_formed, private=private)

    return decorate if func is None else decorate(func)


# -- dtypes ----------------------------------------------------------------------------------


class DTypeFactory:
    """``T.float32`` and friends: ``T.float32(1)`` is a constant, ``T.float32()`` a new variable,
    and ``n: T.int32`` a scalar parameter annotation."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: str):
        self.dtype = dtype

    def __call__(self, value: Any = None, is_size_var: bool = False) -> PrimExpr:
        if value is None:
            return Var("", self.dtype)
        if isinstance(value, PrimExpr):
            return _cast(self.dtype, value)
        if isinstance(value, str) and self.dtype != "handle":
            return make_const(self.dtype, float(value) if _dt.is_float(self.dtype) else int(value))
        return make_const(self.dtype, value)

    def __repr__(self) -> str:
        return f"T.{self.dtype}"


_DTYPE_NAME = re.compile(r"^(u?int(8|16|32|64)|float(8|16|32|64)|bfloat16|bool|float8_e4m3fn|float8_e5m2)(x\d+)?$")

int8, int16, int32, int64 = (DTypeFactory(f"int{b}") for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (DTypeFactory(f"uint{b}") for b in (8, 16, 32, 64))
float16, float32, float64, bfloat16 = (DTypeFactory(t) for t in ("float16", "float32", "float64", "bfloat16"))
bool = DTypeFactory("bool")  # noqa: A001 - TVMScript's name


class HandleFactory(DTypeFactory):
    """``T.handle``: an opaque handle; ``T.handle("float32", "shared")`` a pointer to float32 in shared
    memory (a ``Var`` with a ``PointerType``), usable as a parameter annotation, a let type or a value."""

    __slots__ = ()

    def __call__(self, dtype: str | None = None, storage_scope: str = "global", is_size_var: bool = False) -> Var:
        from ..ir.expr import PointerType

        if dtype is None:
            return Var("", "handle")
        if isinstance(dtype, DTypeFactory):
            dtype = dtype.dtype
        return Var("", PointerType(str(dtype), storage_scope or "global"))


handle = HandleFactory("handle")
void = DTypeFactory("void")


def __getattr__(name: str):
    # Vector dtypes: T.float32x4, T.int8x64, ...
    if _DTYPE_NAME.match(name):
        factory = DTypeFactory(name)
        globals()[name] = factory
        return factory
    raise _errors.TVMAttributeError(f"module 'tensorize.script.tir' has no attribute {name!r}")


# -- buffers ---------------------------------------------------------------------------------


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, (list, tuple)):
        return tuple(shape)
    return (shape,)


class BufferFactory:
    """``T.Buffer``: ``T.Buffer((128, 128), "float32")`` (and TVM's older ``T.Buffer[(128, 128), "float32"]``)
    declares a buffer; as a parameter annotation the parser names it after the parameter."""

    def __call__(self, shape, dtype: str = "float32", data=None, strides=None, elem_offset=None, scope: str = "global",
                 align: int = 0, offset_factor: int = 0, buffer_type: str = "", axis_separators=None,
                 name: str = "buffer") -> _Buffer:
        return make_buffer(name, shape, dtype, data=data, strides=strides, elem_offset=elem_offset, scope=scope,
                           align=align, offset_factor=offset_factor, buffer_type=buffer_type,
                           axis_separators=axis_separators)

    def __getitem__(self, key) -> _Buffer:
        if not isinstance(key, tuple) or len(key) < 2:
            raise _errors.TVMTypeError("T.Buffer[...] takes a shape and a dtype: T.Buffer[(128, 128), \"float32\"]")
        return self(key[0], key[1], *key[2:])

    def __repr__(self) -> str:
        return "T.Buffer"


Buffer = BufferFactory()


def make_buffer(name: str, shape, dtype: str = "float32", data=None, strides=None, elem_offset=None,
                scope: str = "global", align: int = 0, offset_factor: int = 0, buffer_type: str = "",
                axis_separators=None) -> _Buffer:
    """Declare a buffer the way TVMScript does (string entries in strides/elem_offset become variables)."""
    shape = _shape_tuple(shape)
    for extent in shape:
        if isinstance(extent, _builtins.bool) or not (isinstance(extent, int) or (isinstance(extent, PrimExpr)
                                                                       and _dt.is_int(extent.dtype))):
            raise _errors.TVMTypeError(f"buffer {name!r}: shape entries are integers or integer expressions, "
                                       f"got {extent!r}")
    strides = tuple(Var(s, "int32") if isinstance(s, str) else s for s in (strides or ()))
    if isinstance(elem_offset, str):
        elem_offset = Var(elem_offset, "int32")
    if data is None:
        from ..ir.expr import PointerType

        data = Var(name, PointerType(dtype, scope or "global"))
    return _decl_buffer(shape, dtype, name, data=data, strides=strides, elem_offset=elem_offset, scope=scope,
                        data_alignment=align if align and align > 0 else -1, offset_factor=offset_factor,
                        buffer_type="auto_broadcast" if buffer_type == "auto_broadcast" else "",
                        axis_separators=axis_separators or ())


def match_buffer(param, shape, dtype: str = "float32", data=None, strides=None, elem_offset=None, scope: str = "global",
                 align: int = -1, offset_factor: int = 0, buffer_type: str = "default", axis_separators=None):
    """``A = T.match_buffer(a, (8,), "float32")``: the buffer behind handle parameter ``a`` (or, inside a
    block, a view of the region ``a``)."""
    return _specs.MatchBufferSpec(param, shape, dtype, dict(
        data=data, strides=strides, elem_offset=elem_offset, scope=scope, align=align, offset_factor=offset_factor,
        buffer_type=buffer_type, axis_separators=axis_separators))


def alloc_buffer(shape, dtype: str = "float32", data=None, strides=None, elem_offset=None, scope: str = "global",
                 align: int = -1, offset_factor: int = 0, buffer_type: str = "default", axis_separators=None):
    """``Y = T.alloc_buffer((128, 128), "float32")``: a buffer allocated by the enclosing block."""
    return _specs.AllocBufferSpec(make_buffer("buffer", shape, dtype, data=data, strides=strides, elem_offset=elem_offset,
                                              scope=scope, align=align, offset_factor=offset_factor,
                                              axis_separators=axis_separators))


sblock_alloc_buffer = alloc_buffer


def decl_buffer(shape, dtype: str = "float32", data=None, strides=None, elem_offset=None, scope: str = "global",
                align: int = -1, offset_factor: int = 0, buffer_type: str = "default", axis_separators=None):
    """``A = T.decl_buffer(...)``: a buffer for the rest of the scope; allocated when ``data`` is not given."""
    buffer = make_buffer("buffer", shape, dtype, data=data, strides=strides, elem_offset=elem_offset, scope=scope,
                         align=align, offset_factor=offset_factor, axis_separators=axis_separators)
    return _specs.DeclBufferSpec(buffer, allocate=data is None)


def allocate(extents, dtype: str, scope: str = "global", condition=True, annotations=None):
    """``p = T.allocate([n], "float32", "global")``: allocate memory; ``p`` is its pointer variable."""
    return _specs.AllocateSpec(_shape_tuple(extents), dtype, scope, condition, annotations)


# -- loops -----------------------------------------------------------------------------------


def _loop(kind):
    def build(start, stop=None, *, annotations=None):
        if stop is None:
            start, stop = 0, start
        return _specs.ForSpec(kind, start, stop, annotations=annotations)

    return build


serial = _loop(_ForKind.SERIAL)
parallel = _loop(_ForKind.PARALLEL)
vectorized = _loop(_ForKind.VECTORIZED)
unroll = _loop(_ForKind.UNROLLED)
serial.__doc__ = "``for i in T.serial(n)`` / ``T.serial(a, b)``: a sequential loop."
parallel.__doc__ = "``for i in T.parallel(n)``: a loop whose iterations run on several CPU threads."
vectorized.__doc__ = "``for i in T.vectorized(n)``: a loop turned into vector instructions."
unroll.__doc__ = "``for i in T.unroll(n)``: a loop unrolled at compile time."


def thread_binding(start, stop=None, thread: str | None = None, *, annotations=None):
    """``for i in T.thread_binding(n, thread="threadIdx.x")``: a loop bound to a GPU thread axis."""
    if isinstance(stop, str) and thread is None:
        start, stop, thread = 0, start, stop
    if stop is None:
        start, stop = 0, start
    if thread is None:
        raise _errors.TVMTypeError('T.thread_binding needs the thread tag: T.thread_binding(n, thread="threadIdx.x")')
    return _specs.ForSpec(_ForKind.THREAD_BINDING, start, stop, thread=thread, annotations=annotations)


def grid(*extents) -> list:
    """``for i, j, k in T.grid(128, 128, 128)``: nested serial loops."""
    return [_specs.ForSpec(_ForKind.SERIAL, 0, e) for e in extents]


# -- blocks ----------------------------------------------------------------------------------


def block(name: str = "", no_realize: bool = False):
    """``with T.block("C"):`` a block (``T.sblock`` is the same)."""
    return _specs.BlockSpec(name, no_realize)


sblock = block


def init():
    """``with T.init():`` the statements a reduction block runs before its first update."""
    return _specs.InitSpec()


def _regions(args) -> list:
    out = []
    for arg in args:
        if isinstance(arg, (list, tuple)):
            out.extend(_regions(arg))
        else:
            out.append(arg)
    return out


def reads(*regions):
    """``T.reads(A[vi, vk], B[0:16, vk])``: the regions a block reads."""
    return _specs.RegionsSpec(_regions(regions), is_write=False)


def writes(*regions):
    """``T.writes(C[vi, vj])``: the regions a block writes."""
    return _specs.RegionsSpec(_regions(regions), is_write=True)


def where(predicate):
    """``T.where(i * 4 + j < 10)``: run the block only where the predicate holds."""
    return _specs.WhereSpec(predicate)


def func_attr(attrs: dict):
    """``T.func_attr({"global_symbol": "main", "tir.noalias": True})``: function attributes."""
    return _specs.AttrsSpec(dict(attrs), "func")


def block_attr(attrs: dict):
    """``T.block_attr({...})``: block annotations (``T.sblock_attr`` is the same)."""
    return _specs.AttrsSpec(dict(attrs), "block")


sblock_attr = block_attr


class axis:  # noqa: N801 - TVMScript's name
    """Block iterators: ``vi = T.axis.spatial(128, i)``, ``vk = T.axis.reduce(128, k)``,
    ``vi, vj, vk = T.axis.remap("SSR", [i, j, k])``."""

    @staticmethod
    def spatial(dom, binding, dtype: str | None = None):
        return _specs.AxisSpec(IterVar.DataPar, dom, binding, dtype)

    @staticmethod
    def reduce(dom, binding, dtype: str | None = None):
        return _specs.AxisSpec(IterVar.CommReduce, dom, binding, dtype)

    @staticmethod
    def scan(dom, binding, dtype: str | None = None):
        return _specs.AxisSpec(IterVar.Ordered, dom, binding, dtype)

    @staticmethod
    def opaque(dom, binding, dtype: str | None = None):
        return _specs.AxisSpec(IterVar.Opaque, dom, binding, dtype)

    @staticmethod
    def remap(kinds: str, bindings: Sequence):
        if len(kinds) != len(bindings):
            raise _errors.TVMValueError(f"T.axis.remap got {len(kinds)} kinds ({kinds!r}) but {len(bindings)} loop variables")
        bad = set(kinds) - set("SR")
        if bad:
            raise _errors.TVMValueError(f"T.axis.remap kinds must be 'S' (spatial) or 'R' (reduce), got {''.join(sorted(bad))!r}")
        return _specs.RemapSpec(kinds, list(bindings))

    S = spatial
    R = reduce


# -- statements ------------------------------------------------------------------------------


def evaluate(value) -> _Evaluate:
    """``T.evaluate(call)``: run an expression for its side effect."""
    return _Evaluate(value)


def LetStmt(value, var=None):  # noqa: N802 - TVMScript's name
    """``with T.LetStmt(value) as x:``: bind ``x`` for the statements inside."""
    return _specs.LetSpec(value, var)


def attr(node, attr_key: str, value):
    """``T.attr(node, "pragma_key", value)``: an attribute on the statements that follow."""
    return _specs.AttrStmtSpec(node, attr_key, value)


def launch_thread(thread, extent):
    """``tx = T.launch_thread("threadIdx.x", 32)``: launch a GPU thread axis for the statements that follow."""
    return _specs.LaunchThreadSpec(thread, extent)


def env_thread(thread_tag: str) -> IterVar:
    """``tx = T.env_thread("threadIdx.x")``: a thread axis to pass to ``T.launch_thread``."""
    return IterVar(None, Var(thread_tag, "int32"), IterVar.ThreadIndex, thread_tag)


def Assert(condition, message):  # noqa: N802 - TVMScript's name
    """``T.Assert(cond, "message")``: check ``cond`` at run time before the statements that follow."""
    return _specs.AssertSpec(condition, message)


def assume(condition):
    """``T.assume(cond)``: tell the compiler ``cond`` holds."""
    return call_intrin("bool", "tir.assume", condition)


# -- expressions -----------------------------------------------------------------------------


def cast(value, dtype: str) -> PrimExpr:
    """``T.cast(x, "float32")``."""
    return _cast(dtype, value)


def Cast(dtype: str, value) -> PrimExpr:  # noqa: N802 - TVM's node name
    """``T.Cast("float32", x)``: always a Cast node (constants are not folded)."""
    return _CastNode(dtype, value)


def Select(condition, true_value, false_value):  # noqa: N802,F811 - TVM's node name
    """``T.Select(c, t, f)``: both sides may be evaluated."""
    from ..ir.expr import Select as _Select

    return _Select(condition, true_value, false_value)


def ramp(base, stride, lanes: int) -> Ramp:
    """``T.ramp(base, stride, lanes)``: the vector ``base + stride * [0, lanes)``."""
    return Ramp(base, stride, int(lanes))


def broadcast(value, lanes: int) -> Broadcast:
    """``T.broadcast(v, lanes)``."""
    return Broadcast(value, int(lanes))


def llvm_lookup_intrinsic_id(name: str) -> StringImm:
    """The LLVM intrinsic ``name``, for ``T.call_llvm_(pure_)intrin``; kept by name, resolved by codegen."""
    return StringImm(name)


def _intrinsic_name(name) -> str:
    return name.value if isinstance(name, StringImm) else str(name)


def _llvm_call_args(positional: tuple, dtype: str | None) -> tuple[str, str, tuple]:
    """Both TVM spellings: ``(dtype, name, *args)`` and the older ``(name, T.uint32(n), *args, dtype=...)``."""
    if dtype is not None:
        if not positional:
            raise _errors.TVMTypeError("T.call_llvm_(pure_)intrin needs the intrinsic name")
        return dtype, _intrinsic_name(positional[0]), tuple(positional[1:])
    if len(positional) < 2:
        raise _errors.TVMTypeError('T.call_llvm_(pure_)intrin(dtype, "llvm.name", *args) needs a dtype and a name')
    return positional[0], _intrinsic_name(positional[1]), tuple(positional[2:])


def call_llvm_intrin(*args, dtype: str | None = None) -> Call:
    """``T.call_llvm_intrin(dtype, "llvm.name", *args)``; TVM's older ``(name, T.uint32(n), *args, dtype=...)``
    with the leading argument count is accepted too."""
    ret, name, rest = _llvm_call_args(args, dtype)
    return _call_llvm_intrin(ret, name, *rest)


def call_llvm_pure_intrin(*args, dtype: str | None = None) -> Call:
    """``T.call_llvm_pure_intrin(dtype, "llvm.name", *args)``, or the older keyword-dtype spelling."""
    ret, name, rest = _llvm_call_args(args, dtype)
    return _call_llvm_pure_intrin(ret, name, *rest)


def reinterpret(*args, dtype: str | None = None) -> PrimExpr:
    """``T.reinterpret(dtype, value)`` (current TVM) or ``T.reinterpret(value, dtype=...)`` (older TVM):
    the bits of ``value`` read as ``dtype``."""
    if dtype is not None and len(args) == 1:
        return _reinterpret(dtype, args[0])
    if len(args) == 2 and isinstance(args[0], str):
        return _reinterpret(args[0], args[1])
    if len(args) == 2 and isinstance(args[1], str):
        return _reinterpret(args[1], args[0])
    raise _errors.TVMTypeError("T.reinterpret takes (dtype, value) or (value, dtype=...)")


def type_annotation(dtype: str) -> Call:
    """``T.type_annotation("float32")``: a typed placeholder argument (first argument of tvm_access_ptr)."""
    return Call(dtype, _Op.get("tir.type_annotation"), ())


def tvm_access_ptr(ptype, data, offset, extent, rw_mask) -> Call:
    """``T.tvm_access_ptr(T.type_annotation("float32"), A.data, offset, extent, rw_mask)``."""
    if isinstance(rw_mask, str):
        rw_mask = {"r": 1, "w": 2, "rw": 3}[rw_mask]
    return call_intrin("handle", "tir.tvm_access_ptr", ptype, data, offset, extent, rw_mask)


def address_of(load) -> Call:
    """``T.address_of(A[i])``: the address of a buffer element."""
    return call_intrin("handle", "tir.address_of", load)


def Let(body, where: dict | None = None):  # noqa: N802,F811 - TVMScript's name
    """``T.Let(x + 1, where={x: i * 2})``: ``body`` with each variable bound to its value (nested
    ``Let`` nodes, the first entry outermost). Inside a prim_func the keys are new names; from
    Python they are ``Var`` objects."""
    from ..ir.expr import Let as _Let

    if not where:
        raise _errors.TVMValueError("T.Let needs the bindings: T.Let(body, where={x: value})")
    result = convert(body)
    for var, value in reversed(list(where.items())):
        if not isinstance(var, Var):
            raise _errors.TVMTypeError(f"T.Let binds variables, got {type(var).__name__} {var!r} as a key")
        result = _Let(var, convert(value), result)
    return result


def Range(begin, end=None):  # noqa: N802,F811 - TVM's name
    from ..ir.expr import Range as _Range

    return _Range(begin, end)


def ret(value) -> Call:
    return call_intrin(convert(value).dtype, "tir.ret", value)


def undef() -> Call:
    return call_intrin("int32", "tir.undef")
