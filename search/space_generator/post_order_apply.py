"""``PostOrderApply``: the design space of a module as the schedules the rules branch into, block by
block (consumers before producers, the root block last)."""
from __future__ import annotations

import logging

from tensorize.ir.stmt import BlockRealize
from tensorize.schedule import Schedule
from tensorize.schedule.analysis import block_realizes_under

from ..schedule_rule import default_rules

logger = logging.getLogger(__name__)

__all__ = ["PostOrderApply", "blocks_post_order"]


def blocks_post_order(func) -> list[str]:
    """Names of the blocks of ``func`` (nested included), each after the blocks inside and after it:
    the reverse of program order, children before their parent."""
    out: list[str] = []

    def walk(realize: BlockRealize):
        out.append(realize.block.name_hint)
        for child in block_realizes_under(realize.block.body):
            walk(child)

    body = func.body
    roots = [body] if isinstance(body, BlockRealize) else block_realizes_under(body)
    for r in roots:
        walk(r)
    return out[::-1]


def _exists(sch, block) -> bool:
    return sch._block_name(block) in sch._index(block.func_name).blocks


class PostOrderApply:
    """Apply schedule rules to every block of every function, consumers first.

    Parameters
    ----------
    rules : list of ScheduleRule, optional
        Default: ``default_rules(ctx)``.
    seed : int, optional
        Seed of the sketches' random state (default: drawn from ``ctx.rng``).

    Examples
    --------
    >>> from search.context import TuneContext
    >>> from tensorize.script import tir as T
    >>> @T.prim_func
    ... def mm(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    ...     for i, j, k in T.grid(64, 64, 64):
    ...         with T.block("C"):
    ...             vi, vj, vk = T.axis.remap("SSR", [i, j, k])
    ...             with T.init():
    ...                 C[vi, vj] = T.float32(0)
    ...             C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    >>> ctx = TuneContext.create(mm, "llvm -mcpu=haswell", seed=0, intrinsics=())   # plain code only
    >>> len(PostOrderApply().generate_design_space(ctx))    # no cache, cache at level 1, cache at level 2
    3
    """

    def __init__(self, rules=None, seed: int | None = None):
        self.rules = rules
        self.seed = seed

    def generate_design_space(self, ctx) -> list[Schedule]:
        """The sketches of ``ctx.mod``: schedules whose traces hold the sampling instructions."""
        rules = self.rules if self.rules is not None else default_rules(ctx)
        seed = self.seed if self.seed is not None else ctx.rng.randrange(1 << 31)
        states = [Schedule(ctx.mod, seed=seed)]
        for func_name in ctx.mod.function_names():
            func = ctx.mod[func_name]
            if not isinstance(func.body, BlockRealize):
                continue
            for name in blocks_post_order(func):
                # (schedule, handle of the block in it): one get_block per schedule; rule outputs
                # derive from their input, so the handle stays valid in them
                pairs = [(sch, sch.get_block(name, func_name) if name in sch._index(func_name).blocks else None)
                         for sch in states]
                for rule in rules:
                    pairs = [(out, block) for sch, block in pairs
                             for out in ([sch] if block is None or not _exists(sch, block)
                                         else rule.apply(sch, block, ctx))]
                states = [sch for sch, _ in pairs]
        logger.debug("design space of %d sketches", len(states))
        return states
