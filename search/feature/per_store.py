"""The feature vector of one store, and of a whole program (the sum over its stores)."""
from __future__ import annotations

import math

import numpy as np

from tensorize.ir import expr as E
from tensorize.ir.stmt import ForKind

from .access import CACHE_LINE, analyse_access
from .names import (ACCESS, ANNOTATED_KINDS, ARITH, INDEX, INTRINSICS, NUM_ACCESSES, NUM_FEATURES,
                    NUM_INTENSITY, POSITIONS)
from .program import ProgramView

__all__ = ["program_features", "store_features"]

_KIND = {"vec": ForKind.VECTORIZED, "unroll": ForKind.UNROLLED, "parallel": ForKind.PARALLEL}
_ARITH_AT = [INDEX[f"arith.{n}"] for n in ARITH]
_INTRIN_AT = {n: INDEX[f"intrin.{n}"] for n in INTRINSICS}
_ACCESS_AT = INDEX["access0.is_read"]
_INTENSITY_AT = INDEX["intensity.0"]
_ALLOC_AT = INDEX["alloc.alloc_count"]
_A = {name: i for i, name in enumerate(ACCESS)}   # offsets inside one access's slot


def _log(x: float) -> float:
    return math.log2(1.0 + max(0.0, x))


def _extent(loop) -> int:
    return int(loop.extent.value) if isinstance(loop.extent, E.IntImm) else 1


class _Group:
    """Accesses of one buffer within a store."""

    __slots__ = ("shape", "reads", "writes", "count")

    def __init__(self, shape):
        self.shape, self.reads, self.writes, self.count = shape, 0, 0, 0


def _loop_features(vec, loops, extents, execs, unroll_step) -> None:
    n = len(loops)
    for kind in ANNOTATED_KINDS:
        want = _KIND[kind]
        at = [i for i, loop in enumerate(loops) if loop.kind == want]
        base = INDEX[f"{kind}.num"]
        if at:
            prod = 1
            for i in at:
                prod *= extents[i]
            vec[base] += len(at)
            vec[base + 1] += _log(prod)
            vec[base + 2] += _log(extents[at[-1]])
            pos = "inner" if at[-1] == n - 1 else "outer" if at[0] == 0 else "middle"
        else:
            pos = "none"
        vec[base + 3 + POSITIONS.index(pos)] += 1
    vec[INDEX["loop.num_stores"]] += 1
    vec[INDEX["loop.num_loops"]] += n
    vec[INDEX["loop.outer_prod"]] += _log(execs)
    vec[INDEX["loop.innermost_extent"]] += _log(extents[-1] if extents else 1)
    vec[INDEX["loop.auto_unroll_max_step"]] += _log(unroll_step)


