"""``random_compute_location``: place a producer stage at a sampled loop of its consumer."""
from __future__ import annotations

from tensorize.schedule import ScheduleError

from .analysis import AUTO_TENSORIZE, TILED, is_output_block, is_root
from .base import RULES, ScheduleRule

__all__ = ["RandomComputeLocation"]


@RULES.register("random_compute_location")
class RandomComputeLocation(ScheduleRule):
    """For a block at the root's level that is neither tiled, tensorized nor an output (a padding
    stage, a layout copy, an rfactor stage): ``sample_compute_location`` and ``compute_at`` there
    (the sampled location may also be the root, i.e. stay, or inline)."""

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        if is_root(sch, block):
            return [sch]
        blk = sch.get(block)
        if TILED in blk.annotations or AUTO_TENSORIZE in blk.annotations or is_output_block(sch, block):
            return [sch]
        func_name, index, realize = sch._block(block)
        parent = index.parent_block_realize(realize)
        root = sch.mod[func_name].body
        if parent is not None and parent is not root:
            return [sch]
        if not sch.get_consumers(block) or not sch.get_loops(block):
            return [sch]
        try:
            loc = sch.sample_compute_location(block)
            sch.compute_at(block, loc)
        except ScheduleError:
            pass
        return [sch]
