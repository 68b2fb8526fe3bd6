"""The operator suite of MetaSchedule's CPU evaluation (C1D, C2D, C3D, DEP, DIL, GMM, GRP, T2D, CBR),
written with ``te`` in channels-last layouts, each with a numpy reference.

Shapes are the rows of MetaSchedule's CPU workload table (batch 1), named ``"0"`` .. ``"3"`` in the
table's order (``"0"``, the first row, is the default), plus a ``"small"`` shape per workload for tests.
``params["op"]`` says which operator the baselines (PyTorch, onnxruntime) must run.

>>> from experiments.workloads import get_workload
>>> w = get_workload("T2D", "small")
>>> w.output_shape(), w.params["op"]
((1, 8, 8, 4), 'conv_transpose')
"""
from __future__ import annotations

import itertools

import numpy as np

from tensorize import te, tir

from .registry import Workload, register

# conv rows: (N, *spatial, CI, CO, kernel, stride, pad[, dilation[, groups]])
TABLE = {
    "C1D": {"0": (1, 256, 64, 128, 3, 2, 1), "1": (1, 128, 128, 256, 1, 2, 0), "2": (1, 64, 256, 256, 5, 1, 2),
            "3": (1, 32, 512, 512, 3, 1, 1), "small": (1, 16, 8, 8, 3, 1, 1)},
    "C2D": {"0": (1, 224, 224, 3, 64, 7, 2, 3), "1": (1, 56, 56, 64, 64, 1, 1, 0),
            "2": (1, 14, 14, 256, 256, 3, 1, 1), "3": (1, 7, 7, 512, 512, 3, 1, 1), "small": (1, 8, 8, 8, 8, 3, 1, 1)},
    "C3D": {"0": (1, 16, 224, 224, 3, 64, 7, 2, 3), "1": (1, 16, 56, 56, 64, 64, 1, 1, 0),
            "2": (1, 16, 14, 14, 256, 256, 3, 1, 1), "3": (1, 16, 7, 7, 512, 512, 3, 1, 1),
            "small": (1, 4, 6, 6, 4, 8, 3, 1, 1)},
    "DIL": {"0": (1, 224, 224, 3, 64, 7, 2, 3, 2), "1": (1, 56, 56, 64, 64, 1, 1, 0, 2),
            "2": (1, 14, 14, 256, 256, 3, 1, 1, 2), "3": (1, 7, 7, 512, 512, 3, 1, 1, 2),
            "small": (1, 10, 10, 8, 8, 3, 1, 2, 2)},
    "GRP": {"0": (1, 56, 56, 64, 128, 3, 2, 1, 1, 4), "1": (1, 56, 56, 64, 64, 1, 1, 0, 1, 4),
            "2": (1, 14, 14, 256, 256, 3, 1, 1, 1, 4), "3": (1, 7, 7, 512, 512, 3, 1, 1, 1, 4),
            "small": (1, 8, 8, 8, 8, 3, 1, 1, 1, 4)},
    "CBR": {"0": (1, 224, 224, 3, 64, 7, 2, 3), "1": (1, 56, 56, 64, 128, 3, 2, 1),
            "2": (1, 28, 28, 128, 256, 1, 2, 0), "3": (1, 7, 7, 512, 512, 3, 1, 1), "small": (1, 8, 8, 8, 8, 3, 1, 1)},
    # (N, H, W, C, kernel, stride, pad)
    "DEP": {"0": (1, 112, 112, 32, 3, 1, 1), "1": (1, 112, 112, 64, 3, 2, 1), "2": (1, 14, 14, 512, 3, 2, 1),
            "3": (1, 7, 7, 1024, 3, 1, 1), "small": (1, 8, 8, 8, 3, 1, 1)},
    # (N, H, W, CI, CO, kernel, stride, pad)
    "T2D": {"0": (1, 4, 4, 512, 256, 4, 2, 1), "1": (1, 8, 8, 256, 128, 4, 2, 1), "2": (1, 16, 16, 128, 64, 4, 2, 1),
            "3": (1, 32, 32, 64, 3, 4, 2, 1), "small": (1, 4, 4, 8, 4, 4, 2, 1)},
    # (batch, N, M, K): Z[b, i, j] = sum_k X[b, i, k] * Y[b, k, j]
    "GMM": {"0": (1, 128, 128, 128), "1": (1, 512, 32, 512), "2": (1, 512, 512, 512), "3": (1, 1024, 1024, 1024),
            "small": (1, 16, 16, 16)},
}
SUITE = ["C1D", "C2D", "C3D", "DEP", "DIL", "GMM", "GRP", "T2D", "CBR"]


