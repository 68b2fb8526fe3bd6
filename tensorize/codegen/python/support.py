"""What the Python source made by ``source.py`` calls at run time: C/LLVM integer semantics
(wrapping, truncating division), casts, math functions, broadcasting and the ``Pointer`` of
pointer arguments."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...errors import TVMError
from ...ir import dtype as dt


class InterpreterError(TVMError):
    """The interpreter cannot run a program (unsupported node, wrong arguments, undefined variable)."""


class Pointer:
    """An address into a flat numpy array: what ``tvm_access_ptr``/``address_of`` evaluate to."""

    __slots__ = ("array", "offset")

    def __init__(self, array: np.ndarray, offset: int):
        self.array, self.offset = array, int(offset)

    def view(self, count: int) -> np.ndarray:
        """The ``count`` elements starting at this address (a numpy view).

        Parameters
        ----------
        count : int
            The number of elements.

        Returns
        -------
        numpy.ndarray
            The view.
        """
        return self.array[self.offset:self.offset + int(count)]

    def __repr__(self) -> str:
        return f"Pointer({self.array.dtype}[{self.array.size}] + {self.offset})"


# -- runtime helpers the generated code calls ------------------------------------------------------

def _wrap_int(value: int, bits: int, signed: bool) -> int:
    value &= (1 << bits) - 1
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _truncdiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    r = np.fmod(a, b)
    return (a - r) // b


def _truncmod(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a - _truncdiv(a, b) * b
    return np.fmod(a, b)


def _make_cast(dtype: str) -> Callable:
    t = dt.parse(dtype)
    npdt = np.dtype(dt.numpy_dtype(dtype))
    lanes = t.lanes
    if t.code == "bfloat":
        raise InterpreterError("the interpreter does not compute in bfloat16; cast to float32 in the program")
    if lanes > 1:
        def cast_vector(v):
            v = np.asarray(v)
            if np.issubdtype(v.dtype, np.floating) and np.issubdtype(npdt, np.integer):
                v = np.trunc(v)
            return v.astype(npdt)
        return cast_vector
    if t.code in ("int", "uint"):
        bits, signed = t.bits, t.code == "int"
        python_int = dtype in ("int32", "int64")

        def cast_int(v):
            if isinstance(v, (float, np.floating)):
                v = math.trunc(float(v))
            value = _wrap_int(int(v), bits, signed)
            return value if python_int else npdt.type(value)
        return cast_int
    if t.code == "bool":
        return lambda v: bool(v)
    return lambda v: npdt.type(v)


def _unsupported(name: str):
    def fail(*args):
        raise InterpreterError(f"the interpreter cannot evaluate a call of {name!r}; pass an implementation in "
                               f"run_prim_func(..., externs={{{name!r}: python_function}})")
    return fail


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_erf_vec = np.vectorize(math.erf)


def _erf(x):
    if isinstance(x, np.ndarray):
        return _erf_vec(x).astype(x.dtype)
    return type(x)(math.erf(x)) if isinstance(x, np.generic) else math.erf(x)


_MATH = {
    "tir.exp": np.exp, "tir.exp2": np.exp2, "tir.exp10": lambda x: np.power(type(x)(10) if np.isscalar(x) else 10, x),
    "tir.log": np.log, "tir.log2": np.log2, "tir.log10": np.log10, "tir.log1p": np.log1p, "tir.sqrt": np.sqrt,
    "tir.rsqrt": lambda x: 1 / np.sqrt(x), "tir.tanh": np.tanh, "tir.sigmoid": _sigmoid, "tir.fabs": np.abs,
    "tir.floor": np.floor, "tir.ceil": np.ceil, "tir.round": np.rint, "tir.nearbyint": np.rint,
    "tir.trunc": np.trunc, "tir.erf": _erf, "tir.sin": np.sin, "tir.cos": np.cos, "tir.tan": np.tan,
    "tir.sinh": np.sinh, "tir.cosh": np.cosh, "tir.asin": np.arcsin, "tir.acos": np.arccos, "tir.atan": np.arctan,
    "tir.asinh": np.arcsinh, "tir.acosh": np.arccosh, "tir.atanh": np.arctanh, "tir.isnan": np.isnan,
    "tir.isinf": np.isinf, "tir.isfinite": np.isfinite, "tir.pow": np.power, "tir.atan2": np.arctan2,
    "tir.fmod": np.fmod, "tir.hypot": np.hypot, "tir.copysign": np.copysign, "tir.nextafter": np.nextafter,
    "tir.ldexp": np.ldexp, "tir.bitwise_and": np.bitwise_and, "tir.bitwise_or": np.bitwise_or,
    "tir.bitwise_xor": np.bitwise_xor, "tir.bitwise_not": np.invert, "tir.shift_left": np.left_shift,
    "tir.shift_right": np.right_shift, "tir.popcount": lambda x: np.bitwise_count(x).astype(np.asarray(x).dtype),
}


def _bc(value, lanes: int, npdt):
    return np.full(lanes, value, dtype=npdt)


_RUNTIME = {"np": np, "_truncdiv": _truncdiv, "_truncmod": _truncmod, "_bc": _bc, "Pointer": Pointer,
            "InterpreterError": InterpreterError}
