"""The graph operators (``OPS``) and their type inference.

>>> sorted(n for n in OPS if n.startswith("conv"))
['conv2d']
>>> infer_type("dense", [((2, 8), "float32"), ((8, 3), "float32")], {})
((2, 3), 'float32')
"""
from __future__ import annotations

import math

from .. import te
from ..errors import TVMValueError
from . import op_math, op_nn, op_shape  # noqa: F401 - they register their operators
from .op_registry import OPS, OpDef

__all__ = ["OPS", "OpDef", "infer_type", "lower_node"]


def lower_node(op: str, args, shapes, attrs):
    """The te tensor of operator ``op`` on ``args`` (te tensors or scalar expressions)."""
    opdef = OPS[op]
    if opdef.compute is None or opdef.pattern == "view":
        raise TVMValueError(f"operator {op!r} is a view and has no computation")
    return opdef.compute(list(args), [tuple(s) for s in shapes], dict(attrs))


def infer_type(op: str, types, attrs) -> tuple:
    """``(shape, dtype)`` of the output of ``op`` on inputs of ``types`` (a list of (shape, dtype))."""
    if op == "reshape":
        shape, dtype = types[0]
        new = tuple(int(s) for s in attrs["shape"])
        if math.prod(new) != math.prod(shape):
            raise TVMValueError(f"reshape of {shape} to {new}: the element counts differ")
        return new, dtype
    args = [te.placeholder(s, d, name=f"p{i}") for i, (s, d) in enumerate(types)]
    try:
        out = lower_node(op, args, [s for s, _ in types], attrs)
    except (KeyError, IndexError, ValueError, TypeError) as err:
        raise TVMValueError(f"operator {op!r} on inputs {list(types)} with {attrs}: {type(err).__name__}: {err}") from err
    return tuple(int(s) for s in out.shape), out.dtype
