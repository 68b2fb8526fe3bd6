"""Run an ONNX graph with PyTorch's own kernels: the PyTorch baseline of the end-to-end comparisons.

Each node becomes a call of a ``torch`` / ``torch.nn.functional`` operator (convolutions and linear layers
go to oneDNN on the CPU), run in graph order under ``torch.inference_mode()``. It covers the operators of
the models in ``experiments/models`` and their common relatives; an unsupported operator raises
``NotImplementedError`` naming it when the module is built, never at run time.

We keep this executor instead of a converter package because the converters import ``torchvision``,
whose wheels on PyPI are built against one particular ``torch`` and fail at import next to any other.

Examples
--------
>>> import numpy as np
>>> from experiments.models import MODELS, TEST_CONFIGS, random_inputs
>>> model = MODELS["bert_base"](**{**TEST_CONFIGS["bert_base"], "layers": 1})
>>> run = torch_runner(model)
>>> out = run(**random_inputs(model))
>>> out[0].dtype
dtype('float32')
"""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["torch_runner", "SUPPORTED_OPS"]


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _symmetric_pads(pads, rank: int):
    """ONNX ``pads`` (begins then ends) as PyTorch's symmetric padding, or None when begins != ends."""
    pads = list(pads or [0] * (2 * rank))
    begins, ends = pads[:rank], pads[rank:]
    return tuple(begins) if begins == ends else None


def _torch_pad(pads, rank: int):
    """ONNX ``pads`` as ``F.pad``'s argument (last dimension first)."""
    begins, ends = pads[:rank], pads[rank:]
    out = []
    for b, e in zip(reversed(begins), reversed(ends)):
        out += [b, e]
    return out


def _conv(F, a):
    def conv(x, w, b=None):
        rank = x.dim() - 2
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise NotImplementedError("Conv with auto_pad: export the model with explicit pads")
        pads = a.get("pads", [0] * 2 * rank)
        padding = _symmetric_pads(pads, rank)
        if padding is None:
            x, padding = F.pad(x, _torch_pad(pads, rank)), 0
        fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[rank]
        return fn(x, w, b, stride=tuple(a.get("strides", [1] * rank)), padding=padding,
                  dilation=tuple(a.get("dilations", [1] * rank)), groups=a.get("group", 1))
    return conv


def _max_pool(F, a):
    def max_pool(x):
        rank = x.dim() - 2
        pads = a.get("pads", [0] * 2 * rank)
        padding = _symmetric_pads(pads, rank)
        if padding is None:
            x, padding = F.pad(x, _torch_pad(pads, rank), value=float("-inf")), 0
        fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[rank]
        return fn(x, tuple(a["kernel_shape"]), stride=tuple(a.get("strides", [1] * rank)), padding=padding,
                  dilation=tuple(a.get("dilations", [1] * rank)), ceil_mode=bool(a.get("ceil_mode", 0)))
    return max_pool


def _gemm(torch, F, a):
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    trans_a, trans_b = a.get("transA", 0), a.get("transB", 0)

    def gemm(x, w, c=None):
        if trans_a:
            x = x.t()
        if trans_b and alpha == 1.0 and beta == 1.0:
            return F.linear(x, w, c)
        y = x @ (w.t() if trans_b else w)
        if alpha != 1.0:
            y = y * alpha
        return y if c is None else y + beta * c
    return gemm


def _reshape(a):
    def reshape(x, shape):
        dims = [int(d) for d in shape.tolist()]
        if not a.get("allowzero", 0):
            dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
        return x.reshape(dims)
    return reshape


def _gather(torch, a):
    def gather(x, idx):
        axis = a.get("axis", 0) % x.dim()
        idx = torch.where(idx < 0, idx + x.shape[axis], idx)
        picked = x.index_select(axis, idx.reshape(-1))
        return picked.reshape(tuple(x.shape[:axis]) + tuple(idx.shape) + tuple(x.shape[axis + 1:]))
    return gather


def _reduce_mean(a):
    def reduce_mean(x, axes=None):
        dims = a.get("axes") if axes is None else [int(v) for v in axes.tolist()]
        keep = bool(a.get("keepdims", 1))
        if dims is None or len(dims) == 0:
            dims = list(range(x.dim()))
        return x.mean(dim=tuple(dims), keepdim=keep)
    return reduce_mean


def _clip(torch, a):
    def clip(x, lo=None, hi=None):
        lo = a.get("min") if lo is None else float(lo)
        hi = a.get("max") if hi is None else float(hi)
        return torch.clamp(x, lo, hi)
    return clip


