"""ONNX converters in ONNX's own layout: matrix products, normalisation, reductions, shape moves."""
from __future__ import annotations

import math

import numpy as np

from ..errors import TVMValueError
from .onnx_ops import converter


def _add_const(ctx, hint, array):
    return ctx.graph.add_constant(hint, np.ascontiguousarray(array))


@converter("MatMul")
def matmul(ctx, node, attrs):
    """Convert MatMul: ``dense`` with a constant 2-D right operand, else ``batch_matmul``.

    Raises TVMValueError for 1-D operands.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    a, b = node.input
    if ctx.is_const(b) and ctx.const(b).ndim == 2 and len(ctx.shape(a)) >= 2:
        y = ctx.graph.add_node("dense", [ctx.get(a), _add_const(ctx, "dense_w", ctx.const(b))])
    else:
        if len(ctx.shape(a)) < 2 or len(ctx.shape(b)) < 2:
            raise TVMValueError(f"MatMul {node.name!r}: 1-D operands are not supported; reshape them to 2-D")
        y = ctx.graph.add_node("batch_matmul", [ctx.get(a), ctx.get(b)])
    ctx.set(node.output[0], y)


@converter("Gemm")
def gemm(ctx, node, attrs):
    """Convert Gemm (``alpha``, ``beta``, ``transB``, optional bias) into ``dense`` plus ``add``.

    The right operand must be a constant; ``transA=1`` raises TVMValueError.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ins = list(node.input)
    if attrs.get("transA", 0):
        raise TVMValueError(f"Gemm {node.name!r}: transA=1 is not supported")
    w = ctx.const(ins[1])
    w = w.T if attrs.get("transB", 0) else w
    w = w * attrs.get("alpha", 1.0)
    y = ctx.graph.add_node("dense", [ctx.get(ins[0]), _add_const(ctx, "gemm_w", w.astype(ctx.const(ins[1]).dtype))])
    if len(ins) > 2 and ins[2]:
        c = ctx.const(ins[2]) * attrs.get("beta", 1.0)
        y = ctx.graph.add_node("add", [y, _add_const(ctx, "gemm_b", c.astype(w.dtype))])
    ctx.set(node.output[0], y)


@converter("Softmax")
def softmax(ctx, node, attrs):
    """Convert Softmax along its ``axis`` (default -1).

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ctx.set(node.output[0], ctx.graph.add_node("softmax", [ctx.get(node.input[0])], {"axis": attrs.get("axis", -1)}))


@converter("LayerNormalization")
def layer_norm(ctx, node, attrs):
    """Convert LayerNormalization over the last axis (other axes raise TVMValueError).

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ins = list(node.input)
    shape = ctx.shape(ins[0])
    axis = attrs.get("axis", -1) % len(shape)
    if axis != len(shape) - 1:
        raise TVMValueError(f"LayerNormalization {node.name!r}: only the last axis is supported (axis={axis})")
    gamma = ctx.get(ins[1])
    beta = ctx.get(ins[2]) if len(ins) > 2 and ins[2] else _add_const(ctx, "ln_beta", np.zeros(shape[-1], "float32"))
    ctx.set(node.output[0], ctx.graph.add_node("layer_norm", [ctx.get(ins[0]), gamma, beta],
                                               {"epsilon": attrs.get("epsilon", 1e-5)}))


@converter("ReduceMean", "ReduceSum", "ReduceMax")
def reduce(ctx, node, attrs):
    """Convert ReduceMean, ReduceSum or ReduceMax, axes from the attribute or a constant input.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ins = list(node.input)
    axes = attrs.get("axes")
    if len(ins) > 1 and ins[1]:
        axes = [int(a) for a in ctx.const(ins[1]).reshape(-1)]
    op = {"ReduceMean": "reduce_mean", "ReduceSum": "reduce_sum", "ReduceMax": "reduce_max"}[node.op_type]
    ctx.set(node.output[0], ctx.graph.add_node(op, [ctx.get(ins[0])],
                                               {"axes": axes, "keepdims": bool(attrs.get("keepdims", 1))}))


def _reshape_to(ctx, node, shape):
    ctx.set(node.output[0], ctx.graph.add_node("reshape", [ctx.get(node.input[0])], {"shape": [int(s) for s in shape]}))


@converter("Reshape")
def reshape(ctx, node, attrs):
    """Convert Reshape to a constant shape, resolving ``0`` (unless ``allowzero``) and ``-1``.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    shape = [int(s) for s in ctx.const(node.input[1])]
    old = ctx.shape(node.input[0])
    if not attrs.get("allowzero", 0):
        shape = [old[i] if s == 0 else s for i, s in enumerate(shape)]
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape[shape.index(-1)] = math.prod(old) // known
    _reshape_to(ctx, node, shape)


