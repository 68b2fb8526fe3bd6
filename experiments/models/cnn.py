"""ResNet-50 and MobileNet-V2 as ONNX graphs (NCHW, as frameworks export them), seeded weights.

Convolutions are followed by ``BatchNormalization`` (with random statistics) as an exported model
in inference mode has them; the importer folds them.
"""
from __future__ import annotations

import numpy as np
import onnx

from .onnx_builder import OnnxBuilder

__all__ = ["resnet50", "mobilenet_v2"]


def _conv_bn(b: OnnxBuilder, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
             act: str | None = "relu") -> str:
    w = b.weight((cout, cin // groups, k, k), fan_in=cin // groups * k * k)
    y = b.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=groups)
    y = b.op("BatchNormalization", [y, b.small((cout,), "gamma", 0.1, 1.0), b.small((cout,), "beta"),
                                    b.small((cout,), "mean"), b.const(np.abs(1.0 + 0.1 * b.rng.standard_normal(cout)).astype("float32"), "var")],
             epsilon=1e-5)
    if act == "relu":
        y = b.op("Relu", [y])
    elif act == "relu6":
        y = b.op("Clip", [y, b.const(np.float32(0.0), "lo"), b.const(np.float32(6.0), "hi")])
    return y


def resnet50(image: int = 224, blocks=(3, 4, 6, 3), width: int = 64, num_classes: int = 1000, batch: int = 1,
             seed: int = 0) -> onnx.ModelProto:
    """ResNet-50 v1.5 (bottlenecks, stride in the 3x3 conv); ``blocks``/``width``/``image`` shrink it for tests."""
    b = OnnxBuilder("resnet50", seed)
    x = b.input("data", (batch, 3, image, image))
    y = _conv_bn(b, x, 3, width, 7, stride=2)
    y = b.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, count in enumerate(blocks):
        mid = width * 2 ** stage
        cout = mid * 4
        for i in range(count):
            stride = 2 if i == 0 and stage > 0 else 1
            z = _conv_bn(b, y, cin, mid, 1)
            z = _conv_bn(b, z, mid, mid, 3, stride=stride)
            z = _conv_bn(b, z, mid, cout, 1, act=None)
            short = _conv_bn(b, y, cin, cout, 1, stride=stride, act=None) if (stride != 1 or cin != cout) else y
            y = b.op("Relu", [b.op("Add", [z, short])])
            cin = cout
    y = b.op("Flatten", [b.op("GlobalAveragePool", [y])], axis=1)
    y = b.op("Gemm", [y, b.weight((num_classes, cin), cin), b.small((num_classes,))], transB=1)
    b.rename_output(y, "logits")
    b.output("logits", (batch, num_classes))
    return b.model()


_MBV2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenet_v2(image: int = 224, width_mult: float = 1.0, num_classes: int = 1000, batch: int = 1,
                 seed: int = 0, settings=None) -> onnx.ModelProto:
    """MobileNet-V2 (inverted residuals, depthwise 3x3, ReLU6 as Clip); ``width_mult``/``image`` shrink it."""
    b = OnnxBuilder("mobilenet_v2", seed)
    ch = lambda c: max(8, int(c * width_mult + 4) // 8 * 8)  # noqa: E731
    x = b.input("data", (batch, 3, image, image))
    cin = ch(32)
    y = _conv_bn(b, x, 3, cin, 3, stride=2, act="relu6")
    for t, c, n, s in settings or _MBV2:
        cout = ch(c)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            z = _conv_bn(b, y, cin, hidden, 1, act="relu6") if t != 1 else y
            z = _conv_bn(b, z, hidden, hidden, 3, stride=stride, groups=hidden, act="relu6")
            z = _conv_bn(b, z, hidden, cout, 1, act=None)
            y = b.op("Add", [y, z]) if stride == 1 and cin == cout else z
            cin = cout
    last = max(1280, ch(1280)) if width_mult > 1.0 else ch(1280)
    y = _conv_bn(b, y, cin, last, 1, act="relu6")
    y = b.op("Reshape", [b.op("GlobalAveragePool", [y]), b.const(np.array([batch, last], "int64"), "shape")])
    y = b.op("Gemm", [y, b.weight((num_classes, last), last), b.small((num_classes,))], transB=1)
    b.rename_output(y, "logits")
    b.output("logits", (batch, num_classes))
    return b.model()
