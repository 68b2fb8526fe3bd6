"""Expression builders of the ``T`` namespace: casts, vectors, LLVM intrinsic calls, pointer helpers,
``T.Let``, ``T.Range``, ``T.ret`` and ``T.undef`` (re-exported by ``tensorize.script.tir``).

>>> from tensorize.script import tir as T
>>> T.broadcast(T.float32(1), 4).dtype
'float32x4'
"""
from __future__ import annotations

from .. import errors as _errors

from ..ir.expr import Broadcast, Call, Cast as _CastNode, PrimExpr, Ramp, StringImm, Var, cast as _cast, convert
from ..ir.expr import Op as _Op
from ..ir.op import call_intrin
from ..ir.op import call_llvm_intrin as _call_llvm_intrin
from ..ir.op import call_llvm_pure_intrin as _call_llvm_pure_intrin
from ..ir.op import reinterpret as _reinterpret

__all__ = [
    "cast", "Cast", "Select", "ramp", "broadcast", "llvm_lookup_intrinsic_id", "call_llvm_intrin",
    "call_llvm_pure_intrin", "reinterpret", "type_annotation", "tvm_access_ptr", "address_of", "Let", "Range", "ret",
    "undef",
]


# -- expressions -----------------------------------------------------------------------------


def cast(value, dtype: str) -> PrimExpr:
    """``T.cast(x, "float32")``.

    Parameters
    ----------
    value : PrimExpr or number
        The value.
    dtype : str
        The dtype.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _cast(dtype, value)


def Cast(dtype: str, value) -> PrimExpr:  # noqa: N802 - TVM's node name
    """``T.Cast("float32", x)``: always a Cast node (constants are not folded).

    Parameters
    ----------
    dtype : str
        The dtype.
    value : PrimExpr or number
        The value.

    Returns
    -------
    PrimExpr
        The expression.
    """
    return _CastNode(dtype, value)


def Select(condition, true_value, false_value):  # noqa: N802,F811 - TVM's node name
    """``T.Select(c, t, f)``: both sides may be evaluated.

    Parameters
    ----------
    condition : PrimExpr
        The condition.
    true_value : PrimExpr
        The value when true.
    false_value : PrimExpr
        The value when false.

    Returns
    -------
    Select
        The node.
    """
    from ..ir.expr import Select as _Select

    return _Select(condition, true_value, false_value)


def ramp(base, stride, lanes: int) -> Ramp:
    """``T.ramp(base, stride, lanes)``: the vector ``base + stride * [0, lanes)``.

    Parameters
    ----------
    base : PrimExpr
        The first lane.
    stride : PrimExpr
        The step.
    lanes : int
        The lanes.

    Returns
    -------
    Ramp
        The node.
    """
    return Ramp(base, stride, int(lanes))


def broadcast(value, lanes: int) -> Broadcast:
    """``T.broadcast(v, lanes)``.

    Parameters
    ----------
    value : PrimExpr
        The scalar.
    lanes : int
        The lanes.

    Returns
    -------
    Broadcast
        The node.
    """
    return Broadcast(value, int(lanes))


def llvm_lookup_intrinsic_id(name: str) -> StringImm:
    """The LLVM intrinsic ``name``, for ``T.call_llvm_(pure_)intrin``; kept by name, resolved by codegen.

    Parameters
    ----------
    name : str
        The intrinsic, e.g. ``"llvm.fma.v8f32"``.

    Returns
    -------
    StringImm
        The name.
    """
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
    with the leading argument count is accepted too.

    Parameters
    ----------
    *args : PrimExpr or str
        The dtype, the intrinsic's name, then its arguments.
    dtype : str, optional
        The dtype (older spelling).

    Returns
    -------
    Call
        The call.
    """
    ret, name, rest = _llvm_call_args(args, dtype)
    return _call_llvm_intrin(ret, name, *rest)


