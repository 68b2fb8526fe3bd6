"""Footprints, strides and reuse of one buffer access inside its loop nest.

For every loop variable and index dimension the *span* is how far the index moves while that loop
runs its range (``|coefficient| * (extent - 1)`` for an affine index, an interval bound otherwise).
The footprint of the access below loop level ``L`` is then, per dimension, ``1 + sum of the spans of
the loops at levels >= L`` (clipped to the buffer's extent), multiplied over dimensions.
"""
from __future__ import annotations

from tensorize.ir import dtype as dt
from tensorize.ir import expr as E

__all__ = ["AccessShape", "analyse_access"]

CACHE_LINE = 64


def _affine(e):
    """``(coeffs: dict var -> int, const)`` of an affine integer expression, or None."""
    if isinstance(e, E.IntImm):
        return {}, int(e.value)
    if isinstance(e, E.Var):
        return {e: 1}, 0
    if isinstance(e, E.Cast):
        return _affine(e.value)
    if isinstance(e, (E.Add, E.Sub)):
        a, b = _affine(e.a), _affine(e.b)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(e, E.Add) else -1
        coeffs = dict(a[0])
        for v, c in b[0].items():
            coeffs[v] = coeffs.get(v, 0) + sign * c
        return coeffs, a[1] + sign * b[1]
    if isinstance(e, E.Mul):
        a, b = _affine(e.a), _affine(e.b)
        if a is None or b is None:
            return None
        if not a[0]:
            a, b = b, a
        if b[0]:
            return None
        return {v: c * b[1] for v, c in a[0].items()}, a[1] * b[1]
    return None


def _var_ids(e) -> set:
    """The ids of the variables of ``e``, an expression ``_interval`` bounds (integers, variables, casts
    and arithmetic only)."""
    out: set = set()
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, E.Var):
            out.add(id(node))
        elif isinstance(node, E.Cast):
            stack.append(node.value)
        elif isinstance(node, E.BinaryOpExpr):
            stack.extend((node.a, node.b))
    return out


def _interval(e, env):  # noqa: C901 - one dispatch over integer expression kinds
    """``(lo, hi)`` of an integer expression with variables in ``env`` ranges (others at 0), or None."""
    if isinstance(e, E.IntImm):
        return int(e.value), int(e.value)
    if isinstance(e, E.Var):
        return env.get(e, (0, 0))
    if isinstance(e, E.Cast):
        return _interval(e.value, env)
    if isinstance(e, E.BinaryOpExpr) and not isinstance(e, E.CmpOpExpr):
        a, b = _interval(e.a, env), _interval(e.b, env)
        if a is None or b is None:
            return None
        if isinstance(e, E.Add):
            return a[0] + b[0], a[1] + b[1]
        if isinstance(e, E.Sub):
            return a[0] - b[1], a[1] - b[0]
        if isinstance(e, E.Mul):
            prods = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
            return min(prods), max(prods)
        if isinstance(e, E.Min):
            return min(a[0], b[0]), min(a[1], b[1])
        if isinstance(e, E.Max):
            return max(a[0], b[0]), max(a[1], b[1])
        if b[0] != b[1] or b[0] <= 0:
            return None
        c = b[0]
        if isinstance(e, (E.FloorDiv, E.Div)):
            return a[0] // c, a[1] // c
        if isinstance(e, (E.FloorMod, E.Mod)):
            if a[1] - a[0] + 1 >= c or a[0] // c != a[1] // c:
                return 0, c - 1
            return a[0] % c, a[1] % c
    return None


class AccessShape:
    """Spans and strides of one access in the loop nest ``loops`` (outermost first)."""

    __slots__ = ("shape", "elem_bytes", "lanes", "spans", "strides", "ramp_extra", "extents")

    def __init__(self, buffer, indices, lanes: int, loops: list, extents: list):
        shape = [int(s.value) if isinstance(s, E.IntImm) else 1 << 20 for s in buffer.shape]
        self.shape = shape
        self.elem_bytes = max(1, dt.bits_of(buffer.dtype) * dt.lanes_of(buffer.dtype) // 8)
        self.lanes = lanes
        self.extents = extents
        row = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            row[d] = row[d + 1] * shape[d + 1]
        nloops = len(loops)
        self.spans = [[0] * nloops for _ in shape]      # spans[d][level]
        self.strides = [0] * nloops                     # flattened element stride per loop
        self.ramp_extra = [0] * len(shape)
        index_of = {loop.loop_var: lv for lv, loop in enumerate(loops)}
        for d, index in enumerate(indices):
            if isinstance(index, E.Ramp):
                step = _affine(index.stride)
                step = abs(step[1]) if step is not None and not step[0] else 1
                self.ramp_extra[d] = step * (index.lanes - 1)
                index = index.base
            form = _affine(index)
            if form is not None:
                for v, c in form[0].items():
                    lv = index_of.get(v)
                    if lv is not None and c:
                        self.spans[d][lv] = abs(c) * (extents[lv] - 1)
                        self.strides[lv] += c * row[d]
                continue
            # non-affine (fused loops): interval per loop. With every variable at 0 the interval is the
            # same for all loops; a loop whose variable the index does not use moves nothing.
            lo = _interval(index, {})
            used = _var_ids(index) if lo is not None else None
            for v, lv in index_of.items():
                ext = extents[lv]
                if ext <= 1:
                    continue
                if used is not None and id(v) not in used:
                    continue
                iv = _interval(index, {v: (0, ext - 1)}) if lo is not None else None
                if iv is None or lo is None:
                    self.spans[d][lv] = shape[d] - 1
                    self.strides[lv] += row[d]
                    continue
                span = iv[1] - iv[0]
                if span:
                    self.spans[d][lv] = span
                    self.strides[lv] += max(1, span // (ext - 1)) * row[d]

    def footprint(self, level: int) -> tuple[int, int]:
        """``(unique elements, unique cache lines)`` touched by the loops at ``level`` and deeper."""
        elems, lines = 1, 1
        last = len(self.shape) - 1
        for d, size in enumerate(self.shape):
            width = min(size, 1 + self.ramp_extra[d] + sum(self.spans[d][level:]))
            elems *= width
            if d == last:
                lines *= -(-width * self.elem_bytes // CACHE_LINE)
            else:
                lines *= width
        return elems, lines

    def reuse_level(self) -> int:
        """The innermost loop (index) that does not move this access and runs more than once; -1: none."""
        for lv in range(len(self.extents) - 1, -1, -1):
            if self.extents[lv] > 1 and all(spans[lv] == 0 for spans in self.spans):
                return lv
        return -1

    def inner_stride(self) -> int:
        """Element stride of the innermost loop that moves the access (the ramp's when it is vector)."""
        if any(self.ramp_extra):
            d = max(i for i, r in enumerate(self.ramp_extra) if r)
            row = 1
            for s in self.shape[d + 1:]:
                row *= s
            return max(1, self.ramp_extra[d] // max(1, self.lanes - 1)) * row
        for lv in range(len(self.strides) - 1, -1, -1):
            if self.strides[lv] and self.extents[lv] > 1:
                return abs(self.strides[lv])
        return 0


def analyse_access(access, loops: list, extents: list) -> AccessShape:
    """The ``AccessShape`` of an ``Access`` under ``loops``."""
    return AccessShape(access.buffer, access.indices, access.lanes, loops, extents)
