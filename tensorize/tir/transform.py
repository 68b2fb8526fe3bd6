"""``tvm.tir.transform``: TensorIR passes and the pass decorators, re-exported from ``tensorize.transform``."""


def __getattr__(name):
    from .. import transform

    if hasattr(transform, name):
        return getattr(transform, name)
    raise AttributeError(f"module 'tensorize.tir.transform' has no attribute {name!r}")
