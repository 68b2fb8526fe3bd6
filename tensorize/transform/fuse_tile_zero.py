"""``FuseTileZero``: a reduction's zero initialisation of C, then AMX tile loads of that C, becomes ``tilezero``.

A GEMM tensorized with AMX keeps a block of C in accumulator tiles: the impl loads the tiles from C, multiplies
into them and stores them back. The reduction's init (lowered to a loop nest writing zeros, guarded by ``k == 0``
when K is split across calls) runs before, in vector stores to the same memory the tile loads then read. The
pass zeroes the tiles instead (``tilezero``) and drops the stores: no pass over C, and no tile load waiting for
vector stores to reach L1. For example::

    if k_0 == 0:                                           (init dropped)
        for i, j in T.grid(32, 32): C[b + i * N + j] = 0
    tileloadd(0, &C[b], 4 N)                               if k_0 == 0: tilezero(0)
    ...                                                    else: tileloadd(0, &C[b], 4 N)
    tilestored(0, &C[b], 4 N)                              ...

It applies only when it is exact. From a group of zero fills of one buffer on, the pass follows which elements
still hold the zeros (offsets from constant strides, tile shapes from the function's one ``ldtilecfg`` descriptor;
loop nests around the calls, a K loop or a loop over blocks of C, are followed iteration by iteration): a tile
load of such elements only becomes ``tilezero`` (where some loops are at their first iteration, if that is where
it reads them), a tile store takes its elements out, and the fills go only when every zeroed element has been
stored again by the end of the sequence and nothing but tile loads and stores touched the buffer meanwhile.

Off with ``PassContext(disabled_pass=["tir.FuseTileZero"])``.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..arith.linear_form import difference, to_linear
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, post_order_visit, substitute
from ..ir.structural import structural_equal
from ..ir.op_call import call_llvm_intrin
from .tile_code import TILE_LOADS, TILE_STORE, TILE_ZERO, single_tile_shapes, tile_access, tile_cells, tile_effects
from .pass_infra import func_pass
from .remove_no_op import is_no_op

# Loop nests around tile code are followed iteration by iteration up to this many iterations in all (a K loop,
# blocks of C).
_MAX_SIMULATED_ITERATIONS = 1024


_FILL_LOOPS = (S.ForKind.SERIAL, S.ForKind.UNROLLED, S.ForKind.VECTORIZED)


def _fill_stores(stmt, loops=()):
    """The stores of a loop nest (constant bounds, bodies of stores and nests), each with its enclosing loops, or
    None for anything else."""
    if isinstance(stmt, S.BufferStore):
        return [(stmt, loops)] if loops else None
    if isinstance(stmt, S.For) and stmt.kind in _FILL_LOOPS and isinstance(stmt.min, E.IntImm) and \
            isinstance(stmt.extent, E.IntImm):
        return _fill_stores(stmt.body, loops + (stmt,))
    if isinstance(stmt, S.SeqStmt) and loops:
        found = [_fill_stores(s, loops) for s in stmt.seq]
        return None if any(f is None for f in found) else [pair for f in found for pair in f]
    return None


def _store_offsets(store, loops, base):
    """The elements (offsets from ``base``) a zero store writes over its loops, or None when it is not a zero store
    at ``base + linear(loop variables)``."""
    if len(store.indices) != 1 or store.predicate is not None:
        return None
    value, index = store.value, store.indices[0]
    lanes, step = 1, 0
    if isinstance(value, E.Broadcast):
        value = value.value
    if isinstance(index, E.Ramp):
        if not isinstance(index.stride, E.IntImm) or not isinstance(index.lanes, (int, E.IntImm)):
            return None
        lanes, step, index = int(index.lanes), index.stride.value, index.base
    if not (isinstance(value, (E.IntImm, E.FloatImm)) and value.value == 0):
        return None
    form = to_linear(E.Sub(index, base))
    if any(all(term is not loop.loop_var for loop in loops) for term, _ in form.terms.values()):
        return None
    offsets = np.full(1, form.const, np.int64)
    for loop in loops:
        coeff = sum(c for term, c in form.terms.values() if term is loop.loop_var)
        values = (loop.min.value + np.arange(loop.extent.value, dtype=np.int64)) * coeff
        offsets = (offsets[:, None] + values[None, :]).reshape(-1)
    return (offsets[:, None] + np.arange(lanes, dtype=np.int64)[None, :] * step).reshape(-1)


def _zero_fill(stmt):
    """``(guard, buffer, base, offsets)`` when ``stmt`` is a (guarded) loop nest storing zeros into one flat buffer at
    ``base + linear(loop variables)``; offsets are the written elements' offsets from ``base``."""
    guard = None
    if isinstance(stmt, S.IfThenElse) and stmt.else_case is None:
        guard, stmt = stmt.condition, stmt.then_case
    stores = _fill_stores(stmt)
    if not stores:
        return None
    first, loops = stores[0]
    if any(store.buffer.data is not first.buffer.data for store, _ in stores):
        return None
    index = first.indices[0].base if isinstance(first.indices[0], E.Ramp) else first.indices[0]
    base = substitute(index, {loop.loop_var: loop.min for loop in loops})
    parts = [_store_offsets(store, loops, base) for store, loops in stores]
    if any(p is None for p in parts):
        return None
    return guard, first.buffer, base, np.unique(np.concatenate(parts))