def _layer_norm(F, a):
    def layer_norm(x, scale, bias=None):
        axis = a.get("axis", -1) % x.dim()
        return F.layer_norm(x, tuple(x.shape[axis:]), scale, bias, a.get("epsilon", 1e-5))
    return layer_norm


def _op_table(torch, F) -> dict[str, Callable[[dict], Callable]]:
    binary = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div, "Pow": torch.pow}
    unary = {"Relu": torch.relu, "Erf": torch.erf, "Sqrt": torch.sqrt, "Exp": torch.exp, "Tanh": torch.tanh,
             "Sigmoid": torch.sigmoid, "Neg": torch.neg, "Abs": torch.abs, "Identity": lambda x: x}
    table: dict[str, Callable[[dict], Callable]] = {}
    for name, fn in {**binary, **unary}.items():
        table[name] = lambda a, fn=fn: fn
    table.update({
        "Conv": lambda a: _conv(F, a),
        "MaxPool": lambda a: _max_pool(F, a),
        "Gemm": lambda a: _gemm(torch, F, a),
        "MatMul": lambda a: torch.matmul,
        "BatchNormalization": lambda a: (lambda x, s, b, m, v: F.batch_norm(
            x, m, v, s, b, False, 0.0, a.get("epsilon", 1e-5))),
        "GlobalAveragePool": lambda a: (lambda x: x.mean(dim=tuple(range(2, x.dim())), keepdim=True)),
        "Flatten": lambda a: (lambda x: x.reshape(
            int(np.prod(x.shape[:a.get("axis", 1)], dtype=np.int64)), -1)),
        "Reshape": _reshape,
        "Transpose": lambda a: (lambda x: x.permute(*(a.get("perm") or reversed(range(x.dim()))))),
        "Softmax": lambda a: (lambda x: torch.softmax(x, dim=a.get("axis", -1))),
        "Concat": lambda a: (lambda *xs: torch.cat(xs, dim=a["axis"])),
        "Gather": lambda a: _gather(torch, a),
        "ReduceMean": _reduce_mean,
        "Clip": lambda a: _clip(torch, a),
        "LayerNormalization": lambda a: _layer_norm(F, a),
    })
    return table


SUPPORTED_OPS = ("Add", "Sub", "Mul", "Div", "Pow", "Relu", "Erf", "Sqrt", "Exp", "Tanh", "Sigmoid", "Neg", "Abs",
                 "Identity", "Conv", "MaxPool", "Gemm", "MatMul", "BatchNormalization", "GlobalAveragePool",
                 "Flatten", "Reshape", "Transpose", "Softmax", "Concat", "Gather", "ReduceMean", "Clip",
                 "LayerNormalization")


def torch_runner(model) -> Callable[..., list[np.ndarray]]:
    """A callable running ``model`` (an ``onnx.ModelProto``) with PyTorch; keyword inputs, numpy outputs.

    Parameters
    ----------
    model : onnx.ModelProto
        The graph; initializers become constant tensors once, here.

    Returns
    -------
    callable
        ``run(**inputs) -> list[np.ndarray]``, the graph outputs in order. ``run.torch_call(*tensors)``
        is the same without the numpy conversions, for timing.

    Raises
    ------
    NotImplementedError
        The graph uses an operator outside ``SUPPORTED_OPS``.
    """
    import torch
    import torch.nn.functional as F
    from onnx import numpy_helper

    table = _op_table(torch, F)
    graph = model.graph
    unsupported = sorted({n.op_type for n in graph.node} - set(table))
    if unsupported:
        raise NotImplementedError(f"the PyTorch baseline has no mapping for ONNX operator(s) {unsupported}; "
                                  f"add them to experiments/torch_onnx.py")
    consts = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in graph.initializer}
    input_names = [i.name for i in graph.input if i.name not in consts]
    steps = [(table[n.op_type](_attrs(n)), list(n.input), list(n.output)) for n in graph.node]
    output_names = [o.name for o in graph.output]

    def torch_call(*tensors):
        env = dict(consts)
        env.update(zip(input_names, tensors))
        with torch.inference_mode():
            for fn, ins, outs in steps:
                args = [env[i] if i else None for i in ins]
                while args and args[-1] is None:
                    args.pop()
                result = fn(*args)
                for name, value in zip(outs, result if isinstance(result, tuple) else (result,)):
                    env[name] = value
        return [env[o] for o in output_names]

    def run(**inputs):
        tensors = [torch.from_numpy(np.ascontiguousarray(inputs[n])) for n in input_names]
        return [t.numpy() for t in torch_call(*tensors)]

    run.torch_call = torch_call
    run.input_names = input_names
    return run
