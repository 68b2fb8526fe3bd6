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
from . import op_math, op_nn, op_shape, winograd  # noqa: F401 - they register their operators
from .op_registry import OPS, OpDef

__all__ = ["OPS", "OpDef", "infer_type", "lower_node"]


def lower_node(op: str, args, shapes, attrs):
    """The te tensor of operator ``op`` on ``args``.

    Parameters
    ----------
    op : str
        A graph operator (a key of ``OPS``), not a view.
    args : sequence of te.Tensor or PrimExpr
        The inputs (a scalar expression for a one-element constant).
    shapes : sequence of tuple of int
        The inputs' shapes.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    te.Tensor
        The operator's output.

    Raises
    ------
    TVMValueError
        When ``op`` is a view.
    """
    opdef = OPS[op]
    if opdef.compute is None or opdef.pattern == "view":
        raise TVMValueError(f"operator {op!r} is a view and has no computation")
    return opdef.compute(list(args), [tuple(s) for s in shapes], dict(attrs))


def infer_type(op: str, types, attrs) -> tuple:
    """``(shape, dtype)`` of the output of ``op`` on inputs of ``types``.

    Parameters
    ----------
    op : str
        A graph operator (a key of ``OPS``).
    types : list of tuple
        ``(shape, dtype)`` of each input.
    attrs : dict
        The operator's attributes.

    Returns
    -------
    tuple
        ``(shape, dtype)``: a tuple of ints and a str.

    Raises
    ------
    TVMValueError
        When the inputs or attributes do not fit the operator.
    """
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