def _pad(data, pads: list[int], name: str = "pad"):
    """Zero padding of the spatial axes (all but the first and the last) of a channels-last tensor."""
    shape = [int(s) for s in data.shape]
    zero = tir.const(0, data.dtype)
    out_shape = [shape[0]] + [s + 2 * p for s, p in zip(shape[1:-1], pads)] + [shape[-1]]

    def f(*idx):
        sp = idx[1:-1]
        inside = tir.all(*[c for x, p, s in zip(sp, pads, shape[1:-1]) for c in (x >= p, x < s + p)])
        return tir.if_then_else(inside, data[(idx[0], *[x - p for x, p in zip(sp, pads)], idx[-1])], zero)

    if not any(pads):
        return data
    return te.compute(out_shape, f, name=name)


def conv_nd(spatial, CI, CO, K, stride, pad, dilation=1, groups=1, dtype="float32", name="conv"):
    """Channels-last convolution in 1, 2 or 3 spatial dimensions: data ``(1, *spatial, CI)``, kernel
    ``(*K..., CI // groups, CO)``."""
    nd = len(spatial)
    data = te.placeholder((1, *spatial, CI), dtype, name="data")
    kernel = te.placeholder((*([K] * nd), CI // groups, CO), dtype, name="kernel")
    padded = _pad(data, [pad] * nd)
    out_sp = [(s + 2 * pad - dilation * (K - 1) - 1) // stride + 1 for s in spatial]
    rk = [te.reduce_axis((0, K), name=f"r{i}") for i in range(nd)]
    rc = te.reduce_axis((0, CI // groups), name="rc")
    co_per_group = CO // groups

    def f(n, *rest):
        sp, o = rest[:-1], rest[-1]
        ci = (o // co_per_group) * (CI // groups) + rc if groups > 1 else rc
        x = padded[(n, *[s * stride + r * dilation for s, r in zip(sp, rk)], ci)]
        return te.sum(x * kernel[(*rk, rc, o)], axis=[*rk, rc])

    out = te.compute((1, *out_sp, CO), f, name=name)
    return data, kernel, out


def conv_reference(data, kernel, stride, pad, dilation=1, groups=1):
    """numpy reference of ``conv_nd``."""
    nd = data.ndim - 2
    K = kernel.shape[0]
    padded = np.pad(data, [(0, 0)] + [(pad, pad)] * nd + [(0, 0)])
    out_sp = [(s + 2 * pad - dilation * (K - 1) - 1) // stride + 1 for s in data.shape[1:-1]]
    CI, CO = data.shape[-1], kernel.shape[-1]
    cig, cog = CI // groups, CO // groups
    out = np.zeros((data.shape[0], *out_sp, CO), np.float64)
    for off in itertools.product(range(K), repeat=nd):
        sl = tuple(slice(o * dilation, o * dilation + (n - 1) * stride + 1, stride) for o, n in zip(off, out_sp))
        window = padded[(slice(None), *sl, slice(None))].astype(np.float64)
        for g in range(groups):
            out[..., g * cog:(g + 1) * cog] += window[..., g * cig:(g + 1) * cig] @ kernel[off][:, g * cog:(g + 1) * cog]
    return out.astype(data.dtype)


def _conv_workload(name, shape, dtype, row, nd, dilation=1, groups=1):
    spatial, (CI, CO, K, stride, pad) = row[1:1 + nd], row[1 + nd:6 + nd]
    data, kernel, out = conv_nd(spatial, CI, CO, K, stride, pad, dilation, groups, dtype)
    out_elems = int(np.prod([int(s) for s in out.shape]))
    params = dict(op="conv", nd=nd, CI=CI, CO=CO, K=K, stride=stride, pad=pad, dilation=dilation, groups=groups)
    return Workload(name, shape, [data, kernel, out],
                    lambda d, k: conv_reference(d, k, stride, pad, dilation, groups),
                    flops=2 * out_elems * K ** nd * (CI // groups), params=params)


def _row(name, shape):
    shape = "0" if shape is None else str(shape)
    if shape not in TABLE[name]:
        raise KeyError(f"unknown {name} shape {shape!r}; known: {sorted(TABLE[name])}")
    return shape, TABLE[name][shape]


@register("C1D")
def _c1d(shape=None, dtype="float32"):
    shape, row = _row("C1D", shape)
    return _conv_workload("C1D", shape, dtype, row, 1)


@register("C2D")
def _c2d(shape=None, dtype="float32"):
    shape, row = _row("C2D", shape)
    return _conv_workload("C2D", shape, dtype, row, 2)


@register("C3D")
def _c3d(shape=None, dtype="float32"):
    shape, row = _row("C3D", shape)
    return _conv_workload("C3D", shape, dtype, row, 3)


@register("DIL")
def _dil(shape=None, dtype="float32"):
    shape, row = _row("DIL", shape)
    return _conv_workload("DIL", shape, dtype, row, 2, dilation=row[8])


@register("GRP")
def _grp(shape=None, dtype="float32"):
    shape, row = _row("GRP", shape)
    return _conv_workload("GRP", shape, dtype, row, 2, dilation=row[8], groups=row[9])


@register("DEP")
def _dep(shape=None, dtype="float32"):
    shape, (N, H, W, C, K, stride, pad) = _row("DEP", shape)
    data, kernel, out = conv_nd((H, W), C, C, K, stride, pad, 1, C, dtype, name="depthwise")
    out_elems = int(np.prod([int(s) for s in out.shape]))
    params = dict(op="conv", nd=2, CI=C, CO=C, K=K, stride=stride, pad=pad, dilation=1, groups=C)
    return Workload("DEP", shape, [data, kernel, out], lambda d, k: conv_reference(d, k, stride, pad, 1, C),
                    flops=2 * out_elems * K * K, params=params)


@register("GMM")
def _gmm(shape=None, dtype="float32"):
    shape, (B, N, M, K) = _row("GMM", shape)
    X = te.placeholder((B, N, K), dtype, name="X")
    Y = te.placeholder((B, K, M), dtype, name="Y")
    k = te.reduce_axis((0, K), name="k")
    Z = te.compute((B, N, M), lambda b, i, j: te.sum(X[b, i, k] * Y[b, k, j], axis=k), name="Z")
    return Workload("GMM", shape, [X, Y, Z], lambda x, y: np.matmul(x, y).astype(dtype), 2 * B * N * M * K,
                    dict(op="bmm", B=B, N=N, M=M, K=K))


def conv_transpose2d(N, H, W, CI, CO, K, stride, pad, dtype="float32"):
    """Transposed conv2d, NHWC data, kernel ``(K, K, CI, CO)``.

    Where ``K`` is a multiple of ``stride`` (every row of the table) it is computed by phases: the
    output row ``y = stride * q + phase`` takes only the kernel rows ``r0(phase) + stride * t`` (``K /
    stride`` of them) against input rows ``q + t + off(phase)``, so no product with an inserted zero
    is computed (a ``stride**2``-fold saving over the zero-dilated form). Otherwise it is TOPI's form: a
    stride-1 conv of the zero-dilated, ``K - 1 - pad`` padded input with the flipped kernel.
    """
    data = te.placeholder((N, H, W, CI), dtype, name="data")
    kernel = te.placeholder((K, K, CI, CO), dtype, name="kernel")
    p = K - 1 - pad
    zero = tir.const(0, dtype)
    DH, DW = (H - 1) * stride + 1 + 2 * p, (W - 1) * stride + 1 + 2 * p
    OH, OW = DH - K + 1, DW - K + 1
    rc = te.reduce_axis((0, CI), name="rc")
    if K % stride == 0:
        return data, kernel, _conv_transpose2d_phases(data, kernel, OH, OW, K, stride, p, rc)

    def fdil(n, y, x, c):
        yy, xx = y - p, x - p
        inside = tir.all(yy >= 0, xx >= 0, yy < (H - 1) * stride + 1, xx < (W - 1) * stride + 1,
                         tir.floormod(yy, stride) == 0, tir.floormod(xx, stride) == 0)
        return tir.if_then_else(inside, data[n, tir.floordiv(yy, stride), tir.floordiv(xx, stride), c], zero)

    dilated = te.compute((N, DH, DW, CI), fdil, name="dilate_pad")
    ry, rx = te.reduce_axis((0, K), name="ry"), te.reduce_axis((0, K), name="rx")
    out = te.compute((N, OH, OW, CO), lambda n, y, x, o: te.sum(
        dilated[n, y + ry, x + rx, rc] * kernel[K - 1 - ry, K - 1 - rx, rc, o], axis=[ry, rx, rc]), name="conv2d_t")
    return data, kernel, out


def _select(index, values):
    """``values[index]`` as a chain of selects (a per-phase constant that is not affine in the phase)."""
    expr = tir.const(values[-1], "int32")
    for i in range(len(values) - 2, -1, -1):
        expr = tir.Select(index == i, tir.const(values[i], "int32"), expr)
    return expr


def _conv_transpose2d_phases(data, kernel, OH, OW, K, stride, p, rc):
    """The phase form of ``conv_transpose2d`` (``K % stride == 0``). For output row ``y`` with
    ``phase = y % stride``: kernel row ``K - 1 - (r0 + stride * t)`` with ``r0 = (p - phase) % stride``,
    input row ``y // stride + t + (phase + r0 - p) // stride``; the input is zero-padded so that every
    such row exists."""
    N, H, W, _ = [int(s) for s in data.shape]
    taps = K // stride

    def first_tap(phase):
        return (p - phase) % stride

    def offset(phase):
        return (phase + first_tap(phase) - p) // stride

    QH, QW = -(-OH // stride), -(-OW // stride)  # output rows per phase (the last may lie past OH)
    offsets = [offset(ph) for ph in range(stride)]
    lo = max(0, -min(offsets))
    hi_y = max(0, QH - 1 + taps - 1 + max(offsets) - (H - 1))
    hi_x = max(0, QW - 1 + taps - 1 + max(offsets) - (W - 1))
    zero = tir.const(0, data.dtype)
    padded = te.compute((N, H + lo + hi_y, W + lo + hi_x, data.shape[3]), lambda n, y, x, c: tir.if_then_else(
        tir.all(y >= lo, y < H + lo, x >= lo, x < W + lo), data[n, y - lo, x - lo, c], zero), name="pad")
    ty, tx = te.reduce_axis((0, taps), name="ty"), te.reduce_axis((0, taps), name="tx")

    def per_phase(values):  # f(phase) as an expression: affine where the values are (stride 2, even p)
        step = values[1] - values[0] if len(values) > 1 else 0
        if all(b - a == step for a, b in zip(values, values[1:])):
            return lambda phase: values[0] + step * phase
        return lambda phase: _select(phase, values)

    input_offset = per_phase([offset(ph) + lo for ph in range(stride)])
    kernel_first = per_phase([first_tap(ph) for ph in range(stride)])

    def row(q, phase, t):  # the padded input row of output row stride * q + phase, tap t
        return q + t + input_offset(phase)

    def tap(phase, t):  # the kernel row of an output row of this phase, tap t
        return K - 1 - (kernel_first(phase) + stride * t)

    # the phases are iterators of their own (a clean contraction for the tensorization candidates);
    # the last stage interleaves them into the NHWC output
    phased = te.compute((N, QH, stride, QW, stride, kernel.shape[3]), lambda n, qy, py, qx, px, o: te.sum(
        padded[n, row(qy, py, ty), row(qx, px, tx), rc] * kernel[tap(py, ty), tap(px, tx), rc, o],
        axis=[ty, tx, rc]), name="conv2d_t_phases")
    return te.compute((N, OH, OW, kernel.shape[3]), lambda n, y, x, o: phased[
        n, tir.floordiv(y, stride), tir.floormod(y, stride), tir.floordiv(x, stride), tir.floormod(x, stride), o],
        name="conv2d_t")


def conv_transpose_reference(data, kernel, stride, pad):
    """The transposed conv2d of ``conv_transpose2d`` in numpy: each input pixel scatters ``data @ kernel``.

    Parameters
    ----------
    data : numpy.ndarray
        The input, NHWC.
    kernel : numpy.ndarray
        The kernel, ``(K, K, CI, CO)``.
    stride : int
        The stride (the input's dilation).
    pad : int
        Rows and columns cropped from each side of the full output.

    Returns
    -------
    numpy.ndarray
        The output, NHWC, ``(N, (H - 1) * stride - 2 * pad + K, ...)``, in ``data``'s dtype.
    """
    N, H, W, CI = data.shape
    K = kernel.shape[0]
    full = np.zeros((N, (H - 1) * stride + K, (W - 1) * stride + K, kernel.shape[-1]), np.float64)
    for i, j in itertools.product(range(K), repeat=2):
        full[:, i:i + (H - 1) * stride + 1:stride, j:j + (W - 1) * stride + 1:stride] += data @ kernel[i, j]
    OH, OW = (H - 1) * stride - 2 * pad + K, (W - 1) * stride - 2 * pad + K
    return full[:, pad:pad + OH, pad:pad + OW].astype(data.dtype)


@register("T2D")
def _t2d(shape=None, dtype="float32"):
    shape, (N, H, W, CI, CO, K, stride, pad) = _row("T2D", shape)
    args = conv_transpose2d(N, H, W, CI, CO, K, stride, pad, dtype)
    return Workload("T2D", shape, list(args), lambda d, k: conv_transpose_reference(d, k, stride, pad),
                    flops=2 * N * H * W * CI * CO * K * K,
                    params=dict(op="conv_transpose", CI=CI, CO=CO, K=K, stride=stride, pad=pad))


@register("CBR")
def _cbr(shape=None, dtype="float32"):
    shape, row = _row("CBR", shape)
    (H, W), (CI, CO, K, stride, pad) = row[1:3], row[3:8]
    data, kernel, conv = conv_nd((H, W), CI, CO, K, stride, pad, dtype=dtype)
    bias = te.placeholder((CO,), dtype, name="bias")
    scale = te.placeholder((CO,), dtype, name="bn_scale")
    offset = te.placeholder((CO,), dtype, name="bn_offset")
    shp = conv.shape
    biased = te.compute(shp, lambda n, y, x, c: conv[n, y, x, c] + bias[c], name="bias_add")
    normed = te.compute(shp, lambda n, y, x, c: biased[n, y, x, c] * scale[c] + offset[c], name="bn")
    out = te.compute(shp, lambda n, y, x, c: tir.max(normed[n, y, x, c], tir.const(0, dtype)), name="relu")

    def ref(d, k, b, s, o):
        return np.maximum((conv_reference(d, k, stride, pad) + b) * s + o, 0).astype(dtype)

    out_elems = int(np.prod([int(s) for s in shp]))
    return Workload("CBR", shape, [data, kernel, bias, scale, offset, out], ref,
                    flops=2 * out_elems * K * K * CI + 4 * out_elems,
                    params=dict(op="cbr", nd=2, CI=CI, CO=CO, K=K, stride=stride, pad=pad, dilation=1, groups=1))
