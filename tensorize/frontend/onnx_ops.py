"""The ONNX operators the importer understands, each a converter ``(ctx, node, attrs) -> None``."""
from __future__ import annotations

import numpy as np

from ..errors import TVMValueError
from .onnx_layout import TO_NHWC, ImportContext

__all__ = ["CONVERTERS"]

CONVERTERS: dict = {}


def converter(*names):
    """Register the decorated function as the converter of the ONNX operators ``names``.

    Parameters
    ----------
    *names : str
        ONNX operator names (``node.op_type``).

    Returns
    -------
    callable
        A decorator that adds the function to ``CONVERTERS`` under each name and returns it unchanged.
    """
    def wrap(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn

    return wrap


def _inputs(node):
    return list(node.input)


def _nhwc(ctx: ImportContext, name: str) -> bool:
    return ctx.layout(name) == "NHWC"


_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Erf": "erf", "Sqrt": "sqrt",
          "Neg": "neg"}
_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Max": "maximum", "Min": "minimum"}


@converter(*_UNARY)
def unary(ctx, node, attrs):
    """Convert an elementwise unary operator (Relu, Sigmoid, Tanh, Exp, Erf, Sqrt, Neg).

    The output keeps the input's layout.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    x = node.input[0]
    layout = "NHWC" if _nhwc(ctx, x) else "NCHW"
    ctx.set(node.output[0], ctx.graph.add_node(_UNARY[node.op_type], [ctx.get(x, layout)]), layout)


@converter("Gelu")
def gelu(ctx, node, attrs):
    """Convert Gelu (``approximate`` is ``"none"`` or ``"tanh"``); the output keeps the input's layout.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    x = node.input[0]
    layout = "NHWC" if _nhwc(ctx, x) else "NCHW"
    ctx.set(node.output[0], ctx.graph.add_node("gelu", [ctx.get(x, layout)],
                                               {"approximate": attrs.get("approximate", "none")}), layout)


@converter("Clip")
def clip(ctx, node, attrs):
    """Convert Clip, its bounds read from constant inputs (opset >= 11) or attributes (older opsets).

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ins = _inputs(node)
    lo = float(ctx.const(ins[1])) if len(ins) > 1 and ins[1] else attrs.get("min", float("-inf"))
    hi = float(ctx.const(ins[2])) if len(ins) > 2 and ins[2] else attrs.get("max", float("inf"))
    layout = "NHWC" if _nhwc(ctx, ins[0]) else "NCHW"
    ctx.set(node.output[0], ctx.graph.add_node("clip", [ctx.get(ins[0], layout)], {"min": lo, "max": hi}), layout)


def _const_nhwc(array: np.ndarray) -> np.ndarray:
    """A constant broadcast against an NCHW tensor, rewritten to broadcast against its NHWC form."""
    if array.ndim < 3:  # trailing axes align with (H, W) or W: only extents of 1 move safely
        if array.size == 1:
            return array
        array = array.reshape((1,) * (4 - array.ndim) + array.shape)
    elif array.ndim == 3:
        array = array[None]
    return np.transpose(array, TO_NHWC)


@converter(*_BINARY)
def binary(ctx, node, attrs):
    """Convert a broadcasting binary operator (Add, Sub, Mul, Div, Pow, Max, Min).

    The operation runs in NHWC when its run-time 4-D operands are NHWC (constants are rewritten to
    match); ``x ** 2`` with a constant exponent becomes ``x * x``.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    a, b = node.input[0], node.input[1]
    op = _BINARY[node.op_type]
    if op == "pow" and ctx.is_const(b) and ctx.const(b).size == 1 and float(ctx.const(b)) == 2.0:
        op, b = "mul", a
    dynamic = [x for x in (a, b) if not ctx.is_const(x)]
    nhwc = any(_nhwc(ctx, x) for x in dynamic) and all(len(ctx.shape(x)) == 4 for x in dynamic)
    if not nhwc:
        ctx.set(node.output[0], ctx.graph.add_node(op, [ctx.get(a), ctx.get(b)]))
        return
    args = []
    for x in (a, b):
        if ctx.is_const(x):
            args.append(ctx.graph.add_constant(f"{node.op_type.lower()}_c", _const_nhwc(ctx.const(x))))
        else:
            args.append(ctx.get(x, "NHWC"))
    ctx.set(node.output[0], ctx.graph.add_node(op, args), "NHWC")


