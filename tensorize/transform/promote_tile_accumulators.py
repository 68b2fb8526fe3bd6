"""``PromoteTileAccumulators``: AMX accumulator tiles stay in their registers across a loop around intrinsic calls.

Each AMX intrinsic call loads its accumulator tiles from C, multiplies into them and stores them back. When a
serial loop wraps the calls (K split over calls, the taps of a convolution), every iteration stores a tile that
the next one loads again from the same place. As a compiler keeps a scalar accumulator in a register across a
loop, the pass loads (or zeroes) the tiles once before the loop and stores them once after it::

    for k in range(4):                          if True: tilezero(0)   (k = 0 in the first iteration's load)
        if k == 0: tilezero(0)                  for k in range(4):
        else: tileloadd(0, &C[b], 64)               tileloadd(1, ...); tdpbusd(0, 1, 2)
        tileloadd(1, ...); tdpbusd(0, 1, 2)     tilestored(0, &C[b], 64)
        tilestored(0, &C[b], 64)

A tile qualifies when, in the loop's body, its first statement loads it (or zeroes it in the first iteration,
``FuseTileZero``'s form) from an address that does not change with the loop, its last statement stores it to the
same address, nothing else in the body writes the tile except the dot products accumulating into it, and nothing
else reads or writes the buffer there. The loop must run at least once (a constant extent). Loops nest: an inner
loop's promoted tiles may be promoted again around the loop outside it.

Off with ``PassContext(disabled_pass=["tir.PromoteTileAccumulators"])``.
"""
from __future__ import annotations

import numpy as np

from ..arith.analyzer import Analyzer
from ..arith.linear_form import difference
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, substitute, uses_var
from .tile_code import (TILE_LOADS, TILE_STORE, TILE_ZERO, llvm_intrin_name, single_tile_shapes, tile_access,
                        tile_cells, tile_effects)
from .pass_infra import func_pass

_STORE = (TILE_STORE,)


def _accumulator_load(stmt):
    """``(tile, access)`` when ``stmt`` loads a tile (``tileloadd``, or ``if c: tilezero(t) else tileloadd(t)``)."""
    if isinstance(stmt, S.IfThenElse) and stmt.else_case is not None:
        zero, load = stmt.then_case, stmt.else_case
        access = tile_access(load, TILE_LOADS)
        if access is not None and isinstance(zero, S.Evaluate) and llvm_intrin_name(zero.value) == TILE_ZERO and \
                isinstance(zero.value.args[1], E.IntImm) and zero.value.args[1].value == access[0]:
            return access[0], access
        return None
    access = tile_access(stmt, TILE_LOADS)
    return None if access is None else (access[0], access)


class _EffectsOf:
    """``tile_effects`` of a sequence's statements, each found once, when first asked for."""

    def __init__(self, seq):
        self.seq, self.found = seq, {}

    def __getitem__(self, n):
        if n not in self.found:
            self.found[n] = tile_effects(self.seq[n])
        return self.found[n]


