"""Workloads by name: each builds ``te`` tensors for a named shape and knows its numpy reference,
its FLOP count and how to make random inputs.

Workload modules (``conv.py``) register their builders with ``@register(name)``; the package
``experiments.workloads`` imports them, so every workload is known once the package is imported."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

_BUILDERS: dict[str, Callable[..., "Workload"]] = {}


@dataclass
class Workload:
    """A built workload: ``args`` are the te tensors (inputs first, output last) for
    ``te.create_prim_func``; ``reference(*inputs)`` computes the output with numpy."""

    name: str
    shape_name: str
    args: list
    reference: Callable[..., np.ndarray]
    flops: int
    params: dict[str, Any] = field(default_factory=dict)
    #: names of the inputs that are a model's constant weights (layout-free: a schedule may pre-pack them
    #: once, as MetaSchedule's ``rewrite_layout``, and the timed kernel takes them packed)
    weights: tuple = ("kernel",)

    def weight_indices(self) -> list[int]:
        """Positions in ``args`` of the weights (``weights``), for the ``layout_free_buffers`` attribute."""
        return [i for i, t in enumerate(self.args[:-1]) if getattr(t, "name", None) in self.weights]

    def random_inputs(self, rng: np.random.Generator) -> list[np.ndarray]:
        """Random inputs of the right shapes and dtypes (small integers for integer dtypes)."""
        arrays = []
        for t in self.args[:-1]:
            shape = tuple(int(s) for s in t.shape)
            if np.issubdtype(np.dtype(t.dtype), np.integer):
                arrays.append(rng.integers(-4, 5, size=shape).astype(t.dtype))
            else:
                arrays.append(rng.standard_normal(shape).astype(t.dtype))
        return arrays

    def output_shape(self) -> tuple[int, ...]:
        """The shape of the output (the last argument)."""
        return tuple(int(s) for s in self.args[-1].shape)

    @property
    def output_dtype(self) -> str:
        """The dtype of the output (the last argument)."""
        return self.args[-1].dtype


def register(name: str):
    """Register a workload builder ``fn(shape: str, dtype: str) -> Workload`` under ``name``."""
    def wrap(fn):
        _BUILDERS[name] = fn
        return fn

    return wrap


def workload_names() -> list[str]:
    """The registered workload names, sorted."""
    return sorted(_BUILDERS)


def get_workload(name: str, shape: str | None = None, dtype: str = "float32") -> Workload:
    """Build workload ``name`` for the named ``shape`` (its default when None)."""
    if name not in _BUILDERS:
        raise KeyError(f"unknown workload {name!r}; known workloads: {sorted(_BUILDERS)}")
    return _BUILDERS[name](shape=shape, dtype=dtype)