def _pads(attrs, kernel, in_hw, strides, dilations):
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0, 0, 0, 0]
        for i in range(2):
            out = -(-in_hw[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_hw[i])
            small, big = total // 2, total - total // 2
            pads[i], pads[i + 2] = (small, big) if auto == "SAME_UPPER" else (big, small)
    elif auto == "VALID":
        pads = [0, 0, 0, 0]
    return (pads[0], pads[1], pads[2], pads[3])


@converter("Conv")
def conv(ctx, node, attrs):
    """Convert a 2-D Conv (groups, strides, pads, dilations, optional bias) into an NHWC ``conv2d``.

    The weight is stored as HWIO; ``auto_pad`` is resolved into explicit pads.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ins = _inputs(node)
    weight = ctx.const(ins[1])
    if weight.ndim != 4:
        raise TVMValueError(f"Conv {node.name!r}: only 2-D convolutions are supported (weight rank {weight.ndim})")
    kernel = weight.shape[2:]
    strides = tuple(attrs.get("strides", [1, 1]))
    dil = tuple(attrs.get("dilations", [1, 1]))
    pads = _pads(attrs, kernel, ctx.shape(ins[0])[2:], strides, dil)
    w = ctx.graph.add_constant("conv_w", np.ascontiguousarray(np.transpose(weight, (2, 3, 1, 0))))
    y = ctx.graph.add_node("conv2d", [ctx.get(ins[0], "NHWC"), w], {
        "strides": strides, "pads": pads, "dilations": dil, "groups": int(attrs.get("group", 1))})
    if len(ins) > 2 and ins[2]:
        y = ctx.graph.add_node("add", [y, ctx.graph.add_constant("conv_b", ctx.const(ins[2]))])
    ctx.set(node.output[0], y, "NHWC")


@converter("BatchNormalization")
def batch_norm(ctx, node, attrs):
    """Convert an inference-mode BatchNormalization into a multiply and an add of folded constants.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    x, gamma, beta, mean, var = (node.input[0],) + tuple(ctx.const(n) for n in node.input[1:5])
    scale = gamma / np.sqrt(var + attrs.get("epsilon", 1e-5))
    shift = beta - mean * scale
    nhwc = _nhwc(ctx, x)
    shape = (-1,) if nhwc else (-1,) + (1,) * (len(ctx.shape(x)) - 2)
    layout = "NHWC" if nhwc else "NCHW"
    y = ctx.graph.add_node("mul", [ctx.get(x, layout), ctx.graph.add_constant("bn_scale", scale.reshape(shape))])
    y = ctx.graph.add_node("add", [y, ctx.graph.add_constant("bn_shift", shift.astype(scale.dtype).reshape(shape))])
    ctx.set(node.output[0], y, layout)


@converter("MaxPool", "AveragePool")
def pool(ctx, node, attrs):
    """Convert MaxPool or AveragePool into an NHWC ``max_pool2d`` or ``avg_pool2d``.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    kernel = tuple(attrs["kernel_shape"])
    strides = tuple(attrs.get("strides", [1, 1]))
    pads = _pads(attrs, kernel, ctx.shape(node.input[0])[2:], strides, (1, 1))
    op = "max_pool2d" if node.op_type == "MaxPool" else "avg_pool2d"
    ctx.set(node.output[0], ctx.graph.add_node(op, [ctx.get(node.input[0], "NHWC")], {
        "kernel": kernel, "strides": strides, "pads": pads,
        "count_include_pad": bool(attrs.get("count_include_pad", 0))}), "NHWC")


@converter("GlobalAveragePool")
def global_avg_pool(ctx, node, attrs):
    """Convert GlobalAveragePool into an NHWC ``global_avg_pool2d``.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ctx.set(node.output[0], ctx.graph.add_node("global_avg_pool2d", [ctx.get(node.input[0], "NHWC")]), "NHWC")