class _Pending:
    """A set of element offsets (those still holding the fill's zeros) as a mask over their range."""

    def __init__(self, offsets: np.ndarray):
        self.low = int(offsets.min())
        self.mask = np.zeros(int(offsets.max()) - self.low + 1, bool)
        self.mask[offsets - self.low] = True
        self.count = int(self.mask.sum())

    def _positions(self, offsets: np.ndarray):
        at = offsets - self.low
        within = (at >= 0) & (at < len(self.mask))
        return at, within

    def holds(self, offsets: np.ndarray) -> np.ndarray:
        """Per offset, whether it is pending."""
        at, within = self._positions(offsets)
        out = np.zeros(len(offsets), bool)
        out[within] = self.mask[at[within]]
        return out

    def remove(self, offsets: np.ndarray) -> None:
        """The offsets no longer pending (a store wrote them)."""
        at, within = self._positions(offsets)
        at = np.unique(at[within])
        self.count -= int(self.mask[at].sum())
        self.mask[at] = False

    def empty(self) -> bool:
        return self.count == 0


def _loop_nest(stmt) -> list | None:
    """The perfectly nested serial loops of constant bounds from ``stmt`` down (at most
    ``_MAX_SIMULATED_ITERATIONS`` iterations in all), or None when ``stmt`` is no such loop."""
    loops, total = [], 1
    while isinstance(stmt, S.For) and stmt.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED) and \
            isinstance(stmt.min, E.IntImm) and isinstance(stmt.extent, E.IntImm) and stmt.extent.value >= 1:
        loops.append(stmt)
        total *= stmt.extent.value
        stmt = stmt.body
    return loops if loops and total <= _MAX_SIMULATED_ITERATIONS else None


def _firsts_condition(points: set, loops: list) -> list | None:
    """The loops whose first iteration is exactly where a load reads pending elements (``points``, iteration tuples
    of the nest): none when it is every iteration; None when no such set of loops describes them."""
    extents = [loop.extent.value for loop in loops]
    for size in range(len(loops) + 1):
        for chosen in itertools.combinations(range(len(loops)), size):
            expected = {p for p in np.ndindex(*extents) if all(p[c] == 0 for c in chosen)}
            if expected == points:
                return [loops[c] for c in chosen]
    return None


def _reads_memory(expr) -> bool:
    found = []
    post_order_visit(expr, lambda node: found.append(node) if isinstance(node, E.BufferLoad) else None)
    return bool(found)


