"""``UnrollLoop``: expand ``T.unroll`` loops of constant extent, and small loops under a
``pragma_auto_unroll_max_step`` annotation.

Explicit expansion is capped: a ``T.unroll`` nest that would expand to more than
``explicit_max_steps`` statements (``PassContext(config={"tir.UnrollLoop": {"explicit_max_steps": N}})``,
default 4096) stays a serial loop that LLVM's own unroll heuristics handle. Expanding tens of
thousands of statements (or asking LLVM for a full unroll of them) made O3 run for minutes.

For example::

    for k in T.unroll(2): C[k] = A[k]      becomes      C[0] = A[0]; C[1] = A[1]
"""
from __future__ import annotations

import logging

from ..ir import stmt as S
from ..ir.expr import IntImm
from ..ir.functor import StmtExprMutator, StmtExprVisitor, substitute
from ..ir.renew_defs import renew_defs
from .pass_infra import PassContext, func_pass

AUTO_UNROLL_KEY = "pragma_auto_unroll_max_step"
DEFAULT_EXPLICIT_MAX_STEPS = 4096
log = logging.getLogger(__name__)


def _leaf_count(stmt) -> int:
    """How many leaf statements ``stmt`` runs (loops multiply), the step count auto-unrolling compares."""
    counter = [0]

    class Count(StmtExprVisitor):
        def visit_for_(self, op):
            before = counter[0]
            self.visit_stmt(op.body)
            extent = op.extent.value if isinstance(op.extent, IntImm) else 1 << 30
            counter[0] = before + (counter[0] - before) * extent

        def visit_buffer_store_(self, op):
            counter[0] += 1

        def visit_evaluate_(self, op):
            counter[0] += 1

    Count().visit_stmt(stmt)
    return counter[0]


def unroll(loop: S.For) -> S.Stmt:
    """The body of ``loop`` repeated once per iteration with the loop variable replaced by its value; every copy
    after the first defines fresh variables for the loops and lets inside it.

    Parameters
    ----------
    loop : For
        The loop (constant extent).

    Returns
    -------
    Stmt
        The unrolled statements.
    """
    start, extent = loop.min, loop.extent.value
    copies = [substitute(loop.body, {loop.loop_var: start + k}) for k in range(extent)]
    return S.SeqStmt.flatten([c if k == 0 else renew_defs(c) for k, c in enumerate(copies)])


class _Unroller(StmtExprMutator):
    def __init__(self, auto_max_step: int, auto_max_extent: int, explicit_max_steps: int):
        self.max_step = [auto_max_step]
        self.auto_max_extent = auto_max_extent
        self.explicit_max_steps = explicit_max_steps

    def visit_for_(self, op):
        step = op.annotations.get(AUTO_UNROLL_KEY)
        if step is not None:
            self.max_step.append(int(step))
        try:
            op = super().visit_for_(op)
        finally:
            if step is not None:
                self.max_step.pop()
        if not isinstance(op.extent, IntImm):
            return op.replace(kind=S.ForKind.SERIAL) if op.kind == S.ForKind.UNROLLED else op
        if op.kind == S.ForKind.UNROLLED:
            steps = _leaf_count(op)
            if steps > self.explicit_max_steps:
                log.info("unroll of loop %s would expand to %d statements (limit %d): kept as a serial loop",
                         op.loop_var.name, steps, self.explicit_max_steps)
                return op.replace(kind=S.ForKind.SERIAL)
            return unroll(op)
        if (op.kind == S.ForKind.SERIAL and self.max_step[-1] > 0 and step is None
                and _leaf_count(op) <= self.max_step[-1] and op.extent.value <= max(self.auto_max_extent, 1)):
            return unroll(op)
        return op


def unroll_loop(func):
    """``func`` with ``T.unroll`` loops and small auto-unroll loops unrolled (the PrimFunc-level form of ``UnrollLoop``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    config = PassContext.current().config.get("tir.UnrollLoop", {}) or {}
    max_step = int(config.get("auto_max_step", 0))
    max_extent = int(config.get("auto_max_extent", 1 << 30))
    explicit_max = int(config.get("explicit_max_steps", DEFAULT_EXPLICIT_MAX_STEPS))
    return func.with_body(_Unroller(max_step, max_extent, explicit_max).visit(func.body))


def UnrollLoop():  # noqa: N802 - TVM's pass name
    """Unroll ``T.unroll`` loops and small loops under ``pragma_auto_unroll_max_step``.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(unroll_loop, "tir.UnrollLoop")
