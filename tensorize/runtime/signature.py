"""The calling convention of compiled functions, and checking Python arguments against it.

Code generators describe each compiled function with a ``FunctionSignature``: its buffer and
scalar parameters in order, then the *implicit* parameters, the symbolic shape/stride variables of
the parameter buffers (``n`` in ``T.match_buffer(a, (n,))``), which the caller binds from the
array shapes. The C entry point takes, in this order: one data pointer per buffer, each scalar
(float16/bfloat16/float32 as C ``float``, bool as ``int8``), then each implicit variable, and
returns 0 or a nonzero error code.

Binding checks what TVM's packed-function prologue checks and raises ``TypeError``/``ValueError``
naming the parameter: count, dtype, rank, shape (symbolic dimensions bound consistently),
contiguity and device.
"""
from __future__ import annotations

from ..errors import TVMTypeError, TVMValueError

import ctypes
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..ir import dtype as dt
from ..ir import expr as E
from .device import CPU
from .ndarray import Tensor, aligned_empty

_C_INT = {8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32, 64: ctypes.c_int64}
_C_UINT = {8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32, 64: ctypes.c_uint64}


def c_scalar_type(dtype: str):
    """The ctypes type a scalar of ``dtype`` is passed as in the C entry point.

    Parameters
    ----------
    dtype : str
        The scalar's dtype.

    Returns
    -------
    type
        A ctypes type.
    """
    t = dt.parse(dtype)
    if t.lanes != 1:
        raise TVMTypeError(f"vector scalar parameters ({dtype}) are not supported; pass a buffer instead")
    if t.code == "int":
        return _C_INT[t.bits]
    if t.code == "uint":
        return _C_UINT[t.bits]
    if t.code == "bool":
        return ctypes.c_int8
    if t.code == "bfloat" or (t.code == "float" and t.bits <= 32):
        return ctypes.c_float
    if t.code == "float":
        return ctypes.c_double
    if t.code == "handle":
        return ctypes.c_void_p
    raise TVMTypeError(f"cannot pass a scalar of dtype {dtype}")


@dataclass
class BufferParam:
    """A buffer parameter of a compiled function: name, dtype, shape (ints or symbolic), strides, offset, alignment."""
    name: str
    dtype: str
    shape: tuple
    strides: tuple = ()
    elem_offset: Any = None
    alignment: int = 1


@dataclass
class ScalarParam:
    """A scalar parameter of a compiled function: name and dtype."""
    name: str
    dtype: str


