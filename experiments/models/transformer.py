"""BERT-base and ViT-B/16 as ONNX graphs, seeded weights, written as exporters write them.

BERT uses the decomposed layer norm (ReduceMean, Sub, Pow, Sqrt, Div) and the erf form of GELU
that PyTorch exports; ViT uses ``LayerNormalization`` (opset 17). Both shrink for tests through
their keyword arguments.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from .onnx_builder import OnnxBuilder

__all__ = ["bert_base", "vit_b16"]


def _f(b: OnnxBuilder, value: float) -> str:
    return b.const(np.float32(value), "k")


def _shape(b: OnnxBuilder, shape) -> str:
    return b.const(np.array(shape, "int64"), "shape")


def _linear(b: OnnxBuilder, x: str, cin: int, cout: int) -> str:
    return b.op("Add", [b.op("MatMul", [x, b.weight((cin, cout), cin)]), b.small((cout,))])


def _gelu(b: OnnxBuilder, x: str) -> str:
    erf = b.op("Erf", [b.op("Div", [x, _f(b, 1.4142135381698608)])])
    return b.op("Mul", [b.op("Mul", [x, b.op("Add", [erf, _f(b, 1.0)])]), _f(b, 0.5)])


def _layer_norm_decomposed(b: OnnxBuilder, x: str, hidden: int) -> str:
    mean = b.op("ReduceMean", [x], axes=[-1])
    d = b.op("Sub", [x, mean])
    var = b.op("ReduceMean", [b.op("Pow", [d, _f(b, 2.0)])], axes=[-1])
    y = b.op("Div", [d, b.op("Sqrt", [b.op("Add", [var, _f(b, 1e-12)])])])
    return b.op("Add", [b.op("Mul", [y, b.small((hidden,), "gamma", 0.1, 1.0)]), b.small((hidden,), "beta")])


def _layer_norm(b: OnnxBuilder, x: str, hidden: int) -> str:
    return b.op("LayerNormalization", [x, b.small((hidden,), "gamma", 0.1, 1.0), b.small((hidden,), "beta")],
                axis=-1, epsilon=1e-6)


def _attention(b: OnnxBuilder, x: str, batch: int, seq: int, hidden: int, heads: int) -> str:
    dh = hidden // heads
    split = _shape(b, [batch, seq, heads, dh])
    q = b.op("Transpose", [b.op("Reshape", [_linear(b, x, hidden, hidden), split])], perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [_linear(b, x, hidden, hidden), split])], perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [_linear(b, x, hidden, hidden), split])], perm=[0, 2, 1, 3])
    scores = b.op("Div", [b.op("MatMul", [q, k]), _f(b, float(np.sqrt(dh)))])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    ctx = b.op("Reshape", [b.op("Transpose", [ctx], perm=[0, 2, 1, 3]), _shape(b, [batch, seq, hidden])])
    return _linear(b, ctx, hidden, hidden)


def bert_base(seq: int = 128, layers: int = 12, hidden: int = 768, heads: int = 12, intermediate: int = 3072,
              vocab: int = 30522, batch: int = 1, seed: int = 0) -> onnx.ModelProto:
    """BERT-base encoder (post-LN): ``input_ids`` (int64, batch x seq) -> ``last_hidden_state``."""
    b = OnnxBuilder("bert_base", seed)
    ids = b.input("input_ids", (batch, seq), TensorProto.INT64)
    x = b.op("Gather", [b.small((vocab, hidden), "word_emb", 1.0), ids], axis=0)
    x = b.op("Add", [x, b.small((seq, hidden), "pos_emb", 1.0)])
    x = b.op("Add", [x, b.small((hidden,), "type_emb", 1.0)])
    x = _layer_norm_decomposed(b, x, hidden)
    for _ in range(layers):
        x = _layer_norm_decomposed(b, b.op("Add", [_attention(b, x, batch, seq, hidden, heads), x]), hidden)
        h = _linear(b, _gelu(b, _linear(b, x, hidden, intermediate)), intermediate, hidden)
        x = _layer_norm_decomposed(b, b.op("Add", [h, x]), hidden)
    b.rename_output(x, "last_hidden_state")
    b.output("last_hidden_state", (batch, seq, hidden))
    return b.model()


def vit_b16(image: int = 224, patch: int = 16, layers: int = 12, hidden: int = 768, heads: int = 12,
            mlp: int = 3072, num_classes: int = 1000, batch: int = 1, seed: int = 0) -> onnx.ModelProto:
    """ViT-B/16 (pre-LN): ``pixel_values`` (batch x 3 x image x image) -> ``logits`` of the class token."""
    b = OnnxBuilder("vit_b16", seed)
    grid = image // patch
    tokens = grid * grid + 1
    x = b.input("pixel_values", (batch, 3, image, image))
    x = b.op("Conv", [x, b.weight((hidden, 3, patch, patch), 3 * patch * patch), b.small((hidden,))],
             kernel_shape=[patch, patch], strides=[patch, patch])
    x = b.op("Transpose", [b.op("Reshape", [x, _shape(b, [batch, hidden, grid * grid])])], perm=[0, 2, 1])
    x = b.op("Concat", [b.small((batch, 1, hidden), "cls", 1.0), x], axis=1)
    x = b.op("Add", [x, b.small((1, tokens, hidden), "pos_emb", 1.0)])
    for _ in range(layers):
        x = b.op("Add", [x, _attention(b, _layer_norm(b, x, hidden), batch, tokens, hidden, heads)])
        h = _linear(b, _gelu(b, _linear(b, _layer_norm(b, x, hidden), hidden, mlp)), mlp, hidden)
        x = b.op("Add", [x, h])
    x = _layer_norm(b, x, hidden)
    cls = b.op("Gather", [x, b.const(np.array(0, "int64"), "index")], axis=1)
    b.rename_output(_linear(b, cls, hidden, num_classes), "logits")
    b.output("logits", (batch, num_classes))
    return b.model()
