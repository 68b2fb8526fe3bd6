"""Calls of functions outside TensorIR: C functions (``call_extern``, ``call_pure_extern``) and LLVM
intrinsics (``call_llvm_intrin``, ``call_llvm_pure_intrin``); ``tensorize.ir.op`` re-exports them.

>>> call_llvm_pure_intrin("float32x8", "llvm.fma.v8f32").args[0].value
'llvm.fma.v8f32'
"""
from __future__ import annotations

from typing import Sequence

from . import dtype as dt
from .expr import Call, IntImm, Op, StringImm, convert


def call_extern(dtype: str, func_name: str, *args) -> Call:
    """A call of the C function ``func_name``.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.
    func_name : str
        The C function.
    *args : PrimExpr
        The arguments.

    Returns
    -------
    Call
        The call.
    """
    return Call(dtype, Op.get("tir.call_extern"), (StringImm(func_name),) + tuple(args))


def call_pure_extern(dtype: str, func_name: str, *args) -> Call:
    """A call of the side-effect-free C function ``func_name``.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.
    func_name : str
        The C function.
    *args : PrimExpr
        The arguments.

    Returns
    -------
    Call
        The call.
    """
    return Call(dtype, Op.get("tir.call_pure_extern"), (StringImm(func_name),) + tuple(args))


def call_llvm_intrin(dtype: str, name: str, *args) -> Call:
    """A call of the LLVM intrinsic ``name`` (``"llvm.x86.avx512.vpdpbusd.512"``) with side effects.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.
    name : str
        The LLVM intrinsic.
    *args : PrimExpr
        The arguments.

    Returns
    -------
    Call
        The call.
    """
    return Call(dtype, Op.get("tir.call_llvm_intrin"), (StringImm(name),) + _num_args(args))


def call_llvm_pure_intrin(dtype: str, name: str, *args) -> Call:
    """A call of the pure LLVM intrinsic ``name``; TVM's optional leading argument count is accepted.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.
    name : str
        The LLVM intrinsic.
    *args : PrimExpr
        The arguments.

    Returns
    -------
    Call
        The call.
    """
    return Call(dtype, Op.get("tir.call_llvm_pure_intrin"), (StringImm(name),) + _num_args(args))


def _num_args(args: Sequence) -> tuple:
    # TVM's older spelling passes the argument count first: drop it when it matches.
    if args and isinstance(args[0], (int, IntImm)) and int(args[0]) == len(args) - 1 and dt.is_uint(convert(args[0]).dtype):
        return tuple(args[1:])
    return tuple(args)
