"""``PartitionPaddedLoops``: a loop over tiles of a padded input is split into its border tiles and an
interior where the padding guards are known to hold, the interior free of them.

A convolution that reads its padding inline tests ``if_then_else(14 * w0 + 2 * w1 + kw >= 3 and
14 * w0 + 2 * w1 + kw < 227, x[...], 0)`` for every product. Over the inner loops' ranges (``w1`` in
0..6, ``kw`` in 0..6) both conjuncts hold for ``1 <= w0 < 15``, so::

    for w0 in range(16): body     ->     for w0 in range(0, 1): body
                                         for w0 in range(1, 15): body with both conjuncts True
                                         for w0 in range(15, 16): body

The last tile of a split that does not divide its extent is guarded the same way, by ``if`` statements
(``if r0 * 12 + r1 < 3136``, the 12-row register tiles of 3136 pixels): the loop over the tiles is split
into the 261 whole tiles, guard-free, and the last one, so the reduction inside tests nothing.

(TVM's ``LoopPartition`` does the same for conditions marked ``likely``.) Only serial loops are split,
only on conjuncts of ``if_then_else``/``Select``/``if`` conditions that are linear in the loop variable with
constant bounds over the inner loops' constant ranges, and only where both an interior and a border
exist and the copies stay under ``tir.PartitionPaddedLoops: {"max_statements": N}`` leaf statements
(default 256). ``PassContext(disabled_pass=["tir.PartitionPaddedLoops"])`` turns it off.
"""
from __future__ import annotations

from collections.abc import Mapping

from ..arith.expr_key import expr_key
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, post_order_visit
from ..ir.renew_defs import renew_defs
from .guard_conditions import ReplaceWithTrue, always_true_bound, conjuncts, guard_condition, has_guards, is_guard
from .pass_infra import PassContext, func_pass, register_config_option

__all__ = ["PartitionPaddedLoops", "partition_padded_loops"]

DEFAULT_MAX_STATEMENTS = 256
register_config_option("tir.PartitionPaddedLoops", (dict, Mapping))


def _guards_and_ranges(body):
    """The guard conjuncts under ``body`` and the constant inclusive ranges of the loops inside it."""
    guards, ranges, unknown, count = {}, {}, set(), [0]

    def visit(n):
        if isinstance(n, S.For):
            var = n.loop_var  # a variable may head several loops (the copies of an inner partition): their union
            if isinstance(n.min, E.IntImm) and isinstance(n.extent, E.IntImm) and n.extent.value > 0:
                lo, hi = n.min.value, n.min.value + n.extent.value - 1
                old = ranges.get(id(var))
                ranges[id(var)] = (var, lo, hi) if old is None else (var, min(old[1], lo), max(old[2], hi))
            else:
                unknown.add(id(var))
        elif isinstance(n, (S.BufferStore, S.Evaluate)):
            count[0] += 1
        elif is_guard(n, statements=True):
            for c in conjuncts(guard_condition(n)):
                guards.setdefault(expr_key(c), c)

    post_order_visit(body, visit)
    return guards, {v: (lo, hi) for key, (v, lo, hi) in ranges.items() if key not in unknown}, count[0]


class _Partitioner(StmtExprMutator):
    def __init__(self, max_statements: int):
        self.max_statements = max_statements

    def visit_for_(self, op):
        op = super().visit_for_(op)
        if (op.kind != S.ForKind.SERIAL or op.annotations or op.thread_binding is not None
                or not isinstance(op.min, E.IntImm) or not isinstance(op.extent, E.IntImm)):
            return op
        guards, ranges, statements = _guards_and_ranges(op.body)
        start, end = op.min.value, op.min.value + op.extent.value
        lo, hi, used = start, end, set()
        for key, cond in guards.items():
            bound = always_true_bound(cond, op.loop_var, ranges)
            if bound is None or not isinstance(bound[1], int):
                continue
            used.add(key)
            if bound[0] == "lo":
                lo = max(lo, bound[1])
            else:
                hi = min(hi, bound[1])
        if not used or lo >= hi:
            return op
        if (lo, hi) != (start, end) and 3 * statements > self.max_statements:
            return op
        parts = []
        if lo > start:
            parts.append(op.replace(extent=E.IntImm(op.extent.dtype, lo - start)))
        parts.append(op.replace(min=E.IntImm(op.min.dtype, lo), extent=E.IntImm(op.extent.dtype, hi - lo),
                                body=ReplaceWithTrue(used).visit_stmt(op.body)))
        if hi < end:
            parts.append(op.replace(min=E.IntImm(op.min.dtype, hi), extent=E.IntImm(op.extent.dtype, end - hi)))
        # each copy defines its own loop and inner variables: a function defines a variable once
        return S.SeqStmt.flatten([part if k == 0 else renew_defs(part) for k, part in enumerate(parts)])


def partition_padded_loops(func, max_statements: int | None = None):
    """``func`` with its padded-tile loops split into borders and a guard-free interior (module doc).

    Parameters
    ----------
    func : PrimFunc
        The function.
    max_statements : int, optional
        The most leaf statements a split loop's body may hold (default: the pass context's
        ``tir.PartitionPaddedLoops`` ``max_statements``, else 256).

    Returns
    -------
    PrimFunc
        The transformed function.

    Examples
    --------
    >>> from tensorize.script import tir as T
    >>> @T.prim_func
    ... def f(x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32")):
    ...     for i in range(16):
    ...         y[i] = T.if_then_else(i >= 1 and i < 15, x[i - 1] + x[i + 1], T.float32(0))
    >>> interior = partition_padded_loops(f).body.seq[1]
    >>> print(interior.min, interior.extent, interior.body.value)
    1 14 x[i - 1] + x[i + 1]
    """
    if not has_guards(func.body, statements=True):
        return func
    if max_statements is None:
        config = PassContext.current().config.get("tir.PartitionPaddedLoops", {}) or {}
        max_statements = int(config.get("max_statements", DEFAULT_MAX_STATEMENTS))
    return func.with_body(_Partitioner(max_statements).visit(func.body))


def PartitionPaddedLoops():  # noqa: N802 - TVM's pass naming
    """Split loops over padded tiles into borders and a guard-free interior.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass`` named ``tir.PartitionPaddedLoops``).
    """
    return func_pass(partition_padded_loops, "tir.PartitionPaddedLoops")
