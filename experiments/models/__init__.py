"""End-to-end models as ONNX graphs written with ``onnx.helper`` (seeded random weights, nothing
downloaded): ``MODELS[name](**config)`` gives an ``onnx.ModelProto``; ``TEST_CONFIGS[name]`` are
reduced configurations that keep every operator kind for fast tests.

>>> sorted(MODELS)
['bert_base', 'mobilenet_v2', 'resnet50', 'vit_b16']
"""
from .cnn import mobilenet_v2, resnet50
from .transformer import bert_base, vit_b16

MODELS = {"resnet50": resnet50, "mobilenet_v2": mobilenet_v2, "bert_base": bert_base, "vit_b16": vit_b16}

TEST_CONFIGS = {
    "resnet50": {"image": 32, "blocks": (1, 1, 1, 1), "width": 8, "num_classes": 10},
    "mobilenet_v2": {"image": 32, "width_mult": 0.25, "num_classes": 10,
                     "settings": [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 1, 2), (6, 96, 1, 1)]},
    "bert_base": {"seq": 16, "layers": 2, "hidden": 64, "heads": 2, "intermediate": 128, "vocab": 100},
    "vit_b16": {"image": 32, "patch": 8, "layers": 2, "hidden": 64, "heads": 2, "mlp": 128, "num_classes": 10},
}


def random_inputs(model, seed: int = 0) -> dict:
    """Seeded inputs for every graph input of ``model`` (token ids below 100 for int64 inputs)."""
    import numpy as np
    from onnx import TensorProto

    rng = np.random.default_rng(seed)
    out = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.elem_type == TensorProto.INT64:
            out[vi.name] = rng.integers(0, 100, size=shape).astype("int64")
        else:
            out[vi.name] = rng.standard_normal(shape).astype("float32")
    return out


__all__ = ["MODELS", "TEST_CONFIGS", "resnet50", "mobilenet_v2", "bert_base", "vit_b16", "random_inputs"]
