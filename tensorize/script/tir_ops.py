"""The ``T.`` names for IR nodes and built-in operators that the printer may emit.

``T.Add(a, b)``, ``T.FloorMod(a, b)``, ``T.LT(a, b)``, ``T.And(a, b)``, ``T.Not(a)``, ... build
the node itself, without constant folding (the printer uses these call forms when the operands
are two constants, so ``T.Add(1, 2)`` reads back as an ``Add``, not ``3``). The builders of the
GPU and packed-call intrinsics registered in ``tensorize.ir.op`` (``T.tvm_storage_sync``,
``T.tvm_mma_sync``, ...) give each call the dtype TVM gives it.

>>> from tensorize.script import tir as T
>>> T.Add(1, 2)
T.Add(1, 2)
>>> T.tvm_storage_sync("shared").op.name
'tir.tvm_storage_sync'
"""
from __future__ import annotations

from .. import errors as _errors

from ..ir import dtype as _dt
from ..ir import expr as _E
from ..ir.expr import Call as _Call
from ..ir.expr import Op as _Op
from ..ir.expr_build import call_intrin as _call_intrin
from .tir_ops_gpu import *  # noqa: F401,F403  (T.tvm_storage_sync, T.ptx_wgmma, T.ptx_tma_load, ...)
from .tir_ops_gpu import __all__ as _gpu_all
from .tir_ops_gpu import _call  # one builder of intrinsic calls for both modules

__all__ = [
    "let", "q_multiply_shift", "q_multiply_shift_per_axis", "Add", "Sub", "Mul", "Div", "Mod", "FloorDiv",
    "FloorMod", "Min", "Max", "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not", "call_packed",
    "call_cpacked", "prefetch", "tvm_stack_make_shape", "vectorlow", "vectorhigh", "vectorcombine",
    *_gpu_all,
]

# The nodes themselves: calling the class builds the node with matched operand types.
Add, Sub, Mul, Div, Mod = _E.Add, _E.Sub, _E.Mul, _E.Div, _E.Mod
FloorDiv, FloorMod, Min, Max = _E.FloorDiv, _E.FloorMod, _E.Min, _E.Max
EQ, NE, LT, LE, GT, GE = _E.EQ, _E.NE, _E.LT, _E.LE, _E.GT, _E.GE
And, Or, Not = _E.And, _E.Or, _E.Not


# -- packed calls and memory hints ------------------------------------------------------------

def call_packed(func_name: str, *args) -> _Call:
    """``T.call_packed("fname", *args)``: call a packed function registered by name (returns int32).

    Parameters
    ----------
    func_name : str
        The registered name.
    *args : PrimExpr
        The arguments.

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "call_packed", func_name, *args)


call_cpacked = call_packed


def prefetch(buffer_var, offset) -> _Call:
    """``T.prefetch(A.data, offset)``: a hint to bring the cache line holding ``offset`` in early.

    Parameters
    ----------
    buffer_var : Var
        The buffer's data pointer.
    offset : PrimExpr
        The element offset.

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "prefetch", buffer_var, offset)


def tvm_stack_make_shape(*args) -> _Call:
    """``T.tvm_stack_make_shape(*dims)``: a shape array on the stack (a handle).

    Parameters
    ----------
    *args : PrimExpr
        The dimensions.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_stack_make_shape", *args)


# -- vector halves -------------------------------------------------------------------------------

def vectorlow(dtype: str, vec) -> _Call:
    """``T.vectorlow("int8x8", v)``: the low half of vector ``v``.

    Parameters
    ----------
    dtype : str
        The result dtype.
    vec : PrimExpr
        The vector.

    Returns
    -------
    Call
        The call.
    """
    return _call(dtype, "vectorlow", vec)


def vectorhigh(dtype: str, vec) -> _Call:
    """``T.vectorhigh("int8x8", v)``: the high half of vector ``v``.

    Parameters
    ----------
    dtype : str
        The result dtype.
    vec : PrimExpr
        The vector.

    Returns
    -------
    Call
        The call.
    """
    return _call(dtype, "vectorhigh", vec)


def vectorcombine(dtype: str, low, high) -> _Call:
    """``T.vectorcombine("int8x16", low, high)``: one vector of the two halves.

    Parameters
    ----------
    dtype : str
        The result dtype.
    low : PrimExpr
        The low half.
    high : PrimExpr
        The high half.

    Returns
    -------
    Call
        The call.
    """
    lanes = _dt.lanes_of(getattr(low, "dtype", dtype)) * 2
    if _dt.lanes_of(dtype) != lanes:
        raise _errors.TVMValueError(f"T.vectorcombine of two {low.dtype} halves has {lanes} lanes, not the {dtype!r} asked for")
    return _call(dtype, "vectorcombine", low, high)


def q_multiply_shift(x, y, q, s, dtype: str = "int32"):
    """``T.q_multiply_shift(x, y, q, s)``: fixed-point ``round(x * y * 2**(s - q))`` (TVM's builtin).

    Parameters
    ----------
    x, y : PrimExpr
        The fixed-point operands.
    q : PrimExpr
        The number of fractional bits.
    s : PrimExpr
        The shift (left when positive, right when negative).
    dtype : str
        The result's dtype.

    Returns
    -------
    PrimExpr
        The call of ``tir.q_multiply_shift``.
    """
    _Op.register("tir.q_multiply_shift")
    return _call_intrin(dtype, "tir.q_multiply_shift", x, y, q, s)


def q_multiply_shift_per_axis(x, y, ls, rs, q, is_lshift_required, is_rshift_required, dtype: str = "int32"):
    """``T.q_multiply_shift_per_axis(...)``: ``q_multiply_shift`` with per-channel shifts (TVM's builtin).

    Parameters
    ----------
    x, y : PrimExpr
        The fixed-point operands.
    ls, rs : PrimExpr
        The channel's left and right shifts.
    q : PrimExpr
        The number of fractional bits.
    is_lshift_required, is_rshift_required : bool or PrimExpr
        Whether the left and the right shift are applied.
    dtype : str
        The result's dtype.

    Returns
    -------
    PrimExpr
        The call of ``tir.q_multiply_shift_per_axis``.
    """
    _Op.register("tir.q_multiply_shift_per_axis")
    return _call_intrin(dtype, "tir.q_multiply_shift_per_axis", x, y, ls, rs, q, is_lshift_required,
                        is_rshift_required)


class _LetAnnotation:
    """``x: T.let[T.float32] = value`` (TVM 0.27): a let-bound variable of that type."""

    def __getitem__(self, dtype):
        return dtype


let = _LetAnnotation()
