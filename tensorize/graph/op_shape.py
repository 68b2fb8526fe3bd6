"""Operators that move data: transpose, concat, gather, strided slice, and reshape (a view)."""
from __future__ import annotations

from .. import te
from ..ir import op as tir_op
from ..te.tensor import Tensor
from .op_registry import register

__all__: list = []


@register("transpose", "injective")
def transpose(args, shapes, attrs):
    """Permute the axes: output axis ``a`` is input axis ``attrs['perm'][a]``.

    Parameters
    ----------
    args : list of te.Tensor or PrimExpr
        The inputs (a scalar expression for a one-element constant).
    shapes : list of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.
    """
    data, perm = args[0], attrs["perm"]
    shape = shapes[0]
    inverse = [perm.index(a) for a in range(len(perm))]
    return te.compute([shape[p] for p in perm], lambda *i: data(*[i[inverse[a]] for a in range(len(shape))]),
                      name="transpose")


@register("concat", "injective")
def concat(args, shapes, attrs):
    """Join the inputs along ``attrs['axis']``.

    Parameters
    ----------
    args : list of te.Tensor or PrimExpr
        The inputs (a scalar expression for a one-element constant).
    shapes : list of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.
    """
    axis = attrs["axis"] % len(shapes[0])
    offsets, total = [], 0
    for s in shapes:
        offsets.append(total)
        total += s[axis]
    out = list(shapes[0])
    out[axis] = total

    def body(*i):
        value = None
        for arg, off in zip(args, offsets):
            idx = list(i)
            idx[axis] = i[axis] - off
            load = arg(*idx) if isinstance(arg, Tensor) else arg
            value = load if value is None else tir_op.if_then_else(i[axis] >= off, load, value)
        return value

    return te.compute(out, body, name="concat")


@register("gather", "injective")
def gather(args, shapes, attrs):
    """numpy's ``take(data, indices, axis)``; negative indices count from the end.

    ``args`` is ``(data, indices)``; ``attrs['axis']`` defaults to 0.

    Parameters
    ----------
    args : list of te.Tensor or PrimExpr
        The inputs (a scalar expression for a one-element constant).
    shapes : list of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.
    """
    data, indices = args
    axis = attrs.get("axis", 0) % len(shapes[0])
    dshape, ishape = shapes
    dim = dshape[axis]
    out = list(dshape[:axis]) + list(ishape) + list(dshape[axis + 1:])

    def body(*i):
        pos = i[axis:axis + len(ishape)]
        index = (indices(*pos) if isinstance(indices, Tensor) else indices).astype("int32")
        index = tir_op.if_then_else(index < 0, index + dim, index)
        return data(*i[:axis], index, *i[axis + len(ishape):])

    return te.compute(out, body, name="gather")


@register("strided_slice", "injective")
def strided_slice(args, shapes, attrs):
    """``data[begin:end:step]`` per axis (``attrs``: begin, end, step, normalised by the frontend).

    Parameters
    ----------
    args : list of te.Tensor or PrimExpr
        The inputs (a scalar expression for a one-element constant).
    shapes : list of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.
    """
    data = args[0]
    begin, end, step = attrs["begin"], attrs["end"], attrs["step"]
    out = [max(0, -(-(e - b) // s)) for b, e, s in zip(begin, end, step)]
    return te.compute(out, lambda *i: data(*[b + s * x for b, s, x in zip(begin, step, i)]), name="strided_slice")


@register("reshape", "view")
def reshape(args, shapes, attrs):
    """Reshape is a view with no computation: the executor aliases its input's memory.

    Parameters
    ----------
    args : list of te.Tensor
        Unused.
    shapes : list of tuple of int
        Unused.
    attrs : dict
        Unused (``attrs['shape']`` is the new shape).

    Raises
    ------
    NotImplementedError
        Always.
    """
    raise NotImplementedError("reshape is a view: the executor aliases its input's memory")