class _Promoter(StmtExprMutator):
    def __init__(self, shapes):
        super().__init__()
        self.shapes = shapes

    def visit_for_(self, op):
        op = super().visit_for_(op)
        if op.kind not in (S.ForKind.SERIAL, S.ForKind.UNROLLED) or not isinstance(op.extent, E.IntImm) or \
                op.extent.value < 1:
            return op
        body = list(op.body.seq) if isinstance(op.body, S.SeqStmt) else [op.body]
        pairs = self._pairs(op, body)
        if not pairs:
            return op
        moved = {n for pair in pairs for n in pair}
        first = {op.loop_var: op.min}
        analyzer = Analyzer()
        before = [_simplify_conditions(substitute(body[n], first), analyzer) for n, _ in pairs]
        after = [body[m] for _, m in pairs]
        rest = [s for n, s in enumerate(body) if n not in moved]
        loop = op.replace(body=S.SeqStmt.flatten(*rest)) if rest else None
        return S.SeqStmt.flatten(*before, *([loop] if loop is not None else []), *after)

    def _pairs(self, loop, body) -> list[tuple[int, int]]:
        """(load, store) statement positions of the tiles that qualify."""
        effects = [tile_effects(s) for s in body]
        pairs, accesses = [], []
        for n, stmt in enumerate(body):
            load = _accumulator_load(stmt)
            if load is None:
                continue
            tile, (_, buffer, index, stride) = load
            if any(tile in e.written or tile in e.accumulated for e in effects[:n]) or uses_var(
                    index, lambda v: v is loop.loop_var) or not _zeroes_only_first(stmt, loop):
                continue
            stores = [m for m in range(n + 1, len(body))
                      if (a := tile_access(body[m], _STORE)) is not None and a[0] == tile]
            if len(stores) != 1:
                continue
            m = stores[0]
            _, store_buffer, store_index, store_stride = tile_access(body[m], _STORE)
            if store_buffer.data is not buffer.data or store_stride != stride or \
                    difference(store_index, index) != 0:
                continue
            later = effects[n + 1:]
            if any(tile in e.written for e in later) or any(tile in e.accumulated for e in effects[m + 1:]):
                continue
            pairs.append((n, m))
            accesses.append(load[1])
        if not pairs:
            return []
        # nothing else may touch the promoted accumulators' buffers, and the accumulators must not overlap
        moved = {n for pair in pairs for n in pair}
        promoted_buffers = {a[1].data for a in accesses}
        for n, stmt in enumerate(body):
            if n in moved:
                continue
            if effects[n].buffers & promoted_buffers:  # tile loads and stores count too (their address_of)
                return []
        return pairs if self._disjoint(accesses) else []

    def visit_seq_stmt_(self, op):
        seq = [self.visit_stmt(s) for s in op.seq]
        if any(tile_access(s, _STORE) is not None for s in seq):
            seq = self._drop_dead_stores(self._drop_reloads(seq))
        if len(seq) == len(op.seq) and all(a is b for a, b in zip(seq, op.seq)):
            return op
        return S.SeqStmt.flatten(*seq) if seq else S.Evaluate(0)

    def _overlap(self, a, b) -> bool | None:
        """Whether two tile accesses of one buffer share elements (None: unknown)."""
        cells_a, cells_b, shift = tile_cells(self.shapes, a), tile_cells(self.shapes, b), difference(a[2], b[2])
        if cells_a is None or cells_b is None or shift is None:
            return None
        return bool(np.intersect1d(cells_a + shift, cells_b).size)

    def _drop_reloads(self, seq) -> list:
        """Straight-line code (a loop the search unrolled): a tile load right after a store of the same tile to the
        same place, nothing in between writing the tile or those elements, is dropped: the tile still holds them."""
        out, effects = list(seq), _EffectsOf(seq)
        for m, stmt in enumerate(seq):
            load = tile_access(stmt, TILE_LOADS)
            if load is None:
                continue
            for q in range(m - 1, -1, -1):
                prev = out[q]
                if prev is None:
                    continue  # a load dropped already: the tile held those values
                store = tile_access(prev, _STORE)
                if store is not None and store[1].data is load[1].data:
                    if store[0] == load[0] and store[3] == load[3] and difference(store[2], load[2]) == 0:
                        out[m] = None
                        break
                    if self._overlap(store, load) is not False:
                        break
                    continue
                other_load = tile_access(prev, TILE_LOADS)
                if other_load is not None and other_load[1].data is load[1].data and other_load[0] != load[0]:
                    continue  # reads the buffer, writes another tile
                done = effects[q]
                if load[0] in done.written or load[0] in done.accumulated or load[1].data in done.buffers:
                    break
        return [s for s in out if s is not None]

    def _drop_dead_stores(self, seq) -> list:
        """A tile store that a later store of the same shape to the same place overwrites, nothing in between
        reading those elements, is dropped."""
        out, effects = list(seq), _EffectsOf(seq)
        for q, stmt in enumerate(seq):
            store = tile_access(stmt, _STORE)
            if store is None:
                continue
            for m in range(q + 1, len(seq)):
                later_store = tile_access(seq[m], _STORE)
                access = later_store or tile_access(seq[m], TILE_LOADS)
                if access is not None and access[1].data is store[1].data:
                    if later_store is not None and access[3] == store[3] and difference(access[2], store[2]) == 0 and \
                            self.shapes[access[0]] == self.shapes[store[0]]:
                        out[q] = None
                        break
                    if self._overlap(access, store) is not False:
                        break
                    continue
                if store[1].data in effects[m].buffers:
                    break
        return [s for s in out if s is not None]

    def _disjoint(self, accesses) -> bool:
        """Whether the promoted tiles' accesses cover disjoint elements of their buffers."""
        for n, a in enumerate(accesses):
            if any(b[1].data is a[1].data and self._overlap(a, b) is not False for b in accesses[:n]):
                return False
        return True