@converter("Flatten")
def flatten(ctx, node, attrs):
    """Convert Flatten into a 2-D reshape at ``axis`` (default 1).

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    shape = ctx.shape(node.input[0])
    axis = attrs.get("axis", 1) % (len(shape) + 1) if shape else 0
    _reshape_to(ctx, node, [math.prod(shape[:axis]), math.prod(shape[axis:])])


@converter("Squeeze", "Unsqueeze")
def squeeze(ctx, node, attrs):
    """Convert Squeeze or Unsqueeze into a reshape.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    shape = list(ctx.shape(node.input[0]))
    axes = attrs.get("axes")
    if len(node.input) > 1 and node.input[1]:
        axes = [int(a) for a in ctx.const(node.input[1]).reshape(-1)]
    if node.op_type == "Squeeze":
        axes = [a % len(shape) for a in axes] if axes else [i for i, d in enumerate(shape) if d == 1]
        new = [d for i, d in enumerate(shape) if i not in axes]
    else:
        new = shape
        for a in sorted(a % (len(shape) + len(axes)) for a in axes):
            new.insert(a, 1)
    _reshape_to(ctx, node, new)


@converter("Identity", "Dropout")
def identity(ctx, node, attrs):
    """Convert Identity or (inference-mode) Dropout: the output is the input's graph value.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    value, layout = ctx.values[node.input[0]]
    ctx.set(node.output[0], value, layout)


@converter("Transpose")
def transpose(ctx, node, attrs):
    """Convert Transpose (``perm`` defaults to reversing the axes).

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ndim = len(ctx.shape(node.input[0]))
    perm = list(attrs.get("perm", range(ndim - 1, -1, -1)))
    ctx.set(node.output[0], ctx.graph.add_node("transpose", [ctx.get(node.input[0])], {"perm": perm}))


@converter("Concat")
def concat(ctx, node, attrs):
    """Convert Concat along its ``axis``.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ctx.set(node.output[0], ctx.graph.add_node("concat", [ctx.get(n) for n in node.input], {"axis": attrs["axis"]}))


@converter("Gather")
def gather(ctx, node, attrs):
    """Convert Gather along its ``axis`` (default 0).

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    data, idx = node.input
    ctx.set(node.output[0], ctx.graph.add_node("gather", [ctx.get(data), ctx.get(idx)], {"axis": attrs.get("axis", 0)}))


@converter("Slice")
def slice_(ctx, node, attrs):
    """Convert Slice with constant starts, ends, axes and steps into ``strided_slice``.

    Negative steps raise TVMValueError.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    ins = list(node.input)
    shape = ctx.shape(ins[0])
    starts, ends = ctx.const(ins[1]), ctx.const(ins[2])
    axes = ctx.const(ins[3]) if len(ins) > 3 and ins[3] else range(len(starts))
    steps = ctx.const(ins[4]) if len(ins) > 4 and ins[4] else [1] * len(starts)
    begin, end, step = [0] * len(shape), list(shape), [1] * len(shape)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = int(a) % len(shape)
        begin[a], end[a], step[a] = slice(int(s), int(e), int(st)).indices(shape[a])
    if any(s < 0 for s in step):
        raise TVMValueError(f"Slice {node.name!r}: negative steps are not supported")
    ctx.set(node.output[0], ctx.graph.add_node("strided_slice", [ctx.get(ins[0])],
                                               {"begin": begin, "end": end, "step": step}))


@converter("Cast")
def cast(ctx, node, attrs):
    """Convert Cast to the numpy dtype of its ``to`` attribute.

    Parameters
    ----------
    ctx : ImportContext
        The importer's state; the node's output is recorded there.
    node : onnx.NodeProto
        The ONNX node.
    attrs : dict
        The node's attributes, by name.
    """
    from .onnx_fold import _ONNX_DTYPES

    ctx.set(node.output[0], ctx.graph.add_node("cast", [ctx.get(node.input[0])], {"dtype": _ONNX_DTYPES[attrs["to"]]}))
