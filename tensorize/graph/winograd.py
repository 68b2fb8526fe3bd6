"""Winograd convolution: 3x3 stride-1 convolutions as transforms around a batched GEMM.

``F(m x m, 3 x 3)`` (Lavin and Gray, 2016) computes each ``m x m`` tile of the output from an
``(m + 2) x (m + 2)`` tile of the input with ``(m + 2)^2`` multiplications per input and output channel
pair instead of ``9 m^2``: 4x fewer for ``m = 4``, 2.25x for ``m = 2``. ``use_winograd`` replaces a
convolution by five operators (NHWC in and out, as ``conv2d``), each its own kernel: the input transform
``B^T d B`` by rows (``winograd_input_rows``) and by columns (``winograd_input``), one GEMM per tile
position over all tiles (``winograd_gemm``, with the weight transformed once, here: ``U = G g G^T``, as
TVM's ``contrib_conv2d_winograd_weight_transform``), and the output transform ``A^T M A`` by rows and
columns (``winograd_output_rows``, ``winograd_output``, where an epilogue fuses as into a direct
convolution). ``B^T`` and ``A^T`` are graph constants. Kept apart, the transforms are memory-bound passes
of the default schedule and the GEMM a task the search tunes like any other; intermediates are values
of the graph, so the executor's arena holds them (one kernel with five stages allocated them per call).

``use_winograd(graph)`` rewrites the convolutions it pays for: 3x3, stride 1, no dilation or groups,
a constant float32 weight, and enough tiles that the transforms are amortized.

>>> import numpy as np
>>> bt, g, at = winograd_matrices(2)
>>> d, k = np.arange(4.0), np.array([1.0, 2.0, 3.0])  # 1-D: two outputs of a 3-tap correlation
>>> at @ ((g @ k) * (bt @ d))
array([ 8., 14.])
"""
from __future__ import annotations

import logging
import math

import numpy as np

from .. import te
from ..ir.op import const
from .op_nn import _pad
from .op_registry import register

logger = logging.getLogger(__name__)

__all__ = ["winograd_matrices", "use_winograd", "winograd_tile"]

