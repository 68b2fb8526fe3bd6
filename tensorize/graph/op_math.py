"""Elementwise operators and the reductions of a row: softmax, layer norm, reduce_mean/sum/max.

Elementwise operators broadcast as numpy does (a scalar argument is a one-element constant folded
into the code).
"""
from __future__ import annotations

from .. import te
from ..ir import op as tir_op
from ..ir.expr import FloatImm
from ..ir.op import const
from .op_common import broadcast_shape, load_broadcast
from .op_registry import register

__all__: list = []


def _elemwise(name: str, fn, args, shapes):
    out = broadcast_shape(*shapes)
    return te.compute(out, lambda *i: fn(*[load_broadcast(a, s, i) for a, s in zip(args, shapes)]), name=name)


def _unary(name: str, fn):
    register(name, "elemwise")(lambda args, shapes, attrs: _elemwise(name, lambda x: fn(x, attrs), args, shapes))


def _binary(name: str, fn):
    register(name, "elemwise")(lambda args, shapes, attrs: _elemwise(name, fn, args, shapes))


def _f(x, value: float):
    return FloatImm(x.dtype, float(value))


def _gelu(x, attrs):
    if attrs.get("approximate", "none") == "tanh":
        inner = _f(x, 0.7978845608028654) * (x + _f(x, 0.044715) * x * x * x)
        return _f(x, 0.5) * x * (_f(x, 1.0) + tir_op.tanh(inner))
    return _f(x, 0.5) * x * (_f(x, 1.0) + tir_op.erf(x * _f(x, 0.7071067811865476)))


_unary("relu", lambda x, a: tir_op.max(x, _f(x, 0.0)))
_unary("clip", lambda x, a: tir_op.min(tir_op.max(x, _f(x, a.get("min", float("-inf")))), _f(x, a.get("max", float("inf")))))
_unary("sigmoid", lambda x, a: tir_op.sigmoid(x))
_unary("tanh", lambda x, a: tir_op.tanh(x))
_unary("exp", lambda x, a: tir_op.exp(x))
_unary("erf", lambda x, a: tir_op.erf(x))
_unary("sqrt", lambda x, a: tir_op.sqrt(x))
_unary("neg", lambda x, a: -x)
_unary("gelu", _gelu)
_unary("cast", lambda x, a: x.astype(a["dtype"]))
_binary("add", lambda x, y: x + y)
_binary("sub", lambda x, y: x - y)
_binary("mul", lambda x, y: x * y)
_binary("div", lambda x, y: x / y)
_binary("pow", lambda x, y: tir_op.pow(x, y))
_binary("maximum", lambda x, y: tir_op.max(x, y))
_binary("minimum", lambda x, y: tir_op.min(x, y))


def _axes(attrs, ndim: int) -> list:
    axes = attrs.get("axes")
    return sorted({a % ndim for a in (range(ndim) if axes is None else axes)})


def _reduce(name: str, reducer, data, shape, axes, keepdims: bool):
    ks = [te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes]
    out_shape = [1 if a in axes else d for a, d in enumerate(shape)] if keepdims else \
        [d for a, d in enumerate(shape) if a not in axes]

    def body(*i):
        it, ki, index = iter(i), iter(ks), []
        for a in range(len(shape)):
            if a in axes:
                index.append(next(ki).var)
                if keepdims:
                    next(it)
            else:
                index.append(next(it))
        return reducer(data(*index), axis=ks)

    return te.compute(out_shape, body, name=name), out_shape


@register("reduce_sum", "anchor")
def reduce_sum(args, shapes, attrs):
    """Sum over ``attrs['axes']`` (all axes when None), keeping them with extent 1 when ``keepdims``.

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
    axes = _axes(attrs, len(shapes[0]))
    return _reduce("reduce_sum", te.sum, args[0], shapes[0], axes, attrs.get("keepdims", True))[0]


@register("reduce_max", "anchor")
def reduce_max(args, shapes, attrs):
    """Maximum over ``attrs['axes']`` (all axes when None), keeping them with extent 1 when ``keepdims``.

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
    axes = _axes(attrs, len(shapes[0]))
    return _reduce("reduce_max", te.max, args[0], shapes[0], axes, attrs.get("keepdims", True))[0]


@register("reduce_mean", "anchor")
def reduce_mean(args, shapes, attrs):
    """Mean over ``attrs['axes']`` (all axes when None), keeping them with extent 1 when ``keepdims``.

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
    axes = _axes(attrs, len(shapes[0]))
    total, out_shape = _reduce("reduce_sum", te.sum, args[0], shapes[0], axes, attrs.get("keepdims", True))
    count = 1
    for a in axes:
        count *= shapes[0][a]
    return te.compute(out_shape, lambda *i: total(*i) * const(1.0 / count, total.dtype), name="reduce_mean")


def _row_reduce(name, reducer, fn, shape, axis):
    """``reducer`` over ``axis`` of ``fn(index)``, keeping the axis with extent 1."""
    k = te.reduce_axis((0, shape[axis]), name="k")
    out_shape = [1 if a == axis else d for a, d in enumerate(shape)]
    return te.compute(out_shape, lambda *i: reducer(fn(i[:axis] + (k.var,) + i[axis + 1:]), axis=k), name=name)


def _keep(i, axis):
    return i[:axis] + (0,) + i[axis + 1:]


@register("softmax", "anchor")
def softmax(args, shapes, attrs):
    """Softmax along ``attrs['axis']`` (default -1), with the maximum subtracted before ``exp``.

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
    x, shape = args[0], shapes[0]
    axis = attrs.get("axis", -1) % len(shape)
    mx = _row_reduce("softmax_max", te.max, lambda i: x(*i), shape, axis)
    ex = te.compute(shape, lambda *i: tir_op.exp(x(*i) - mx(*_keep(i, axis))), name="softmax_exp")
    sm = _row_reduce("softmax_sum", te.sum, lambda i: ex(*i), shape, axis)
    return te.compute(shape, lambda *i: ex(*i) / sm(*_keep(i, axis)), name="softmax")


@register("layer_norm", "anchor")
def layer_norm(args, shapes, attrs):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis (gamma, beta: 1-D).

    ``args`` is ``(x, gamma, beta)``; ``attrs['epsilon']`` defaults to 1e-5.

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
    x, gamma, beta = args
    shape = shapes[0]
    axis = len(shape) - 1
    inv_n = const(1.0 / shape[axis], x.dtype)
    total = _row_reduce("ln_sum", te.sum, lambda i: x(*i), shape, axis)
    mean = te.compute(total.shape, lambda *i: total(*i) * inv_n, name="ln_mean")
    sq = _row_reduce("ln_sqsum", te.sum, lambda i: (x(*i) - mean(*_keep(i, axis))) * (x(*i) - mean(*_keep(i, axis))),
                     shape, axis)
    eps = const(float(attrs.get("epsilon", 1e-5)), x.dtype)
    rstd = te.compute(total.shape, lambda *i: tir_op.rsqrt(sq(*i) * inv_n + eps), name="ln_rstd")
    return te.compute(shape, lambda *i: (x(*i) - mean(*_keep(i, axis))) * rstd(*_keep(i, axis))
                      * load_broadcast(gamma, shapes[1], i) + load_broadcast(beta, shapes[2], i), name="layer_norm")