def call_llvm_pure_intrin(*args, dtype: str | None = None) -> Call:
    """``T.call_llvm_pure_intrin(dtype, "llvm.name", *args)``, or the older keyword-dtype spelling.

    Parameters
    ----------
    *args : PrimExpr or str
        The dtype, the intrinsic's name, then its arguments.
    dtype : str, optional
        The dtype (older spelling).

    Returns
    -------
    Call
        The call.
    """
    ret, name, rest = _llvm_call_args(args, dtype)
    return _call_llvm_pure_intrin(ret, name, *rest)


def reinterpret(*args, dtype: str | None = None) -> PrimExpr:
    """``T.reinterpret(dtype, value)`` (current TVM) or ``T.reinterpret(value, dtype=...)`` (older TVM):
    the bits of ``value`` read as ``dtype``.

    Parameters
    ----------
    *args : PrimExpr or str
        ``(dtype, value)`` or ``(value,)``.
    dtype : str, optional
        The dtype (older spelling).

    Returns
    -------
    PrimExpr
        The expression.
    """
    if dtype is not None and len(args) == 1:
        return _reinterpret(dtype, args[0])
    if len(args) == 2 and isinstance(args[0], str):
        return _reinterpret(args[0], args[1])
    if len(args) == 2 and isinstance(args[1], str):
        return _reinterpret(args[1], args[0])
    raise _errors.TVMTypeError("T.reinterpret takes (dtype, value) or (value, dtype=...)")


def type_annotation(dtype: str) -> Call:
    """``T.type_annotation("float32")``: a typed placeholder argument (first argument of tvm_access_ptr).

    Parameters
    ----------
    dtype : str
        The dtype.

    Returns
    -------
    Call
        The call.
    """
    return Call(dtype, _Op.get("tir.type_annotation"), ())


def tvm_access_ptr(ptype, data, offset, extent, rw_mask) -> Call:
    """``T.tvm_access_ptr(T.type_annotation("float32"), A.data, offset, extent, rw_mask)``.

    Parameters
    ----------
    ptype : Call
        ``T.type_annotation(dtype)``.
    data : Var
        The buffer's data pointer.
    offset : PrimExpr
        The element offset.
    extent : PrimExpr
        The number of elements.
    rw_mask : int
        1 read, 2 write, 3 both.

    Returns
    -------
    Call
        The call.
    """
    if isinstance(rw_mask, str):
        rw_mask = {"r": 1, "w": 2, "rw": 3}[rw_mask]
    return call_intrin("handle", "tir.tvm_access_ptr", ptype, data, offset, extent, rw_mask)


def address_of(load) -> Call:
    """``T.address_of(A[i])``: the address of a buffer element.

    Parameters
    ----------
    load : BufferLoad
        The element.

    Returns
    -------
    Call
        The call.
    """
    return call_intrin("handle", "tir.address_of", load)


def Let(body, where: dict | None = None):  # noqa: N802,F811 - TVMScript's name
    """``T.Let(x + 1, where={x: i * 2})``: ``body`` with each variable bound to its value (nested
    ``Let`` nodes, the first entry outermost). Inside a prim_func the keys are new names; from
    Python they are ``Var`` objects.

    Parameters
    ----------
    body : PrimExpr
        The expression.
    where : dict of Var to PrimExpr
        The bindings.

    Returns
    -------
    Let
        The node.
    """
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
    """``T.Range(begin, end)``: the Range ``[begin, end)`` (``[0, begin)`` with one argument).

    Parameters
    ----------
    begin : PrimExpr or int
        The start (or the end, alone).
    end : PrimExpr or int, optional
        The end.

    Returns
    -------
    Range
        The range.
    """
    from ..ir.expr import Range as _Range

    return _Range(begin, end)


def ret(value) -> Call:
    """``T.ret(value)``: return ``value`` from the function.

    Parameters
    ----------
    value : PrimExpr
        The value.

    Returns
    -------
    Call
        The ``tir.ret`` call.
    """
    return call_intrin(convert(value).dtype, "tir.ret", value)


def undef() -> Call:
    """``T.undef()``: an undefined int32 value.

    Returns
    -------
    Call
        The ``tir.undef`` call.
    """
    return call_intrin("int32", "tir.undef")