@dataclass
class FunctionSignature:
    """Parameters of one compiled function (see the module docstring for the C convention)."""

    name: str
    params: list = field(default_factory=list)
    implicit: list = field(default_factory=list)  # Vars bound from buffer shapes/strides

    @property
    def c_argtypes(self) -> list:
        """The ctypes argument types of the C entry point.

        Returns
        -------
        list of type
            The types.
        """
        types = [ctypes.c_void_p if isinstance(p, BufferParam) else c_scalar_type(p.dtype) for p in self.params]
        return types + [c_scalar_type(v.dtype) for v in self.implicit]

    def describe(self) -> str:
        """``name(param, ...)`` for error messages.

        Returns
        -------
        str
            The text.
        """
        return f"{self.name}({', '.join(p.name for p in self.params)})"

    def bind(self, args: Sequence) -> tuple[list, Callable[[], None], list]:
        """C argument values for ``args``, a function that copies results back from temporaries
        (for misaligned numpy inputs), and the objects to keep alive during the call.

        Parameters
        ----------
        args : list
            The call's arguments.

        Returns
        -------
        tuple
            ``(c_args, copy_back, keep_alive)``.
        """
        if len(args) != len(self.params):
            raise TVMTypeError(f"{self.describe()} takes {len(self.params)} arguments, got {len(args)}")
        env: dict = {}
        c_args: list = []
        copy_back: list = []
        keep: list = []
        deferred: list = []
        for position, (param, arg) in enumerate(zip(self.params, args), start=1):
            where = f"argument {position} ({param.name})"
            if isinstance(param, ScalarParam):
                c_args.append(_scalar_value(param, arg, where))
                continue
            array = _as_numpy(arg, param, where)
            if len(array.shape) != len(param.shape):
                raise TVMValueError(f"{where}: expected shape {_fmt_shape(param.shape)} {param.dtype}, got {array.shape} "
                                 f"{_arg_dtype(arg, array)} (rank {len(param.shape)} vs {len(array.shape)})")
            for axis, (expected, actual) in enumerate(zip(param.shape, array.shape)):
                _bind_or_check(expected, actual, env, deferred, lambda where=where, param=param, array=array, arg=arg: (
                    f"{where}: expected shape {_fmt_shape(param.shape, env)} {param.dtype}, got {array.shape} "
                    f"{_arg_dtype(arg, array)}"))
            if not param.strides and not array.flags.c_contiguous:
                raise TVMValueError(f"{where}: the array is not contiguous (strides "
                                 f"{tuple(st // array.itemsize for st in array.strides)}); "
                                 "pass np.ascontiguousarray(x) or declare the buffer with strides")
            if param.alignment > 1 and array.ctypes.data % param.alignment:
                # The generated code assumes the declared alignment: run on an aligned (contiguous) copy,
                # and take the strides from the copy, since that is what the kernel sees.
                aligned = aligned_empty(array.shape, array.dtype, max(param.alignment, 64))
                np.copyto(aligned, array)
                copy_back.append((array, aligned))
                array = aligned
            pointer = array.ctypes.data
            element_strides = [s // array.itemsize for s in array.strides]
            if param.strides:
                for expected, actual in zip(param.strides, element_strides):
                    _bind_or_check(expected, actual, env, deferred, lambda where=where, param=param,
                                   element_strides=element_strides: (
                        f"{where}: expected strides {_fmt_shape(param.strides, env)}, got {tuple(element_strides)}"))
            if isinstance(param.elem_offset, E.Var):
                _bind_or_check(param.elem_offset, 0, env, deferred, lambda where=where: f"{where}: bad element offset")
            keep.append(array)
            c_args.append(pointer)
        for check in deferred:
            check(env)
        for var in self.implicit:
            if var not in env:
                raise TVMValueError(f"{self.describe()}: cannot infer the value of {var.name} from the arguments; "
                                 "make it a dimension of a buffer parameter or a scalar parameter")
            c_args.append(env[var])

        def finish() -> None:
            for original, aligned in copy_back:
                np.copyto(original, aligned)

        finish.copies = len(copy_back)  # type: ignore[attr-defined]
        return c_args, finish, keep


def _arg_dtype(arg, array: np.ndarray) -> str:
    return arg.dtype if isinstance(arg, Tensor) else dt.from_numpy(array.dtype)


def _as_numpy(arg, param: BufferParam, where: str) -> np.ndarray:
    if isinstance(arg, Tensor):
        if arg.device.device_type != CPU:
            raise TVMValueError(f"{where}: the tensor is on {arg.device}, but this function runs on cpu:0; "
                             "copy it with tensor.copyto(tvm.cpu())")
        if arg.dtype != param.dtype:
            raise TVMTypeError(f"{where}: expected dtype {param.dtype}, got {arg.dtype}")
        return arg._data  # noqa: SLF001 - the runtime's own storage
    if isinstance(arg, np.ndarray):
        got = dt.from_numpy(arg.dtype)
        if got != param.dtype and not (param.dtype == "bfloat16" and got == "uint16"):
            raise TVMTypeError(f"{where}: expected dtype {param.dtype}, got {got}")
        return arg
    raise TVMTypeError(f"{where}: expected a tvm.nd.array or numpy array of {param.dtype}, got {type(arg).__name__}")


def _scalar_value(param: ScalarParam, arg, where: str):
    if isinstance(arg, (Tensor, np.ndarray)) and np.ndim(arg) == 0:
        arg = np.asarray(arg).item()
    if isinstance(arg, np.generic):
        arg = arg.item()
    t = dt.parse(param.dtype)
    if t.code in ("int", "uint", "bool"):
        if isinstance(arg, float) or not isinstance(arg, (int, bool)):
            raise TVMTypeError(f"{where}: expected an integer ({param.dtype}), got {type(arg).__name__} {arg!r}")
        value = int(arg)
        lo, hi = (0, 1) if t.code == "bool" else ((0, (1 << t.bits) - 1) if t.code == "uint"
                                                  else (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1))
        if not lo <= value <= hi:
            raise TVMValueError(f"{where}: {value} does not fit in {param.dtype}")
        return value
    if t.code in ("float", "bfloat"):
        if not isinstance(arg, (int, float)):
            raise TVMTypeError(f"{where}: expected a number ({param.dtype}), got {type(arg).__name__}")
        return float(arg)
    if t.code == "handle":
        if isinstance(arg, Tensor):
            return arg.data_ptr
        if isinstance(arg, np.ndarray):
            return arg.ctypes.data
        if arg is None or isinstance(arg, int):
            return arg
        raise TVMTypeError(f"{where}: expected a tensor or an address for a handle, got {type(arg).__name__}")
    raise TVMTypeError(f"{where}: unsupported scalar dtype {param.dtype}")


def _bind_or_check(expected, actual: int, env: dict, deferred: list, message: Callable[[], str]) -> None:
    if isinstance(expected, E.IntImm):
        if expected.value != actual:
            raise TVMValueError(message())
    elif isinstance(expected, E.Var):
        if expected in env:
            if env[expected] != actual:
                raise TVMValueError(message() + f" ({expected.name} is already bound to {env[expected]})")
        else:
            env[expected] = actual
    else:
        def check(env, expected=expected, actual=actual):
            value = evaluate(expected, env)
            if value is not None and value != actual:
                raise TVMValueError(message())

        deferred.append(check)


_FOLD = {
    E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
    E.FloorDiv: lambda a, b: a // b, E.FloorMod: lambda a, b: a % b, E.Min: min, E.Max: max,
    E.Div: lambda a, b: int(a / b), E.Mod: lambda a, b: a - int(a / b) * b,
}


def evaluate(expr, env: dict):
    """The integer value of a shape expression under ``env``; None if it has unknowns.

    Parameters
    ----------
    expr : PrimExpr or int
        The expression.
    env : dict
        Variable name to value.

    Returns
    -------
    int or None
        The value.
    """
    if isinstance(expr, E.IntImm):
        return expr.value
    if isinstance(expr, E.Var):
        return env.get(expr)
    if isinstance(expr, E.Cast):
        return evaluate(expr.value, env)
    fold = _FOLD.get(type(expr))
    if fold is not None:
        a, b = evaluate(expr.a, env), evaluate(expr.b, env)
        if a is None or b is None or (b == 0 and type(expr) in (E.FloorDiv, E.FloorMod, E.Div, E.Mod)):
            return None
        return fold(a, b)
    return None


def _fmt_dim(d, env: dict | None = None) -> str:
    if isinstance(d, E.IntImm):
        return str(d.value)
    if isinstance(d, E.Var):
        return str(env[d]) if env and d in env else d.name
    value = evaluate(d, env or {})
    return str(value) if value is not None else type(d).__name__


def _fmt_shape(shape, env: dict | None = None) -> str:
    dims = [_fmt_dim(d, env) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"
