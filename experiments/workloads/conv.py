"""Convolution workloads (NHWC): depthwise conv2d (DEP) and conv2d (C2D), with numpy references."""
from __future__ import annotations

import numpy as np

from tensorize import te, tir

from .registry import Workload, register

# Named shapes: (N, H, W, C, KH, KW, stride, pad) for depthwise; plus CO for conv2d.
DEPTHWISE_SHAPES = {
    "mobilenet_112": (1, 112, 112, 32, 3, 3, 1, 1),
    "mobilenet_56": (1, 56, 56, 128, 3, 3, 1, 1),
    "small": (1, 16, 16, 16, 3, 3, 1, 1),
}
CONV2D_SHAPES = {
    "resnet_56": (1, 56, 56, 64, 64, 3, 3, 1, 1),
    "small": (1, 8, 8, 16, 16, 3, 3, 1, 1),
}


def _pad_nhwc(data, pad: int, name: str = "pad"):
    if pad == 0:  # no stage at all: a no-op padding would still be a copy (and block intrinsic matching)
        return data
    n, h, w, c = data.shape
    zero = tir.const(0, data.dtype)

    def fpad(i, y, x, k):
        inside = tir.all(y >= pad, y < h + pad, x >= pad, x < w + pad)
        return tir.if_then_else(inside, data[i, y - pad, x - pad, k], zero)

    return te.compute((n, h + 2 * pad, w + 2 * pad, c), fpad, name=name)


def depthwise_conv2d_nhwc(N, H, W, C, KH, KW, stride, pad, dtype="float32"):
    """Depthwise conv2d, NHWC data and (KH, KW, C) kernel, channel multiplier 1."""
    data = te.placeholder((N, H, W, C), dtype, name="data")
    kernel = te.placeholder((KH, KW, C), dtype, name="kernel")
    padded = _pad_nhwc(data, pad)
    OH, OW = (H + 2 * pad - KH) // stride + 1, (W + 2 * pad - KW) // stride + 1
    rh = te.reduce_axis((0, KH), name="rh")
    rw = te.reduce_axis((0, KW), name="rw")
    out = te.compute(
        (N, OH, OW, C),
        lambda n, h, w, c: te.sum(padded[n, h * stride + rh, w * stride + rw, c] * kernel[rh, rw, c], axis=[rh, rw]),
        name="depthwise",
    )
    return data, kernel, out


def depthwise_reference(data: np.ndarray, kernel: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """The numpy reference of the NHWC depthwise convolution."""
    KH, KW, _ = kernel.shape
    padded = np.pad(data, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (KH, KW), axis=(1, 2))[:, ::stride, ::stride]
    # windows: N, OH, OW, C, KH, KW
    return np.einsum("nhwcij,ijc->nhwc", windows, kernel, optimize=True).astype(data.dtype)


def conv2d_nhwc(N, H, W, CI, CO, KH, KW, stride, pad, dtype="float32"):
    """conv2d, NHWC data and HWIO kernel."""
    data = te.placeholder((N, H, W, CI), dtype, name="data")
    kernel = te.placeholder((KH, KW, CI, CO), dtype, name="kernel")
    padded = _pad_nhwc(data, pad)
    OH, OW = (H + 2 * pad - KH) // stride + 1, (W + 2 * pad - KW) // stride + 1
    rh = te.reduce_axis((0, KH), name="rh")
    rw = te.reduce_axis((0, KW), name="rw")
    rc = te.reduce_axis((0, CI), name="rc")
    out = te.compute(
        (N, OH, OW, CO),
        lambda n, h, w, o: te.sum(padded[n, h * stride + rh, w * stride + rw, rc] * kernel[rh, rw, rc, o],
                                  axis=[rh, rw, rc]),
        name="conv2d",
    )
    return data, kernel, out


def conv2d_reference(data: np.ndarray, kernel: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """The numpy reference of the NHWC x HWIO convolution."""
    KH, KW, _, _ = kernel.shape
    padded = np.pad(data, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (KH, KW), axis=(1, 2))[:, ::stride, ::stride]
    return np.einsum("nhwcij,ijco->nhwo", windows, kernel, optimize=True).astype(data.dtype)


@register("dep_conv")
def _dep_conv(shape: str | None = None, dtype: str = "float32") -> Workload:
    shape = shape or "mobilenet_112"
    if shape not in DEPTHWISE_SHAPES:
        raise KeyError(f"unknown dep_conv shape {shape!r}; known: {sorted(DEPTHWISE_SHAPES)}")
    N, H, W, C, KH, KW, stride, pad = DEPTHWISE_SHAPES[shape]
    args = depthwise_conv2d_nhwc(N, H, W, C, KH, KW, stride, pad, dtype)
    OH, OW = (H + 2 * pad - KH) // stride + 1, (W + 2 * pad - KW) // stride + 1
    return Workload("dep_conv", shape, list(args), lambda d, k: depthwise_reference(d, k, stride, pad),
                    flops=2 * N * OH * OW * C * KH * KW,
                    params=dict(N=N, H=H, W=W, C=C, KH=KH, KW=KW, stride=stride, pad=pad))


@register("conv2d")
def _conv2d(shape: str | None = None, dtype: str = "float32") -> Workload:
    shape = shape or "resnet_56"
    if shape not in CONV2D_SHAPES:
        raise KeyError(f"unknown conv2d shape {shape!r}; known: {sorted(CONV2D_SHAPES)}")
    N, H, W, CI, CO, KH, KW, stride, pad = CONV2D_SHAPES[shape]
    args = conv2d_nhwc(N, H, W, CI, CO, KH, KW, stride, pad, dtype)
    OH, OW = (H + 2 * pad - KH) // stride + 1, (W + 2 * pad - KW) // stride + 1
    return Workload("conv2d", shape, list(args), lambda d, k: conv2d_reference(d, k, stride, pad),
                    flops=2 * N * OH * OW * CO * KH * KW * CI,
                    params=dict(N=N, H=H, W=W, CI=CI, CO=CO, KH=KH, KW=KW, stride=stride, pad=pad))
