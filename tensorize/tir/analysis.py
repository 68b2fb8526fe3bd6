"""``tvm.tir.analysis``: analyses of TensorIR, re-exported from the core packages."""


def __getattr__(name):
    from ..ir import verify

    if hasattr(verify, name):
        return getattr(verify, name)
    raise AttributeError(f"module 'tensorize.tir.analysis' has no attribute {name!r}")