class _Fuser(StmtExprMutator):
    """Tracks, from a group of zero fills on, the elements that still hold the fill's zeros (``pending``): a tile
    load of pending elements only becomes ``tilezero``; a tile store takes its elements out; anything else that
    reads or writes the buffer, a load straddling pending and other elements, or pending elements left at the end
    of the sequence keep the program as it is."""

    def __init__(self, shapes):
        super().__init__()
        self.shapes = shapes

    def visit_seq_stmt_(self, op):
        seq = [self.visit_stmt(s) for s in op.seq]
        position = 0
        while position < len(seq):
            fused = self._fuse_at(seq, position)
            if fused is not None:
                seq = fused
            position += 1
        kept = [s for s in seq if not is_no_op(s)]
        if len(kept) == len(op.seq) and all(a is b for a, b in zip(kept, op.seq)):
            return op
        return S.SeqStmt.flatten(*kept) if kept else S.Evaluate(0)

    def _fills(self, seq, position):
        """The zero fills from ``position`` on that share the first one's buffer and guard: (guard, buffer, base,
        offsets of all of them from the first one's base, how many)."""
        first = _zero_fill(seq[position])
        if first is None or (first[0] is not None and _reads_memory(first[0])):
            return None
        guard, buffer, base, offsets = first
        parts, count = [offsets], 1
        for stmt in seq[position + 1:]:
            fill = _zero_fill(stmt)
            if fill is None or fill[1].data is not buffer.data or (fill[0] is None) != (guard is None) or \
                    (guard is not None and not structural_equal(fill[0], guard)):
                break
            shift = difference(fill[2], base)
            if shift is None:
                break
            parts.append(fill[3] + shift)
            count += 1
        return guard, buffer, base, np.unique(np.concatenate(parts)), count

    def _covered(self, access, base):
        """The elements (offsets from ``base``) a tile load or store covers, or None when not constant."""
        offset, cells = difference(access[2], base), tile_cells(self.shapes, access)
        return None if offset is None or cells is None else offset + cells

    def _classify(self, stmt, state):
        """What ``stmt`` does to the pending elements (advancing ``state``): ``"zero"`` for a tile load of pending
        elements only, ``"same"`` for a statement that stays as it is, None when the fusion must not happen."""
        buffer, base = state["buffer"], state["base"]
        load = tile_access(stmt, TILE_LOADS)
        access = load or tile_access(stmt, (TILE_STORE,))
        if access is None or access[1].data is not buffer.data:
            return None if buffer.data in tile_effects(stmt).buffers else "same"
        tile, _, index, stride = access
        covered = self._covered(access, base)
        if covered is None:
            return None
        if load is None:  # a store: its elements now hold the tile, in both programs
            state["pending"].remove(covered)
            return "same"
        inside = state["pending"].holds(covered)
        if not inside.any():
            return "same"  # reads elements a store has overwritten, as before
        return "zero" if inside.all() else None

    def _zero(self, load, condition):
        tile = tile_access(load, TILE_LOADS)[0]
        zero = S.Evaluate(call_llvm_intrin("void", TILE_ZERO, E.IntImm("int8", tile)))
        return zero if condition is None else S.IfThenElse(condition, zero, load)

    def _step(self, stmt, state):
        """The statement replacing ``stmt`` (itself when unchanged), or None when the fusion must not happen."""
        if _loop_nest(stmt) is not None:
            return self._nest(stmt, state)
        kind = self._classify(stmt, state)
        if kind == "zero":
            state["zeroed"] = True
            return self._zero(stmt, state["guard"])
        return None if kind is None else stmt

    def _nest(self, outer, state):
        """A nest of loops around intrinsic calls, run iteration by iteration. A load of pending elements in every
        iteration (a loop over blocks of C) becomes ``tilezero``; one pending exactly where some of the loops are at
        their first iteration (a K loop, each iteration loading what the one before stored) becomes ``tilezero``
        there. The innermost body's tile accesses of C must be at offsets linear in the loop variables; anything
        else in it must leave C alone."""
        loops = _loop_nest(outer)
        inner = loops[-1].body
        body = list(inner.seq) if isinstance(inner, S.SeqStmt) else [inner]
        plans = []  # per statement: None (leaves C alone) or (is a load, tile shape offsets, constant, steps)
        for stmt in body:
            load = tile_access(stmt, TILE_LOADS)
            access = load or tile_access(stmt, (TILE_STORE,))
            if access is None or access[1].data is not state["buffer"].data:
                if state["buffer"].data in tile_effects(stmt).buffers:
                    return None
                plans.append(None)
                continue
            tile, _, index, stride = access
            form = to_linear(E.Sub(index, state["base"]))
            steps = [sum(c for term, c in form.terms.values() if term is loop.loop_var) for loop in loops]
            shape = tile_cells(self.shapes, access)
            nest_vars = [loop.loop_var for loop in loops]
            if shape is None or any(all(term is not v for v in nest_vars) for term, _ in form.terms.values()):
                return None
            plans.append((load is not None, shape, form.const, steps))
        extents = [loop.extent.value for loop in loops]
        zero_at = [set() for _ in body]
        for point in np.ndindex(*extents):
            for n, plan in enumerate(plans):
                if plan is None:
                    continue
                is_load, shape, const, steps = plan
                covered = shape + (const + sum(s * (loop.min.value + p) for s, loop, p in zip(steps, loops, point)))
                if not is_load:
                    state["pending"].remove(covered)
                    continue
                inside = state["pending"].holds(covered)
                if inside.all():
                    zero_at[n].add(point)
                elif inside.any():
                    return None
        if not any(zero_at):
            return outer
        out = []
        for stmt, points in zip(body, zero_at):
            if not points:
                out.append(stmt)
                continue
            firsts = _firsts_condition(points, loops)
            if firsts is None:
                return None
            condition = state["guard"]
            for loop in firsts:
                at_first = E.EQ(loop.loop_var, loop.min)
                condition = at_first if condition is None else E.And(condition, at_first)
            out.append(self._zero(stmt, condition))
        state["zeroed"] = True
        rebuilt = S.SeqStmt.flatten(*out)
        for loop in reversed(loops):
            rebuilt = loop.replace(body=rebuilt)
        return rebuilt

    def _fuse_at(self, seq, position):
        fills = self._fills(seq, position)
        if fills is None:
            return None
        guard, buffer, base, offsets, count = fills
        state = {"buffer": buffer, "base": base, "pending": _Pending(offsets),
                 "guard": guard, "zeroed": False}
        out = list(seq)
        for at in range(position + count, len(seq)):
            if state["pending"].empty():
                break
            new = self._step(seq[at], state)
            if new is None:
                return None
            out[at] = new
        if not state["pending"].empty() or not state["zeroed"]:
            return None
        for at in range(position, position + count):
            out[at] = S.Evaluate(0)
        return out


