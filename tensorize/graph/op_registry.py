"""The registry of graph operators: ``OpDef`` (fusion pattern + te computation) by name.

Each operator module (``op_nn``, ``op_math``, ``op_shape``) registers its operators with
``@register(name, pattern)``. The compute function takes ``(args, shapes, attrs)``: ``args[i]``
is a ``te.Tensor``, or a scalar ``PrimExpr`` for a constant of one element; ``shapes[i]`` is the
shape of input ``i`` as a tuple of ints; it returns the output ``te.Tensor``.

Patterns, as TVM's operator patterns: ``"elemwise"`` (one output element from the same element of
each input, broadcasting allowed), ``"injective"`` (a rearrangement: transpose, concat, gather),
``"anchor"`` (reductions and everything else: conv, matmul, pooling, softmax, layer norm) and
``"view"`` (reshape: no computation, the output shares the input's memory).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["OpDef", "OPS", "register"]

PATTERNS = ("elemwise", "injective", "anchor", "view")


@dataclass(frozen=True)
class OpDef:
    """A graph operator: its name, fusion pattern and te computation (None for views)."""

    name: str
    pattern: str
    compute: Callable | None


OPS: dict[str, OpDef] = {}


def register(name: str, pattern: str):
    """Register the decorated ``compute(args, shapes, attrs) -> te.Tensor`` as operator ``name``.

    Parameters
    ----------
    name : str
        The operator's name in graphs.
    pattern : str
        Its fusion pattern: ``"elemwise"``, ``"injective"``, ``"anchor"`` or ``"view"``.

    Returns
    -------
    callable
        A decorator that adds ``OpDef(name, pattern, fn)`` to ``OPS`` and returns ``fn`` unchanged.

    Raises
    ------
    ValueError
        For an unknown pattern.
    """
    if pattern not in PATTERNS:
        raise ValueError(f"unknown operator pattern {pattern!r}; one of {PATTERNS}")

    def wrap(fn):
        OPS[name] = OpDef(name, pattern, fn)
        return fn

    return wrap
