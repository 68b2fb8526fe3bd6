"""An interpreter of TensorIR: run any PrimFunc (with blocks, or lowered, vector code included) on numpy arrays.

The function is translated once into Python source that works on flat numpy arrays and then executed,
so the per-node cost of a tree walk is paid once, not per iteration. Semantics follow C/LLVM:
integer arithmetic wraps in its dtype, ``Div``/``Mod`` on integers truncate toward zero while
``FloorDiv``/``FloorMod`` round down, float arithmetic stays in its precision (numpy scalars of the
dtype), casts from float to integer truncate.

>>> import numpy as np
>>> from tensorize.ir.buffer import decl_buffer
>>> from tensorize.ir.expr import Var
>>> from tensorize.ir.stmt import BufferStore, For
>>> from tensorize.ir.function import PrimFunc
>>> A, B = decl_buffer((4,), "int8", "A"), decl_buffer((4,), "int8", "B")
>>> i = Var("i")
>>> f = PrimFunc([A.data, B.data], For(i, 0, 4, body=BufferStore(B, A[i] * A[i], [i])), buffer_map={A.data: A, B.data: B})
>>> a, b = np.array([1, 12, -12, 100], "int8"), np.zeros(4, "int8")
>>> run_prim_func(f, a, b); b.tolist()     # 144 and 10000 wrap in int8
[1, -112, -112, 16]

Calls of external functions and LLVM intrinsics run through ``externs``: a dict from the extern or
intrinsic name (``"llvm.x86.avx512.vpdpbusd.512"``) to a Python function of the evaluated arguments.
Pointer arguments (``tvm_access_ptr``, ``address_of``) arrive as ``Pointer(array, offset)``.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

import numpy as np

from ...ir import dtype as dt
from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.function import IRModule, PrimFunc
from .source import _Codegen
from .support import InterpreterError, Pointer  # noqa: F401

logger = logging.getLogger(__name__)

__all__ = ["run_prim_func", "compile_prim_func", "Pointer", "InterpreterError"]


class CompiledPrimFunc:
    """A PrimFunc translated to Python; call it with numpy arrays (buffers) and numbers (scalar parameters)."""

    def __init__(self, func: PrimFunc, externs: Mapping[str, Callable] | None = None):
        self.func = func
        gen = _Codegen(externs or {})
        arg_names = []
        self.param_kinds: list[tuple[str, Any]] = []
        for param in func.params:
            buffer = func.buffer_map.get(param)
            if buffer is None:
                arg_names.append(gen.bind_var(param))
                self.param_kinds.append(("scalar", param))
                continue
            name = gen.fresh(buffer.name)
            arg_names.append(name)
            gen.storage[id(buffer.data)] = name
            self.param_kinds.append(("buffer", buffer))
        # Symbolic shapes/strides/offsets of parameter buffers are read from the arrays.
        for k, (kind, obj) in enumerate(self.param_kinds):
            if kind != "buffer":
                continue
            shape_name = f"_shape{k}"
            for axis, extent in enumerate(obj.shape):
                if isinstance(extent, E.Var) and id(extent) not in gen.names:
                    gen.emit(f"{gen.bind_var(extent)} = {shape_name}[{axis}]")
            if isinstance(obj.elem_offset, E.Var) and id(obj.elem_offset) not in gen.names:
                gen.emit(f"{gen.bind_var(obj.elem_offset)} = 0")
            if obj.strides:
                row_major = _row_major_strides([f"{shape_name}[{a}]" for a in range(obj.ndim)])
                for stride, value in zip(obj.strides, row_major):
                    if isinstance(stride, E.Var) and id(stride) not in gen.names:
                        gen.emit(f"{gen.bind_var(stride)} = {value}")
        shape_args = [f"_shape{k}" for k, (kind, _) in enumerate(self.param_kinds) if kind == "buffer"]
        gen.stmt(func.body)
        header = f"def _kernel({', '.join(arg_names + shape_args)}):"
        self.source = "\n".join([header] + (gen.lines or ["    pass"]))
        try:
            code = compile(self.source, f"<tensorize interpreter: {func.attrs.get('global_symbol', 'main')}>", "exec")
        except (SyntaxError, RecursionError) as err:
            raise InterpreterError(f"could not translate the program for interpretation: {err}") from err
        exec(code, gen.namespace)  # noqa: S102 - the source is generated from IR, not user text
        self._kernel = gen.namespace["_kernel"]

    def __call__(self, *args) -> None:
        if len(args) != len(self.param_kinds):
            raise InterpreterError(f"{self.func.attrs.get('global_symbol', 'the function')} takes "
                                   f"{len(self.param_kinds)} arguments, got {len(args)}")
        flat_args, shapes, writebacks = [], [], []
        for (kind, obj), arg in zip(self.param_kinds, args):
            if kind == "scalar":
                flat_args.append(arg.value if isinstance(arg, (E.IntImm, E.FloatImm)) else arg)
                continue
            array = _as_numpy(arg)
            expected = np.dtype(dt.numpy_dtype(obj.dtype))
            if array.dtype != expected:
                raise InterpreterError(f"buffer {obj.name!r} is {obj.dtype} but the array is {array.dtype}; "
                                       f"pass array.astype({str(expected)!r})")
            _check_shape(obj, array)
            if array.flags.c_contiguous:
                flat = array.reshape(-1)
            else:
                flat = np.ascontiguousarray(array).reshape(-1)
                writebacks.append((array, flat))
            flat_args.append(flat)
            shapes.append(array.shape)
        with np.errstate(all="ignore"):
            self._kernel(*flat_args, *shapes)
        for array, flat in writebacks:
            array[...] = flat.reshape(array.shape)


def _row_major_strides(shape: list[str]) -> list[str]:
    strides, acc = [], "1"
    for extent in reversed(shape):
        strides.append(acc)
        acc = f"{acc} * {extent}"
    return strides[::-1]


def _as_numpy(arg) -> np.ndarray:
    if isinstance(arg, np.ndarray):
        return arg
    inner = getattr(arg, "_array", None)  # runtime arrays wrap a numpy array without copying
    if isinstance(inner, np.ndarray):
        return inner
    raise InterpreterError(f"buffer arguments must be numpy arrays, got {type(arg).__name__}")


def _check_shape(buffer: Buffer, array: np.ndarray) -> None:
    static = [int(s) if isinstance(s, E.IntImm) else None for s in buffer.shape]
    flat_ok = array.ndim == 1 and all(s is not None for s in static) and array.size == int(np.prod(static or [1]))
    if array.ndim != len(static) and not flat_ok:
        raise InterpreterError(f"buffer {buffer.name!r} has shape {static} but the array has shape {array.shape}")
    if array.ndim == len(static):
        for want, got in zip(static, array.shape):
            if want is not None and want != got:
                raise InterpreterError(f"buffer {buffer.name!r} has shape {static} but the array has shape "
                                       f"{array.shape}")


def compile_prim_func(func: PrimFunc | IRModule, externs: Mapping[str, Callable] | None = None) -> CompiledPrimFunc:
    """Translate ``func`` once; call the result many times with different arrays.

    Parameters
    ----------
    func : PrimFunc or IRModule
        The function (lowered or not).
    externs : dict of str to callable, optional
        Python implementations of extern calls.

    Returns
    -------
    CompiledPrimFunc
        Callable on numpy arrays.
    """
    if isinstance(func, IRModule):
        funcs = list(func.functions.values())
        if len(funcs) != 1:
            names = ", ".join(gv.name_hint for gv in func.functions)
            raise InterpreterError(f"the module has several functions ({names}); pass mod['name']")
        func = funcs[0]
    if not isinstance(func, PrimFunc):
        raise InterpreterError(f"expected a PrimFunc, got {type(func).__name__}")
    return CompiledPrimFunc(func, externs)


def run_prim_func(func: PrimFunc | IRModule, *args, externs: Mapping[str, Callable] | None = None) -> None:
    """Run ``func`` on numpy arrays (one per buffer parameter, in parameter order; outputs are written in place)
    and numbers (scalar parameters).

    Parameters
    ----------
    func : PrimFunc or IRModule
        The function.
    *args : numpy.ndarray or scalar
        The arguments.
    externs : dict of str to callable, optional
        Python implementations of extern calls.

    Examples
    --------
    >>> from tensorize.codegen.python.interpreter import run_prim_func
    >>> a, b = np.ones((16, 16), "float32"), np.ones((16, 16), "float32")
    >>> c = np.zeros((16, 16), "float32")
    >>> run_prim_func(matmul(), a, b, c)
    >>> float(c[3, 4])
    16.0
    """
    compile_prim_func(func, externs)(*args)
