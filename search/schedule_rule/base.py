"""The schedule rule interface and its registry.

A rule looks at one block of a schedule and returns the schedules it branches into (the design
space is every combination the rules produce, block by block). A rule that does not apply returns
``[sch]`` unchanged.
"""
from __future__ import annotations

from tensorize.schedule import Schedule
from tensorize.schedule.rv import BlockRV

from ..registry import Registry

__all__ = ["ScheduleRule", "RULES"]

RULES = Registry("schedule rule")


class ScheduleRule:
    """One kind of transformation of a block; subclasses implement ``apply``."""

    registered_name = "?"

    def apply(self, sch: Schedule, block: BlockRV, ctx) -> list[Schedule]:
        """The schedules ``sch`` branches into for ``block`` (``[sch]`` when the rule does not apply).

        Parameters
        ----------
        sch : Schedule
            The schedule so far; a rule may modify it in place and return it.
        block : BlockRV
            A handle of the block in ``sch``.
        ctx : TuneContext
            The task (target, vector lanes, threads, intrinsics).
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