def fuse_tile_zero(func):
    """``func`` with zero-initialised AMX accumulators made by ``tilezero`` (the PrimFunc-level form of
    ``FuseTileZero``).

    Parameters
    ----------
    func : PrimFunc
        The function, lowered to flat buffers (phase 3).

    Returns
    -------
    PrimFunc
        The transformed function; unchanged unless all its ``ldtilecfg`` calls load one constant descriptor.

    Examples
    --------
    >>> from tensorize.script import tir as T
    >>> @T.prim_func
    ... def f(C: T.Buffer((256,), "int32")):
    ...     cfg = T.allocate([8], "int64", "local")
    ...     cfg_1 = T.decl_buffer((8,), "int64", data=cfg, scope="local")
    ...     cfg_1[0] = T.int64(1)
    ...     cfg_1[1] = T.int64(0)
    ...     cfg_1[2] = T.int64(0x40)
    ...     cfg_1[3] = T.int64(0)
    ...     cfg_1[4] = T.int64(0)
    ...     cfg_1[5] = T.int64(0)
    ...     cfg_1[6] = T.int64(0x10)
    ...     cfg_1[7] = T.int64(0)
    ...     T.call_llvm_intrin("void", "llvm.x86.ldtilecfg", T.address_of(cfg_1[0]))
    ...     for i, j in T.grid(16, 16):
    ...         C[i * 16 + j] = 0
    ...     T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(0), T.address_of(C[0]), T.int64(64))
    ...     T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(0), T.address_of(C[0]), T.int64(64))
    >>> text = fuse_tile_zero(f).script()
    >>> "tilezero" in text, "tileloadd" in text, "T.grid" in text
    (True, False, False)
    """
    shapes = single_tile_shapes(func.body)
    return func if shapes is None else func.with_body(_Fuser(shapes).visit_stmt(func.body))


def FuseTileZero():  # noqa: N802 - pass names follow TVM's
    """Zero AMX accumulator tiles with ``tilezero`` instead of loading a just-zeroed C.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``, phase 3 of lowering).
    """
    return func_pass(fuse_tile_zero, "tir.FuseTileZero")
