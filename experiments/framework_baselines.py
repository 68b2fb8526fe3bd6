"""PyTorch (NCHW and channels-last) and onnxruntime baselines of the operator suite (``params["op"]`` of
a workload: ``conv``, ``conv_transpose``, ``cbr``, ``bmm``).

Inputs are converted to the framework's layout once, before timing (the layout change is not timed);
each builder returns ``(run, to_nhwc)``: ``run()`` computes the output, ``to_nhwc(result)`` brings it back
to the workload's channels-last layout as numpy for the correctness check. None when the framework is
missing or the workload has no such form. With PyTorch installed::

    run, to_nhwc = torch_suite_baseline(workload, inputs, channels_last=True)
    out = to_nhwc(run())
"""
from __future__ import annotations

import logging
from typing import Callable

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["torch_suite_baseline", "onnxruntime_baseline", "ort_session"]


def _to_first(x: np.ndarray) -> np.ndarray:
    """channels-last (N, *sp, C) -> channels-first (N, C, *sp)."""
    return np.ascontiguousarray(np.moveaxis(x, -1, 1))


def _kernel_oihw(kernel: np.ndarray) -> np.ndarray:
    """(*K, CI/g, CO) -> (CO, CI/g, *K)."""
    nd = kernel.ndim - 2
    return np.ascontiguousarray(np.transpose(kernel, (nd + 1, nd, *range(nd))))


def _kernel_transpose(kernel: np.ndarray) -> np.ndarray:
    """(K, K, CI, CO) -> (CI, CO, K, K) as ConvTranspose wants it."""
    return np.ascontiguousarray(kernel.transpose(2, 3, 0, 1))


def _from_first(y: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(y, 1, -1))


def torch_suite_baseline(workload, inputs, channels_last: bool = False, threads: int | None = None):
    """PyTorch CPU (oneDNN where PyTorch uses it) for a suite workload; ``(run, to_nhwc)`` or None."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        log.warning("PyTorch is not installed: skipping the torch baseline (pip install -e '.[baselines]')")
        return None
    if threads:
        torch.set_num_threads(threads)
    p = workload.params
    op = p.get("op")
    if op is None:
        return None
    if op == "bmm":
        x, y = (torch.from_numpy(a) for a in inputs)
        fn: Callable = lambda: torch.bmm(x, y)  # noqa: E731
        return _no_grad(torch, fn), lambda r: r.numpy()
    nd = p.get("nd", 2)
    fmt = {2: torch.channels_last, 3: torch.channels_last_3d}.get(nd) if channels_last else None
    if channels_last and fmt is None:
        return None  # no channels-last format for 1-D convolutions

    def tensor(a):
        t = torch.from_numpy(a)
        return t.contiguous(memory_format=fmt) if fmt is not None and t.dim() == nd + 2 else t

    data = tensor(_to_first(inputs[0]))
    if op == "conv_transpose":
        w = tensor(_kernel_transpose(inputs[1]))
        fn = lambda: F.conv_transpose2d(data, w, stride=p["stride"], padding=p["pad"])  # noqa: E731
    else:
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
        w = tensor(_kernel_oihw(inputs[1]))
        kw = dict(stride=p["stride"], padding=p["pad"], dilation=p["dilation"], groups=p["groups"])
        if op == "cbr":
            bias = torch.from_numpy(inputs[2])
            s, o = (torch.from_numpy(a).view(1, -1, *([1] * nd)) for a in inputs[3:5])
            fn = lambda: torch.relu(conv(data, w, bias=bias, **kw) * s + o)  # noqa: E731
        else:
            fn = lambda: conv(data, w, **kw)  # noqa: E731
    return _no_grad(torch, fn), lambda r: _from_first(r.contiguous().numpy())


def _no_grad(torch, fn):
    def run():
        with torch.no_grad():
            return fn()

    return run


def onnxruntime_baseline(workload, inputs, threads: int | None = None):
    """onnxruntime (CPU execution provider) for a suite workload's conv or GEMM; ``(run, to_nhwc)`` or None."""
    try:
        import onnxruntime  # noqa: F401 - ort_session needs it
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        log.warning("onnx/onnxruntime are not installed: skipping that baseline (pip install -e '.[baselines]')")
        return None
    p = workload.params
    op = p.get("op")
    if op is None:
        return None
    feeds, inits, nodes = {}, [], []
    if op == "bmm":
        feeds = {"x": inputs[0], "y": inputs[1]}
        nodes.append(helper.make_node("MatMul", ["x", "y"], ["out"]))
        out_shape = list(workload.output_shape())
        to_nhwc = lambda r: r  # noqa: E731
    else:
        feeds = {"x": _to_first(inputs[0])}
        nd = p.get("nd", 2)
        attrs = dict(strides=[p["stride"]] * nd, pads=[p["pad"]] * (2 * nd))
        if op == "conv_transpose":
            inits.append(numpy_helper.from_array(_kernel_transpose(inputs[1]), "w"))
            nodes.append(helper.make_node("ConvTranspose", ["x", "w"], ["out"], **attrs))
        else:
            attrs.update(dilations=[p["dilation"]] * nd, group=p["groups"])
            inits.append(numpy_helper.from_array(_kernel_oihw(inputs[1]), "w"))
            if op == "cbr":
                inits += [numpy_helper.from_array(inputs[2], "b"),
                          numpy_helper.from_array(inputs[3].reshape(-1, 1, 1), "s"),
                          numpy_helper.from_array(inputs[4].reshape(-1, 1, 1), "o")]
                nodes += [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs),
                          helper.make_node("Mul", ["c", "s"], ["m"]), helper.make_node("Add", ["m", "o"], ["a"]),
                          helper.make_node("Relu", ["a"], ["out"])]
            else:
                nodes.append(helper.make_node("Conv", ["x", "w"], ["out"], **attrs))
        out_shape = [workload.output_shape()[0], workload.output_shape()[-1], *workload.output_shape()[1:-1]]
        to_nhwc = _from_first
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(workload.output_dtype))
    graph = helper.make_graph(nodes, f"{workload.name}_{workload.shape_name}",
                              [helper.make_tensor_value_info(k, elem, list(v.shape)) for k, v in feeds.items()],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, out_shape)], inits)
    session = ort_session(graph, threads)
    return (lambda: session.run(["out"], feeds)[0]), to_nhwc


def ort_session(graph, threads: int | None = None):
    """An onnxruntime CPU session of the ONNX ``graph`` (opset 17, checked), with ``threads`` intra-op threads.

    Parameters
    ----------
    graph : onnx.GraphProto
        The graph.
    threads : int, optional
        Intra-op threads (onnxruntime's default when None).

    Returns
    -------
    onnxruntime.InferenceSession
        The session.
    """
    import onnx
    import onnxruntime as ort
    from onnx import helper

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
