"""Helpers the operator computations share: broadcasting loads and scalar constants."""
from __future__ import annotations

from ..ir.expr import PrimExpr
from ..te.tensor import Tensor

__all__ = ["load_broadcast", "broadcast_shape", "dtype_of"]


def broadcast_shape(*shapes) -> tuple:
    """numpy's broadcast of ``shapes``.

    Parameters
    ----------
    *shapes : tuple of int
        The shapes to broadcast together.

    Returns
    -------
    tuple of int
        The broadcast shape.

    Raises
    ------
    ValueError
        When the shapes do not broadcast.

    Examples
    --------
    >>> broadcast_shape((4, 1, 3), (5, 1))
    (4, 5, 3)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        dims = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0} - {1}
        if len(dims) > 1:
            raise ValueError(f"shapes {list(shapes)} do not broadcast (axis {axis}: {sorted(dims)})")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def load_broadcast(arg, shape, index) -> PrimExpr:
    """``arg`` at output index ``index`` under numpy broadcasting.

    Trailing axes align; axes of extent 1 read element 0.

    Parameters
    ----------
    arg : te.Tensor or PrimExpr
        A tensor of ``shape``, or a scalar expression (returned as is).
    shape : tuple of int
        The shape of ``arg``.
    index : sequence of PrimExpr
        The output index (at least as many axes as ``shape``).

    Returns
    -------
    PrimExpr
        The load (or the scalar).
    """
    if not isinstance(arg, Tensor):
        return arg
    offset = len(index) - len(shape)
    return arg(*[0 if dim == 1 else index[offset + axis] for axis, dim in enumerate(shape)])


def dtype_of(arg) -> str:
    """The dtype of ``arg``.

    Parameters
    ----------
    arg : te.Tensor or PrimExpr
        A tensor or an expression.

    Returns
    -------
    str
        Its dtype, e.g. ``"float32"``.
    """
    return arg.dtype
