"""Hand-written schedules by (workload, name). ``default`` leaves the program as ``te`` built it;
the others are CPU schedules a performance engineer would write. The search plugs in beside these.

Example::

    sch = apply_schedule("dep_conv", "cpu_hand", tvm.tir.Schedule(mod), vector_lanes=8)
"""
from __future__ import annotations

from typing import Callable

from tensorize import tir

_SCHEDULES: dict[tuple[str, str], Callable] = {}


def register(workload: str, name: str):
    """Decorator registering a hand schedule ``name`` for ``workload``."""
    def wrap(fn):
        _SCHEDULES[(workload, name)] = fn
        return fn

    return wrap


def schedule_names(workload: str) -> list[str]:
    """The schedules of ``workload``: ``"default"`` then the registered ones, sorted."""
    return ["default"] + sorted(n for (w, n) in _SCHEDULES if w == workload)


def apply_schedule(workload: str, name: str, sch: "tir.Schedule", vector_lanes: int = 16) -> "tir.Schedule":
    """Apply the schedule ``name`` of ``workload`` to ``sch`` (in place) and return it."""
    if name == "default":
        return sch
    fn = _SCHEDULES.get((workload, name))
    if fn is None:
        raise KeyError(f"no schedule {name!r} for workload {workload!r}; known: {schedule_names(workload)}")
    fn(sch, vector_lanes)
    return sch


def _largest_divisor_at_most(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


@register("dep_conv", "cpu_hand")
def depthwise_cpu(sch: "tir.Schedule", vector_lanes: int = 16) -> None:
    """Register-tiled depthwise conv: inline the padding; each task computes one output row in tiles
    of ``wi`` columns x ``ci`` channels held in registers (cache_write "local"), with the 3x3 window
    and the columns unrolled and the channels vectorized; output rows run in parallel.

    The padding guard ``if_then_else`` stays a scalar branch per (row, column) because it does not
    depend on the channel, so vectorization keeps contiguous loads.
    """
    sch.compute_inline(sch.get_block("pad"))
    conv = sch.get_block("depthwise")
    n, h, w, c, rh, rw = sch.get_loops(conv)
    C = int(sch.get(c).extent)
    W = int(sch.get(w).extent)
    # Two vector registers of channels per column and up to 4 columns: 8 accumulators. The kernel is
    # bound by memory traffic, not FMAs; wider tiles (8 columns) run no faster here, spill registers
    # and take twice as long to compile.
    lanes = _largest_divisor_at_most(C, 2 * vector_lanes)
    columns = _largest_divisor_at_most(W, 4)
    co, ci = sch.split(c, factors=[None, lanes])
    wo, wi = sch.split(w, factors=[None, columns])
    sch.reorder(n, h, wo, co, rh, rw, wi, ci)
    acc = sch.cache_write(conv, 0, "local")
    sch.reverse_compute_at(acc, co)
    outer = sch.fuse(n, h)
    sch.parallel(outer)
    sch.unroll(rh)
    sch.unroll(rw)
    sch.unroll(wi)
    sch.vectorize(ci)
    sch.decompose_reduction(conv, rh)
    write_back = sch.get_loops(acc)
    sch.vectorize(write_back[-1])


@register("conv2d", "cpu_hand")
def conv2d_cpu(sch: "tir.Schedule", vector_lanes: int = 16) -> None:
    """Register-tile output columns x output channels, vectorize output channels, parallelize rows."""
    sch.compute_inline(sch.get_block("pad"))
    conv = sch.get_block("conv2d")
    n, h, w, o, rh, rw, rc = sch.get_loops(conv)
    CO = int(sch.get(o).extent)
    lanes = _largest_divisor_at_most(CO, vector_lanes)
    W = int(sch.get(w).extent)
    oo, oi = sch.split(o, factors=[None, lanes])
    wo, wi = sch.split(w, factors=[None, _largest_divisor_at_most(W, 7)])
    sch.reorder(n, h, wo, oo, rh, rw, rc, wi, oi)
    outer = sch.fuse(n, h)
    sch.parallel(outer)
    sch.vectorize(oi)
    sch.unroll(wi)
    sch.decompose_reduction(conv, rh)