def store_features(store, vec: np.ndarray) -> None:
    """Add the features of one ``StoreInfo`` to ``vec`` (float64, ``NUM_FEATURES`` long)."""
    loops = store.loops
    extents = [_extent(loop) for loop in loops]
    execs = 1
    for x in extents:
        execs *= x
    for name, at in zip(ARITH, _ARITH_AT):
        c = store.ops.get(name)
        if c:
            vec[at] += _log(c * execs)
    for name, c in store.intrins.items():
        vec[_INTRIN_AT[name]] += _log(c * execs)
    _loop_features(vec, loops, extents, execs, store.unroll_max_step)

    groups: dict = {}
    for acc in store.accesses:
        g = groups.get(id(acc.buffer.data))
        if g is None:
            g = groups[id(acc.buffer.data)] = _Group(analyse_access(acc, loops, extents))
        if acc.is_write:
            g.writes += 1
        else:
            g.reads += 1
        g.count += execs * acc.lanes
    shapes = [g.shape for g in groups.values()]
    n = len(loops)
    # bytes of all accesses at every level: the working set inside each loop
    level_bytes = [sum(s.footprint(lv)[0] * s.elem_bytes for s in shapes) for lv in range(n + 1)]
    ranked = sorted(groups.values(), key=lambda g: -g.count * g.shape.elem_bytes)[:NUM_ACCESSES]
    width = len(ACCESS)
    for k, g in enumerate(ranked):
        s = g.shape
        base = _ACCESS_AT + k * width
        eb = s.elem_bytes
        nbytes = g.count * eb
        uniq, ulines = s.footprint(0)
        stride = s.inner_stride()
        step = stride * eb
        contiguous = CACHE_LINE / eb if step == 0 else max(1.0, CACHE_LINE / step)
        lines = g.count / contiguous
        kind = 2 if g.reads and g.writes else 1 if g.writes else 0
        vec[base + kind] += 1                     # is_read, is_write, is_rw
        vec[base + _A["bytes"]] += _log(nbytes)
        vec[base + _A["unique_bytes"]] += _log(uniq * eb)
        vec[base + _A["lines"]] += _log(lines)
        vec[base + _A["unique_lines"]] += _log(ulines)
        lv = s.reuse_level()
        if lv >= 0:
            reuse_type, ct = _A["reuse_loop"], extents[lv]
            dis_iter = 1
            for x in extents[lv + 1:]:
                dis_iter *= x
            dis_bytes = level_bytes[lv + 1]
        elif kind == 2:
            reuse_type, ct, dis_iter, dis_bytes = _A["reuse_serial"], 1, 0, 0
        else:
            reuse_type, ct, dis_iter, dis_bytes = _A["reuse_none"], 0, 0, 0
        vec[base + reuse_type] += 1
        vec[base + _A["reuse_dis_iter"]] += _log(dis_iter)
        vec[base + _A["reuse_dis_bytes"]] += _log(dis_bytes)
        vec[base + _A["reuse_ct"]] += _log(ct)
        div = max(ct, 1)
        vec[base + _A["bytes_d_reuse_ct"]] += _log(nbytes / div)
        vec[base + _A["unique_bytes_d_reuse_ct"]] += _log(uniq * eb / div)
        vec[base + _A["lines_d_reuse_ct"]] += _log(lines / div)
        vec[base + _A["unique_lines_d_reuse_ct"]] += _log(ulines / div)
        vec[base + _A["stride"]] += _log(stride)

    lanes = store.accesses[0].lanes
    flops_per_exec = sum(store.ops.values()) + sum(store.intrins.values()) * lanes
    if flops_per_exec:
        curve = []
        inner = 1
        for lv in range(n, -1, -1):          # innermost level first
            if lv < n:
                inner *= extents[lv]
            curve.append(_log(flops_per_exec * inner / max(1, level_bytes[lv])))
        points = np.interp(np.linspace(0, len(curve) - 1, NUM_INTENSITY), np.arange(len(curve)), curve)
        vec[_INTENSITY_AT:_INTENSITY_AT + NUM_INTENSITY] += points


def program_features(view: ProgramView) -> np.ndarray:
    """One float32 vector: the features of every store of ``view`` summed, plus its allocations."""
    vec = np.zeros(NUM_FEATURES, np.float64)
    for store in view.stores:
        store_features(store, vec)
    execs_by_var: dict = {}
    for store in view.stores:
        data = store.accesses[0].buffer.data
        execs = 1
        for loop in store.loops:
            execs *= _extent(loop)
        execs_by_var[id(data)] = execs_by_var.get(id(data), 0) + execs
    for alloc in view.allocs:
        outer = 1
        for loop in alloc.loops:
            outer *= _extent(loop)
        vec[_ALLOC_AT] += 1
        vec[_ALLOC_AT + 1] += _log(alloc.nbytes)
        vec[_ALLOC_AT + 2] += _log(outer)
        vec[_ALLOC_AT + 3] += _log(execs_by_var.get(id(alloc.buffer_var), 0) / outer)
    return vec.astype(np.float32)
