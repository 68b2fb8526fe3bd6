"""Tensor intrinsics for the project's hardware families.

Importing this package registers every family with ``tvm.tir.TensorIntrin`` (each module registers
its own intrinsics on import). ``TensorIntrin.get`` also loads the families on demand through the
``tensorize.intrinsics`` entry-point group, so an explicit import is only needed from a source
checkout that was not installed.

>>> import intrinsics
>>> import tensorize as tvm
>>> tvm.tir.TensorIntrin.get("dot_16x4_vnni").meta.features
('avx512vnni',)
"""
import importlib
import logging

logger = logging.getLogger(__name__)

FAMILIES = ("x86", "arm")

for _family in FAMILIES:
    try:
        importlib.import_module(f"{__name__}.{_family}")
    except ImportError as _err:  # a family still being written must not hide the others
        if getattr(_err, "name", None) != f"{__name__}.{_family}":
            raise
        logger.debug("intrinsic family %s is not available", _family)
