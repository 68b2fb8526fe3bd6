"""``auto_inline``: inline elementwise and padding producers into their consumers (MetaSchedule's
AutoInline with its CPU settings: into consumers, not into producers)."""
from __future__ import annotations

from tensorize.ir.stmt import BufferStore
from tensorize.schedule import ScheduleError

from .analysis import AUTO_TENSORIZE, TILED, has_if_then_else, is_output_block, is_root, is_spatial
from .base import RULES, ScheduleRule

__all__ = ["AutoInline"]


@RULES.register("auto_inline")
class AutoInline(ScheduleRule):
    """``compute_inline`` a spatial single-store block that writes no function output (bias add,
    padding, cast); with ``into_producer``, also ``reverse_compute_inline`` an output block into its
    spatial producer.

    Parameters
    ----------
    into_consumer, into_producer : bool
        Which direction to inline in.
    disallow_if_then_else : bool
        Keep blocks with ``if_then_else`` (padding) as separate stages.

    Padding feeding a reduction (a convolution) stays a stage of its own that
    ``random_compute_location`` places (its condition would otherwise be evaluated at every multiply-add);
    with ``pad_branch`` the rule also returns a second sketch where it is inlined, which wins where the
    condition does not depend on the vectorised axis (a depthwise convolution's channels: one scalar
    branch per output pixel, contiguous vector loads).

    Nothing is inlined into a consumer marked for a tensor intrinsic (``meta_schedule.auto_tensorize``): the
    intrinsic's description reads buffers, and an inlined producer would make the block read an expression
    that no intrinsic matches, so every sample of that sketch would fail at post-processing.
    """

    def __init__(self, into_consumer: bool = True, into_producer: bool = False,
                 disallow_if_then_else: bool = False, pad_branch: bool = False):
        self.into_consumer = into_consumer
        self.into_producer = into_producer
        self.disallow_if_then_else = disallow_if_then_else
        self.pad_branch = pad_branch

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        blk = sch.get(block)
        if is_root(sch, block) or TILED in blk.annotations or not isinstance(blk.body, BufferStore):
            return [sch]
        if not is_spatial(blk) or (self.disallow_if_then_else and has_if_then_else(blk)):
            return [sch]
        output = is_output_block(sch, block)
        consumers = sch.get_consumers(block)
        if any(AUTO_TENSORIZE in sch.get(c).annotations for c in consumers):
            return [sch]
        if has_if_then_else(blk) and any(not is_spatial(sch.get(c)) for c in consumers):
            if not self.pad_branch or output or not self.into_consumer:
                return [sch]
            branch = sch.copy()
            try:
                branch.compute_inline(block)
            except ScheduleError:
                return [sch]
            return [sch, branch]
        try:
            if self.into_consumer and not output and consumers:
                sch.compute_inline(block)
            elif self.into_producer and output and len(sch.get_producers(block)) == 1 \
                    and is_spatial(sch.get(sch.get_producers(block)[0])):
                sch.reverse_compute_inline(block)
        except ScheduleError:
            pass  # not inlinable (e.g. several writers): the block stays a stage of its own
        return [sch]