# Interpolation points 0, 1, -1 (m = 2) and 0, +-1, +-2 (m = 4), with the point at infinity.
_MATRICES = {
    2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]]),
    4: ([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
         [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
         [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
}

# Fewer tiles than this leave the transforms unamortized (and the transformed weight, (m + 2)^2 / 9
# times the original, read for little work): the convolution stays direct.
_MIN_TILES = 36


def winograd_matrices(m: int):
    """``(B^T, G, A^T)`` of ``F(m, 3)`` as float64 arrays: ``A^T [(G g) * (B^T d)]`` is the correlation
    of ``m + 2`` inputs ``d`` with 3 taps ``g``.

    Parameters
    ----------
    m : int
        Outputs per tile side: 2 or 4.

    Returns
    -------
    tuple of numpy.ndarray
        ``B^T`` (m+2, m+2), ``G`` (m+2, 3), ``A^T`` (m, m+2).

    Raises
    ------
    ValueError
        For another ``m``.
    """
    if m not in _MATRICES:
        raise ValueError(f"Winograd tile of {m} outputs: only {sorted(_MATRICES)} are available")
    return tuple(np.array(a, dtype="float64") for a in _MATRICES[m])


def winograd_tile(out_h: int, out_w: int, in_channels: int, out_channels: int) -> int | None:
    """The tile ``m`` that ``use_winograd`` gives a 3x3 stride-1 convolution with this output, or None
    (direct): 4 where 4x4 tiles cover the output exactly and are many enough, else 2 likewise.

    Parameters
    ----------
    out_h, out_w : int
        The output's height and width.
    in_channels, out_channels : int
        The channels (fewer than 8 in or 16 out leave the GEMM too small to pay).

    Returns
    -------
    int or None

    Examples
    --------
    >>> winograd_tile(56, 56, 64, 64), winograd_tile(14, 14, 256, 256), winograd_tile(7, 7, 512, 512)
    (4, 2, None)
    """
    if in_channels < 8 or out_channels < 16:
        return None
    for m in (4, 2):
        if out_h % m == 0 and out_w % m == 0 and (out_h // m) * (out_w // m) >= _MIN_TILES:
            return m
    return None


def _tiles(shape, attrs):
    """(oh, ow, th, tw) of a 3x3 stride-1 convolution of NHWC ``shape`` with ``attrs["pads"]``, tile ``m``."""
    _, h, w, _ = shape
    top, left, bottom, right = tuple(attrs["pads"])
    m = attrs["m"]
    oh, ow = h + top + bottom - 2, w + left + right - 2
    return oh, ow, math.ceil(oh / m), math.ceil(ow / m)


# The tiles are one axis P = N x TH x TW (tile p at image p // (TH TW), tile row p // TW % TH, column
# p % TW), so the GEMM is a plain batched GEMM of (m+2)^2 matrices, and the search tiles 3 loops, not 6.

@register("winograd_input_rows", "anchor")
def winograd_input_rows(args, shapes, attrs):
    """NHWC input, ``B^T`` -> ``(P, m+2, m+2, C)``: each padded input tile times ``B^T`` from the left
    (``attrs``: pads, m): the first half of the input transform ``B^T d B``.

    Parameters
    ----------
    args : list of te.Tensor or PrimExpr
        The input and ``B^T``.
    shapes : list of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.
    """
    data, bt = args
    n, h, w, c = shapes[0]
    m, alpha = attrs["m"], shapes[1][0]
    top, left = tuple(attrs["pads"])[:2]
    _, _, th, tw = _tiles(shapes[0], attrs)
    padded = _pad(data, shapes[0], (top, left, th * m + 2 - h - top, tw * m + 2 - w - left), const(0.0, data.dtype))
    r = te.reduce_axis((0, alpha), name="r")
    return te.compute((n * th * tw, alpha, alpha, c), lambda p, e, col, ch: te.sum(
        bt[e, r] * padded[p // (th * tw), p // tw % th * m + r, p % tw * m + col, ch], axis=r),
        name="winograd_input_rows")


@register("winograd_input", "anchor")
def winograd_input(args, shapes, attrs):
    """``winograd_input_rows``'s tiles, ``B^T`` -> ``((m+2)^2, P, C)``: times ``B`` from the right, each
    tile position a (tiles x channels) matrix for the GEMM.

    Parameters
    ----------
    args : list of te.Tensor or PrimExpr
        The row-transformed tiles and ``B^T``.
    shapes : list of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.
    """
    rows, bt = args
    tiles, alpha, _, c = shapes[0]
    r = te.reduce_axis((0, alpha), name="r")
    return te.compute((alpha * alpha, tiles, c), lambda eu, p, ch: te.sum(
        rows[p, eu // alpha, r, ch] * bt[eu % alpha, r], axis=r), name="winograd_input")


@register("winograd_gemm", "anchor")
def winograd_gemm(args, shapes, attrs):
    """Transformed tiles ``((m+2)^2, P, C_in)`` x transformed weight ``((m+2)^2, C_in, C_out)`` ->
    ``((m+2)^2, P, C_out)``: one GEMM per tile position.

    Parameters
    ----------
    args : list of te.Tensor or PrimExpr
        The transformed input and weight.
    shapes : list of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.
    """
    tiles, weight = args
    positions, count, ci = shapes[0]
    rc = te.reduce_axis((0, ci), name="rc")
    return te.compute((positions, count, shapes[1][2]), lambda e, p, k: te.sum(
        tiles[e, p, rc] * weight[e, rc, k], axis=rc), name="winograd_gemm")


@register("winograd_output_rows", "anchor")
def winograd_output_rows(args, shapes, attrs):
    """The GEMM's products, ``A^T`` -> ``(P, m, m+2, C)``: ``A^T`` times each tile from the left.

    Parameters
    ----------
    args : list of te.Tensor or PrimExpr
        The products and ``A^T``.
    shapes : list of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.
    """
    product, at = args
    _, tiles, c = shapes[0]
    m, alpha = shapes[1]
    r = te.reduce_axis((0, alpha), name="r")
    return te.compute((tiles, m, alpha, c), lambda p, i, u, k: te.sum(
        at[i, r] * product[r * alpha + u, p, k], axis=r), name="winograd_output_rows")


@register("winograd_output", "anchor")
def winograd_output(args, shapes, attrs):
    """``winograd_output_rows``'s tiles, ``A^T`` -> the NHWC output ``(N, oh, ow, C)`` (``attrs``: out,
    the output's height and width): times ``A`` from the right, each ``m x m`` tile in its place. An
    epilogue fuses here.

    Parameters
    ----------
    args : list of te.Tensor or PrimExpr
        The row-transformed products and ``A^T``.
    shapes : list of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.
    """
    rows, at = args
    tiles, m, alpha, c = shapes[0]
    oh, ow = attrs["out"]
    th, tw = math.ceil(oh / m), math.ceil(ow / m)
    r = te.reduce_axis((0, alpha), name="r")
    return te.compute((tiles // (th * tw), oh, ow, c), lambda b, y, x, k: te.sum(
        at[x % m, r] * rows[(b * th + y // m) * tw + x // m, y % m, r, k], axis=r), name="winograd_output")


def use_winograd(graph) -> int:
    """Rewrite ``graph``'s eligible convolutions (``winograd_tile``) into the five Winograd stages (each
    its own kernel: the transforms are memory-bound passes, the GEMM a task the search tunes as any
    other), their weights transformed once, here (in float64, then cast).

    Parameters
    ----------
    graph : Graph
        Modified in place; weights no other node reads are dropped.

    Returns
    -------
    int
        How many convolutions were rewritten.
    """
    consts: dict[tuple, str] = {}
    count, order = 0, []
    for node in list(graph.nodes):
        order.append(node)
        if node.op != "conv2d" or len(node.inputs) != 2 or node.inputs[1] not in graph.constants:
            continue
        weight = graph.constants[node.inputs[1]]
        kh, kw, cig, co = weight.shape
        attrs = node.attrs
        if (kh, kw) != (3, 3) or weight.dtype != np.float32 or attrs.get("groups", 1) != 1 \
                or tuple(attrs.get("strides", (1, 1))) != (1, 1) or tuple(attrs.get("dilations", (1, 1))) != (1, 1):
            continue
        (_, oh, ow, _), _ = graph.types[node.output]
        m = winograd_tile(oh, ow, cig, co)
        if m is None:
            continue
        bt, g, at = winograd_matrices(m)
        transformed = np.einsum("ea,abio,ub->euio", g, weight.astype("float64"), g).astype("float32")
        transformed = transformed.reshape(-1, cig, co)
        for key, value in ((("bt", m), bt), (("at", m), at)):
            if key not in consts:
                consts[key] = graph.add_constant(f"winograd_{key[0]}{m}", value.astype("float32"))
        u_name = graph.add_constant(f"{node.inputs[1]}_winograd{m}", transformed)
        first = len(graph.nodes)
        pads = tuple(attrs.get("pads", (0, 0, 0, 0)))
        bt_name, at_name = consts[("bt", m)], consts[("at", m)]
        rows = graph.add_node("winograd_input_rows", [node.inputs[0], bt_name], {"pads": pads, "m": m})
        tiles = graph.add_node("winograd_input", [rows, bt_name])
        product = graph.add_node("winograd_gemm", [tiles, u_name])
        out_rows = graph.add_node("winograd_output_rows", [product, at_name])
        node.op, node.inputs, node.attrs = "winograd_output", [out_rows, at_name], {"out": (oh, ow)}
        order[-1:-1] = graph.nodes[first:]  # the stages before the node they feed
        count += 1
    graph.nodes = order
    if count:
        graph.prune()
        logger.debug("%d convolutions rewritten to Winograd", count)
    return count
