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

import re
from typing import Any

from ..ir import dtype as _dt
from ..ir.expr import (  # noqa: F401  (re-exported TVM names)
    Broadcast, Call, FloatImm, IntImm, IterVar, PrimExpr, Ramp, Shuffle, StringImm, Var, cast as _cast, convert,
    ceildiv, floordiv, floormod, make_const, truncdiv, truncmod,
)
from ..ir.op import (  # noqa: F401
    abs, acos, acosh, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_not, bitwise_or, bitwise_xor,
    call_extern, call_intrin, call_pure_extern, ceil, clz, copysign, cos, cosh, erf, exp, exp2, exp10, fabs,
    floor, fmod, hypot, if_then_else, infinity, isfinite, isinf, isnan, ldexp, likely, log, log1p, log2, log10,
    max, max_value, min, min_value, nearbyint, nextafter, popcount, pow, power, round, rsqrt,
    shift_left, shift_right, sigmoid, sin, sinh, sqrt, tan, tanh, trunc,
)
from ..ir.op import all as all_  # noqa: F401
from ..ir.op import any as any_  # noqa: F401
from .parser import hooks as _hooks
from .tir_ops import *  # noqa: F401,F403  (T.Add, T.FloorMod, T.LT, ..., T.tvm_storage_sync, ...)
from .tir_reduce import *  # noqa: F401,F403  (T.comm_reducer, T.reduce, T.iter_var)
from .tir_buffers import *  # noqa: F401,F403  (T.Buffer, T.match_buffer, T.alloc_buffer, ...)
from .tir_frames import *  # noqa: F401,F403  (T.grid, T.serial, T.block, T.axis, T.reads, ...)
from .tir_stmts import *  # noqa: F401,F403  (T.evaluate, T.LetStmt, T.attr, T.launch_thread, ...)
from .tir_exprs import *  # noqa: F401,F403  (T.cast, T.Select, T.ramp, T.call_llvm_intrin, T.Let, ...)

# -- decorators ------------------------------------------------------------------------------

def prim_func(func=None, *, private: bool = False, s_tir: bool = False, check_well_formed: bool = True):
    """Parse the decorated Python function as TVMScript; the result is a ``PrimFunc``.

    As in TVM, a function that is not ``private`` gets the attribute ``global_symbol`` (its name,
    unless ``T.func_attr`` gives another); ``@T.prim_func(private=True)`` gets none.
    ``@T.prim_func(s_tir=True)`` (TVM 0.27's printed form) is accepted. ``check_well_formed=False``
    skips the verifier.

    Parameters
    ----------
    func : callable, optional
        The decorated function (None when called with options).
    private : bool
        Give the function no ``global_symbol``.
    s_tir : bool
        Accepted for TVM compatibility (``T.prim_func(s_tir=True)``).
    check_well_formed : bool
        Verify the parsed function.

    Returns
    -------
    PrimFunc or callable
        The function, or a decorator when called with options.
    """
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

