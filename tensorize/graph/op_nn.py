"""Neural-network operators in NHWC: conv2d (grouped and depthwise), pooling, dense, batch_matmul.

Weights come in the layout the frontend rewrote them to at load: conv2d ``(KH, KW, C_in/groups,
C_out)``, dense ``(K, N)``.
"""
from __future__ import annotations

from .. import te
from ..ir import op as tir_op
from ..ir.op import const
from .op_common import broadcast_shape
from .op_registry import register

__all__: list = []


def _pad(data, shape, pads, value, name="pad"):
    """``data`` (NHWC) padded on H and W by ``pads`` = (top, left, bottom, right) with ``value``."""
    top, left, bottom, right = pads
    if not any(pads):
        return data
    n, h, w, c = shape

    def body(i, y, x, ch):
        inside = tir_op.all(y >= top, y < h + top, x >= left, x < w + left)
        return tir_op.if_then_else(inside, data[i, y - top, x - left, ch], value)

    return te.compute((n, h + top + bottom, w + left + right, c), body, name=name)


def _window(shape, attrs, kernel):
    strides = attrs.get("strides", (1, 1))
    dil = attrs.get("dilations", (1, 1))
    pads = tuple(attrs.get("pads", (0, 0, 0, 0)))
    oh = (shape[1] + pads[0] + pads[2] - dil[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    ow = (shape[2] + pads[1] + pads[3] - dil[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    return strides, dil, pads, oh, ow


@register("conv2d", "anchor")
def conv2d(args, shapes, attrs):
    """NHWC x (KH, KW, C_in/groups, C_out) -> NHWC; ``attrs``: strides, pads, dilations, groups.

    Pads are (top, left, bottom, right); one input channel per group with ``groups > 1`` is a
    depthwise convolution.

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
    data, weight = args
    kh, kw, cig, co = shapes[1]
    groups = attrs.get("groups", 1)
    (sh, sw), (dh, dw), pads, oh, ow = _window(shapes[0], attrs, (kh, kw))
    padded = _pad(data, shapes[0], pads, const(0.0, data.dtype))
    ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")
    out_shape = (shapes[0][0], oh, ow, co)
    if cig == 1 and groups > 1:  # depthwise (channel multiplier co / groups)
        mult = co // groups
        return te.compute(out_shape, lambda n, y, x, c: te.sum(
            padded[n, y * sh + ry * dh, x * sw + rx * dw, c // mult] * weight[ry, rx, 0, c], axis=[ry, rx]),
            name="depthwise_conv2d")
    rc = te.reduce_axis((0, cig), name="rc")
    if groups == 1:
        return te.compute(out_shape, lambda n, y, x, c: te.sum(
            padded[n, y * sh + ry * dh, x * sw + rx * dw, rc] * weight[ry, rx, rc, c], axis=[ry, rx, rc]),
            name="conv2d")
    cog = co // groups
    return te.compute(out_shape, lambda n, y, x, c: te.sum(
        padded[n, y * sh + ry * dh, x * sw + rx * dw, (c // cog) * cig + rc] * weight[ry, rx, rc, c],
        axis=[ry, rx, rc]), name="group_conv2d")


@register("max_pool2d", "anchor")
def max_pool2d(args, shapes, attrs):
    """Maximum over each window of an NHWC input; ``attrs``: kernel, strides, pads, dilations.

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
    kh, kw = attrs["kernel"]
    (sh, sw), (dh, dw), pads, oh, ow = _window(shapes[0], attrs, (kh, kw))
    padded = _pad(data, shapes[0], pads, tir_op.min_value(data.dtype))
    ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")
    return te.compute((shapes[0][0], oh, ow, shapes[0][3]), lambda n, y, x, c: te.max(
        padded[n, y * sh + ry * dh, x * sw + rx * dw, c], axis=[ry, rx]), name="max_pool2d")


@register("avg_pool2d", "anchor")
def avg_pool2d(args, shapes, attrs):
    """Average over each window of an NHWC input; the padding counts only with ``count_include_pad``.

    ``attrs``: kernel, strides, pads, count_include_pad.

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
    n, h, w, c = shapes[0]
    kh, kw = attrs["kernel"]
    (sh, sw), _, pads, oh, ow = _window(shapes[0], attrs, (kh, kw))
    padded = _pad(data, shapes[0], pads, const(0.0, data.dtype))
    ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")
    total = te.compute((n, oh, ow, c), lambda b, y, x, ch: te.sum(padded[b, y * sh + ry, x * sw + rx, ch],
                                                                 axis=[ry, rx]), name="pool_sum")
    if attrs.get("count_include_pad", False) or not any(pads):
        return te.compute(total.shape, lambda *i: total(*i) * const(1.0 / (kh * kw), data.dtype), name="avg_pool2d")
    top, left = pads[0], pads[1]

    def count(y, x):
        y0, x0 = y * sh - top, x * sw - left
        hy = tir_op.min(y0 + kh, h) - tir_op.max(y0, 0)
        wx = tir_op.min(x0 + kw, w) - tir_op.max(x0, 0)
        return (hy * wx).astype(data.dtype)

    return te.compute(total.shape, lambda b, y, x, ch: total[b, y, x, ch] / count(y, x), name="avg_pool2d")


@register("global_avg_pool2d", "anchor")
def global_avg_pool2d(args, shapes, attrs):
    """Mean over H and W: NHWC -> (N, 1, 1, C).

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
    n, h, w, c = shapes[0]
    ry, rx = te.reduce_axis((0, h), name="ry"), te.reduce_axis((0, w), name="rx")
    total = te.compute((n, 1, 1, c), lambda b, y, x, ch: te.sum(data[b, ry, rx, ch], axis=[ry, rx]), name="pool_sum")
    return te.compute(total.shape, lambda *i: total(*i) * const(1.0 / (h * w), data.dtype), name="global_avg_pool2d")


@register("dense", "anchor")
def dense(args, shapes, attrs):
    """``(..., K) x (K, N) -> (..., N)``.

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
    data, weight = args
    k = te.reduce_axis((0, shapes[1][0]), name="k")
    out = tuple(shapes[0][:-1]) + (shapes[1][1],)
    return te.compute(out, lambda *i: te.sum(data(*i[:-1], k) * weight[k, i[-1]], axis=k), name="dense")


@register("batch_matmul", "anchor")
def batch_matmul(args, shapes, attrs):
    """``(..., M, K) x (..., K, N) -> (..., M, N)`` with the batch axes broadcast.

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
    a, b = args
    (sa, sb) = shapes
    batch = broadcast_shape(sa[:-2], sb[:-2])
    k = te.reduce_axis((0, sa[-1]), name="k")

    def idx(shape, i):
        off = len(batch) - (len(shape) - 2)
        return [0 if d == 1 else i[off + ax] for ax, d in enumerate(shape[:-2])]

    def body(*i):
        m, n = i[-2], i[-1]
        return te.sum(a(*idx(sa, i), m, k) * b(*idx(sb, i), k, n), axis=k)

    return te.compute(tuple(batch) + (sa[-2], sb[-1]), body, name="batch_matmul")
