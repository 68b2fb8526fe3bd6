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
from ..ir.expr import StringImm as _StringImm
from ..ir.expr import Var as _Var
from ..ir.expr_build import call_intrin as _call_intrin

__all__ = [
    "let", "q_multiply_shift", "q_multiply_shift_per_axis",
    "Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max", "EQ", "NE", "LT", "LE", "GT", "GE",
    "And", "Or", "Not", "call_packed", "call_cpacked", "prefetch", "tvm_storage_sync", "tvm_thread_allreduce",
    "tvm_stack_make_shape", "tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_store_matrix_sync", "tvm_mma_sync",
    "ptx_mma", "ptx_ldmatrix", "vectorlow", "vectorhigh", "vectorcombine", "comm_reducer", "reduce", "iter_var",
]

# The nodes themselves: calling the class builds the node with matched operand types.
Add, Sub, Mul, Div, Mod = _E.Add, _E.Sub, _E.Mul, _E.Div, _E.Mod
FloorDiv, FloorMod, Min, Max = _E.FloorDiv, _E.FloorMod, _E.Min, _E.Max
EQ, NE, LT, LE, GT, GE = _E.EQ, _E.NE, _E.LT, _E.LE, _E.GT, _E.GE
And, Or, Not = _E.And, _E.Or, _E.Not


def _call(dtype: str, name: str, *args) -> _Call:
    return _Call(dtype, _Op.get("tir." + name), tuple(_str_or_expr(a) for a in args))


def _str_or_expr(value):
    return _StringImm(value) if isinstance(value, str) else value


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


# -- GPU synchronisation and warp-level matrix operations --------------------------------------

def tvm_storage_sync(scope: str) -> _Call:
    """``T.tvm_storage_sync("shared")``: a barrier over the threads sharing memory of ``scope``.

    Parameters
    ----------
    scope : str
        ``"shared"``, ``"global"``, ...

    Returns
    -------
    Call
        The call.
    """
    return _call("int32", "tvm_storage_sync", scope)


def tvm_thread_allreduce(*args) -> _Call:
    """``T.tvm_thread_allreduce(size, value, cond, result, thread, ...)``: a reduction across threads.

    Parameters
    ----------
    *args : PrimExpr
        Size, values, condition, result buffers and thread variables, as TVM orders them.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_thread_allreduce", *args)


def tvm_fill_fragment(fragment, m, n, k, index, value) -> _Call:
    """``T.tvm_fill_fragment(C.data, 16, 16, 16, index, value)``: fill a WMMA accumulator fragment.

    Parameters
    ----------
    fragment : Var
        The fragment buffer's data.
    m : int
        M.
    n : int
        N.
    k : int
        K.
    index : PrimExpr
        The fragment index.
    value : PrimExpr
        The fill value.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_fill_fragment", fragment, m, n, k, index, value)


def tvm_load_matrix_sync(fragment, m, n, k, index, buffer_ptr, stride, layout) -> _Call:
    """``T.tvm_load_matrix_sync(A.data, 16, 16, 16, index, ptr, stride, "row_major")``: load a WMMA fragment.

    Parameters
    ----------
    fragment : Var
        The fragment buffer's data.
    m : int
        M.
    n : int
        N.
    k : int
        K.
    index : PrimExpr
        The fragment index.
    buffer_ptr : PrimExpr
        The source address.
    stride : PrimExpr
        The row stride.
    layout : str
        ``"row_major"`` or ``"col_major"``.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_load_matrix_sync", fragment, m, n, k, index, buffer_ptr, stride, layout)


def tvm_store_matrix_sync(fragment, m, n, k, index, buffer_ptr, stride, layout) -> _Call:
    """``T.tvm_store_matrix_sync(C.data, 16, 16, 16, index, ptr, stride, "row_major")``: store a WMMA fragment.

    Parameters
    ----------
    fragment : Var
        The fragment buffer's data.
    m : int
        M.
    n : int
        N.
    k : int
        K.
    index : PrimExpr
        The fragment index.
    buffer_ptr : PrimExpr
        The destination address.
    stride : PrimExpr
        The row stride.
    layout : str
        ``"row_major"`` or ``"col_major"``.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_store_matrix_sync", fragment, m, n, k, index, buffer_ptr, stride, layout)


def tvm_mma_sync(d, d_index, a, a_index, b, b_index, c, c_index) -> _Call:
    """``T.tvm_mma_sync(D.data, di, A.data, ai, B.data, bi, C.data, ci)``: D = A * B + C on WMMA fragments.

    Parameters
    ----------
    d : Var
        D's data.
    d_index : PrimExpr
        D's fragment index.
    a : Var
        A's data.
    a_index : PrimExpr
        A's fragment index.
    b : Var
        B's data.
    b_index : PrimExpr
        B's fragment index.
    c : Var
        C's data.
    c_index : PrimExpr
        C's fragment index.

    Returns
    -------
    Call
        The call.
    """
    return _call("handle", "tvm_mma_sync", d, d_index, a, a_index, b, b_index, c, c_index)


