"""How far apart two candidates are in the search space: the number of sampling decisions they differ in.

Two candidates of different sketches (other schedule instructions, or other sampling instructions) are
as far apart as can be. The evolutionary search uses this to keep one round's measured batch from
being a single program's near copies.

>>> from tensorize.schedule import Schedule
>>> from tensorize import te
>>> A = te.placeholder((64,), name="A")
>>> B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
>>> def tiled(seed):
...     sch = Schedule(te.create_prim_func([A, B]), seed=seed)
...     loop = sch.get_loops(sch.get_block("B"))[0]
...     sch.split(loop, sch.sample_perfect_tile(loop, n=2, max_innermost_factor=64))
...     return decision_signature(sch.trace)
>>> decision_distance(tiled(0), tiled(0))
0
>>> decision_distance(tiled(0), tiled(0)[:1] + ((),))     # another sketch
inf
"""
from __future__ import annotations

import math

__all__ = ["decision_distance", "decision_signature"]


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def decision_signature(trace) -> tuple:
    """``(sketch, decisions)``: the kinds of the trace's instructions before post-processing, and the
    decisions of its sampling instructions in order (hashable)."""
    kinds, decisions = [], []
    for inst in trace.insts:
        if inst.kind == "enter_postproc":
            break
        kinds.append(inst.kind)
        if inst.decision is not None:
            decisions.append(_frozen(inst.decision))
    return (tuple(kinds), tuple(decisions))


def decision_distance(a: tuple, b: tuple) -> float:
    """How many sampling decisions the signatures ``a`` and ``b`` differ in (``inf`` across sketches)."""
    if a[0] != b[0] or len(a[1]) != len(b[1]):
        return math.inf
    return sum(1 for x, y in zip(a[1], b[1]) if x != y)
