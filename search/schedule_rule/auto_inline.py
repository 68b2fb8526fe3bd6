"""``auto_inline``: inline elementwise and padding producers into their consumers (MetaSchedule's
AutoInline with its CPU settings: into consumers, not into producers)."""
from __future__ import annotations

from tensorize.ir.stmt import BufferStore
from tensorize.schedule import ScheduleError

from .analysis import TILED, has_if_then_else, is_output_block, is_root, is_spatial
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

    Padding is never inlined into a reduction (a convolution): its condition would be evaluated
    at every multiply-add of the inner loop. It stays a stage of its own that
    ``random_compute_location`` places, or goes into a layout copy (a spatial consumer).
    """

    def __init__(self, into_consumer: bool = True, into_producer: bool = False,
                 disallow_if_then_else: bool = False):
        self.into_consumer = into_consumer
        self.into_producer = into_producer
        self.disallow_if_then_else = disallow_if_then_else

    def apply(self, sch, block, ctx):
        blk = sch.get(block)
        if is_root(sch, block) or TILED in blk.annotations or not isinstance(blk.body, BufferStore):
            return [sch]
        if not is_spatial(blk) or (self.disallow_if_then_else and has_if_then_else(blk)):
            return [sch]
        output = is_output_block(sch, block)
        consumers = sch.get_consumers(block)
        if has_if_then_else(blk) and any(not is_spatial(sch.get(c)) for c in consumers):
            return [sch]
        try:
            if self.into_consumer and not output and consumers:
                sch.compute_inline(block)
            elif self.into_producer and output and len(sch.get_producers(block)) == 1 \
                    and is_spatial(sch.get(sch.get_producers(block)[0])):
                sch.reverse_compute_inline(block)
        except ScheduleError:
            pass  # not inlinable (e.g. several writers): the block stays a stage of its own
        return [sch]