def ptx_mma(dtype: str, *args) -> _Call:
    """``T.ptx_mma(dtype, shape, a_layout, b_layout, a_type, b_type, c_type, ...)``: an inline PTX ``mma.sync``.

    Parameters
    ----------
    dtype : str
        The result dtype.
    *args : PrimExpr or str
        The shape, layouts, types and operands, as TVM orders them.

    Returns
    -------
    Call
        The call.
    """
    return _call(dtype, "ptx_mma", *args)


def ptx_ldmatrix(dtype: str, *args) -> _Call:
    """``T.ptx_ldmatrix(dtype, trans, num, type, local_ptr, local_offset, smem_ptr, smem_offset)``.

    Parameters
    ----------
    dtype : str
        The result dtype.
    *args : PrimExpr
        trans, num, type, local_ptr, local_offset, smem_ptr, smem_offset.

    Returns
    -------
    Call
        The call.
    """
    return _call(dtype, "ptx_ldmatrix", *args)


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


# -- reductions (what te.compute bodies hold; printed as TVM prints them) --------------------------

_ITER_TYPES = {"DataPar": _E.IterVar.DataPar, "ThreadIndex": _E.IterVar.ThreadIndex,
               "CommReduce": _E.IterVar.CommReduce, "Ordered": _E.IterVar.Ordered, "DimInfo": _E.IterVar.Opaque,
               "Opaque": _E.IterVar.Opaque}


def iter_var(var, dom, iter_type, thread_tag: str = "") -> _E.IterVar:
    """``T.iter_var(k, T.Range(0, 16), "CommReduce", "")``: an iteration variable over ``dom``.

    Parameters
    ----------
    var : Var
        The variable.
    dom : Range
        Its domain.
    iter_type : str or int
        ``"DataPar"``, ``"CommReduce"``, ...
    thread_tag : str
        The thread tag (thread axes only).

    Returns
    -------
    IterVar
        The iteration variable.
    """
    if isinstance(iter_type, str):
        if iter_type not in _ITER_TYPES:
            raise _errors.TVMValueError(f"unknown iterator type {iter_type!r}; use one of {sorted(_ITER_TYPES)}")
        iter_type = _ITER_TYPES[iter_type]
    return _E.IterVar(dom, var, iter_type, thread_tag)


def comm_reducer(combiner, identity) -> _E.CommReducer:
    """``T.comm_reducer(lambda x, y: x + y, [T.float32(0)])``: a commutative reducer; ``combiner``
    takes the accumulators then the new values (``lambda x0, x1, y0, y1: (..., ...)`` for two).

    Parameters
    ----------
    combiner : callable
        Combines accumulators and new values.
    identity : list of PrimExpr
        The identity elements.

    Returns
    -------
    CommReducer
        The reducer.
    """
    identity = [_E.convert(e) for e in identity]
    if not identity:
        raise _errors.TVMValueError("T.comm_reducer needs one identity element per reduced value")
    n = len(identity)
    names = _parameter_names(combiner)
    if names is None or len(names) != 2 * n:
        names = ["x", "y"] if n == 1 else [f"{side}_{i}" for side in "xy" for i in range(n)]
    lhs = [_Var(name, e.dtype) for name, e in zip(names[:n], identity)]
    rhs = [_Var(name, e.dtype) for name, e in zip(names[n:], identity)]
    result = combiner(*lhs, *rhs)
    result = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(result) != len(identity):
        raise _errors.TVMValueError(f"the combiner gives {len(result)} values for {len(identity)} identity elements")
    return _E.CommReducer(lhs, rhs, result, identity)


def _parameter_names(function) -> list[str] | None:
    """The parameter names of a combiner (a TVMScript lambda records them; Python ones have a signature)."""
    import inspect

    names = getattr(function, "param_names", None)
    if names is not None:
        return list(names)
    try:
        return list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None


def reduce(combiner, source, init=(), axis=(), condition=True, value_index: int = 0) -> _E.Reduce:  # noqa: A001
    """``T.reduce(T.comm_reducer(...), source=[...], init=[], axis=[T.iter_var(...)], condition=...,
    value_index=0)``: a reduction (``te.sum`` and friends build these in ``te.compute`` bodies).

    Parameters
    ----------
    combiner : CommReducer
        The reducer.
    source : list of PrimExpr
        The reduced values.
    init : list of PrimExpr
        Initial values.
    axis : list of IterVar
        The reduction axes.
    condition : PrimExpr or bool
        Which points take part.
    value_index : int
        Which of the results this node is.

    Returns
    -------
    Reduce
        The node.
    """
    if not isinstance(combiner, _E.CommReducer):
        raise _errors.TVMTypeError("T.reduce takes a T.comm_reducer(...) first, e.g. "
                        "T.reduce(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), source=[...], axis=[...])")
    source = list(source) if isinstance(source, (list, tuple)) else [source]
    return _E.Reduce(combiner, source, list(axis), condition, value_index, list(init))


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