_MAX_CHECKED_ITERATIONS = 256


def _zeroes_only_first(stmt, loop) -> bool:
    """Whether a ``if c: tilezero else tileloadd`` load has ``c`` false in every iteration after the first (a plain
    load: True)."""
    if not isinstance(stmt, S.IfThenElse):
        return True
    if loop.extent.value > _MAX_CHECKED_ITERATIONS or not isinstance(loop.min, E.IntImm):
        return False
    analyzer = Analyzer()
    for iteration in range(1, loop.extent.value):
        value = E.IntImm(loop.loop_var.dtype, loop.min.value + iteration)
        condition = analyzer.simplify(substitute(stmt.condition, {loop.loop_var: value}))
        if not (isinstance(condition, E.IntImm) and condition.value == 0):
            return False
    return True


def _simplify_conditions(stmt, analyzer):
    if isinstance(stmt, S.IfThenElse):
        condition = analyzer.simplify(stmt.condition)
        if isinstance(condition, E.IntImm):
            return stmt.then_case if condition.value else stmt.else_case
        return stmt.replace(condition=condition)
    return stmt


def promote_tile_accumulators(func):
    """``func`` with AMX accumulator tiles kept in registers across loops around intrinsic calls (the
    PrimFunc-level form of ``PromoteTileAccumulators``).

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
    >>> w = [1, 0, 0x40004000400040, 0x40004000400040, 0, 0, 0x1010101010101010, 0]  # 8 tiles of 16 x 64 bytes
    >>> @T.prim_func
    ... def f(A: T.Buffer((4096,), "uint8"), B: T.Buffer((4096,), "int8"), C: T.Buffer((256,), "int32")):
    ...     cfg = T.allocate([8], "int64", "local")
    ...     cfg_1 = T.decl_buffer((8,), "int64", data=cfg, scope="local")
    ...     cfg_1[0] = T.int64(w[0])
    ...     cfg_1[1] = T.int64(w[1])
    ...     cfg_1[2] = T.int64(w[2])
    ...     cfg_1[3] = T.int64(w[3])
    ...     cfg_1[4] = T.int64(w[4])
    ...     cfg_1[5] = T.int64(w[5])
    ...     cfg_1[6] = T.int64(w[6])
    ...     cfg_1[7] = T.int64(w[7])
    ...     T.call_llvm_intrin("void", "llvm.x86.ldtilecfg", T.address_of(cfg_1[0]))
    ...     for k in range(4):
    ...         T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(0), T.address_of(C[0]), T.int64(64))
    ...         T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(1), T.address_of(A[k * 1024]), T.int64(64))
    ...         T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(2), T.address_of(B[k * 1024]), T.int64(64))
    ...         T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(0), T.int8(1), T.int8(2))
    ...         T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(0), T.address_of(C[0]), T.int64(64))
    >>> text = promote_tile_accumulators(f).script()
    >>> text.count("tileloadd64"), text.index("T.int8(0), T.address_of(C[0])") < text.index("for k")
    (3, True)
    """
    shapes = single_tile_shapes(func.body)
    return func if shapes is None else func.with_body(_Promoter(shapes).visit_stmt(func.body))


def PromoteTileAccumulators():  # noqa: N802 - pass names follow TVM's
    """Keep AMX accumulator tiles in registers across loops around intrinsic calls.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``, phase 3 of lowering).
    """
    return func_pass(promote_tile_accumulators, "tir.PromoteTileAccumulators")
