"""Index reductions: ``argmax`` and ``argmin`` over one or more axes, as TVM's ``topi`` builds them.

Each is two ``te.compute`` stages: ``<name>_red_temp`` reduces (index, value) pairs with a
two-value commutative reducer, and ``<name>_red`` keeps the index. Ties go to the first index
(``select_last_index=True``: the last).
"""
from __future__ import annotations

from typing import Sequence

from ..errors import TVMValueError
from ..ir.expr import Select, logical_and, logical_or
from ..ir.op import const, max_value, min_value
from ..te.reduction import comm_reducer
from ..te.tensor import Tensor, compute, reduce_axis


def _arg_reducer(bigger: bool, select_last_index: bool):
    def fcombine(lhs, rhs):
        lhs_idx, lhs_val = lhs
        rhs_idx, rhs_val = rhs
        wins = lhs_val > rhs_val if bigger else lhs_val < rhs_val
        proper = lhs_idx > rhs_idx if select_last_index else lhs_idx < rhs_idx
        keep_idx = logical_or(wins, logical_and(lhs_val == rhs_val, proper))
        return Select(keep_idx, lhs_idx, rhs_idx), Select(wins, lhs_val, rhs_val)

    def fidentity(idx_dtype, val_dtype):
        return const(-1, idx_dtype), (min_value(val_dtype) if bigger else max_value(val_dtype))

    return comm_reducer(fcombine, fidentity, name="argmax" if bigger else "argmin")


def _real_axes(ndim: int, axis) -> list[int]:
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        a = a + ndim if a < 0 else a
        if not 0 <= a < ndim:
            raise TVMValueError(f"axis {a} is out of range for a tensor of {ndim} dimension(s)")
        out.append(a)
    return sorted(set(out))


def _comm_reduce_idx(data: Tensor, axis, reducer, keepdims: bool, atleast1d: bool) -> Tensor:
    shape = list(data.shape)
    if not shape:
        raise TVMValueError("cannot reduce a 0-d tensor")
    axes = _real_axes(len(shape), axis)
    raxes = [reduce_axis((0, shape[a]), f"k{a}") for a in axes]
    if keepdims:
        target = [const(1, "int32") if i in axes else s for i, s in enumerate(shape)]
    else:
        target = [s for i, s in enumerate(shape) if i not in axes]
        if not target and atleast1d:
            target = [const(1, "int32")]

    def fcompute(*indices):
        rest = iter(indices)
        red = iter(raxes)
        eval_index = []
        for i in range(len(shape)):
            if i in axes:
                eval_index.append(next(red).var)
                if keepdims:
                    next(rest)
            else:
                eval_index.append(next(rest))
        flat = None
        for a, r in zip(axes, raxes):  # the reduced position as one row-major index
            flat = r.var if flat is None else flat * shape[a] + r.var
        return reducer((flat, data(*eval_index)), axis=raxes)

    name = data.op.name
    temp_idx, _ = compute(target, fcompute, name=name + "_red_temp", tag="comm_reduce_idx")
    return compute(target, lambda *i: temp_idx(*i), name=name + "_red", tag="comm_reduce_idx")


def argmax(data: Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False,
           select_last_index: bool = False) -> Tensor:
    """The index of the largest element along ``axis`` (``topi.argmax``).

    Parameters
    ----------
    data : Tensor
        The input.
    axis : int or list of int, optional
        The axes to reduce (all when None); several axes give a row-major flat index over them.
    keepdims : bool
        Keep the reduced axes with extent 1.
    select_last_index : bool
        On ties, the last index instead of the first.

    Returns
    -------
    Tensor
        The int32 indices.

    Examples
    --------
    >>> from tensorize import te
    >>> A = te.placeholder((3, 4), dtype="float32", name="A")
    >>> B = argmax(A, axis=1)
    >>> B.op.name, B.dtype
    ('A_red', 'int32')
    """
    return _comm_reduce_idx(data, axis, _arg_reducer(True, select_last_index), keepdims, False)


def argmin(data: Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False,
           select_last_index: bool = False) -> Tensor:
    """The index of the smallest element along ``axis`` (``topi.argmin``).

    Parameters
    ----------
    data : Tensor
        The input.
    axis : int or list of int, optional
        The axes to reduce (all when None).
    keepdims : bool
        Keep the reduced axes with extent 1.
    select_last_index : bool
        On ties, the last index instead of the first.

    Returns
    -------
    Tensor
        The int32 indices.

    Examples
    --------
    >>> from tensorize import te
    >>> A = te.placeholder((3, 4), dtype="float32", name="A")
    >>> argmin(A, axis=0).shape
    (4,)
    """
    return _comm_reduce_idx(data, axis, _arg_reducer(False, select_last_index), keepdims, False)
