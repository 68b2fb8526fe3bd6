"""``auto_bind``: bind the loops of a block no tiling rule took to ``blockIdx.x`` x ``threadIdx.x``."""
from __future__ import annotations

from tensorize.ir.stmt import ForKind

from .analysis import TILED, is_root, loop_kinds
from .base import RULES, ScheduleRule

__all__ = ["AutoBind", "bind_block"]


def bind_block(sch, block, threads) -> bool:
    """Fuse the block's leading spatial loops, split by ``threads`` and bind the two loops.

    Parameters
    ----------
    sch : Schedule
        The schedule.
    block : BlockRV
        A block whose loops are not bound yet.
    threads : int or ExprRV
        Threads per CUDA block.

    Returns
    -------
    bool
        False when the block has no leading spatial loop (left as it is).
    """
    loops = sch.get_loops(block)
    kinds = loop_kinds(sch, block)
    n = 0
    while n < len(loops) and kinds[n] in ("S", "U"):
        n += 1
    if n == 0:
        return False
    fused = sch.fuse(*loops[:n]) if n > 1 else loops[0]
    bx, tx = sch.split(fused, [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return True


def is_bound(sch, block) -> bool:
    """Whether a loop above ``block`` is bound to a thread axis."""
    return any(sch.get(lp).kind == ForKind.THREAD_BINDING for lp in sch.get_loops(block))


@RULES.register("auto_bind")
class AutoBind(ScheduleRule):
    """Fuse the outer spatial loops of an untiled, unbound block and bind them to blocks x threads
    (threads per block sampled from ``thread_extents``).

    Parameters
    ----------
    thread_extents : sequence of int
        Candidate threads per block.
    """

    def __init__(self, thread_extents=(32, 64, 128, 256, 512, 1024)):
        self.thread_extents = tuple(thread_extents)

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        blk = sch.get(block)
        if is_root(sch, block) or TILED in blk.annotations or not sch.get_loops(block) or is_bound(sch, block):
            return [sch]
        extents = list(self.thread_extents)
        threads = sch.sample_categorical(extents, [1.0 / len(extents)] * len(extents))
        bind_block(sch, block, threads)
        return [sch]
