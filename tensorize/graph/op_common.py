"""Helpers the operator computations share: broadcasting loads and scalar constants."""
from __future__ import annotations

from ..ir.expr import PrimExpr
from ..te.tensor import Tensor

__all__ = ["load_broadcast", "broadcast_shape", "dtype_of"]


def broadcast_shape(*shapes) -> tuple:
    """numpy's broadcast of ``shapes`` (tuples of ints)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        dims = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0} - {1}
        if len(dims) > 1:
            raise ValueError(f"shapes {list(shapes)} do not broadcast (axis {axis}: {sorted(dims)})")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def load_broadcast(arg, shape, index) -> PrimExpr:
    """``arg`` (a te.Tensor of ``shape``, or a scalar expression) at output index ``index`` under
    numpy broadcasting: trailing axes align, axes of extent 1 read element 0."""
    if not isinstance(arg, Tensor):
        return arg
    offset = len(index) - len(shape)
    return arg(*[0 if dim == 1 else index[offset + axis] for axis, dim in enumerate(shape)])


def dtype_of(arg) -> str:
    return arg.dtype
