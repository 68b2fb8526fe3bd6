"""``mutate_compute_location``: another valid location of a ``sample_compute_location``."""
from __future__ import annotations

from tensorize.schedule import Schedule, ScheduleError
from tensorize.schedule.trace import Instruction, Trace

from .base import MUTATORS, Mutator, replace_instruction

__all__ = ["MutateComputeLocation"]


@MUTATORS.register("mutate_compute_location")
class MutateComputeLocation(Mutator):
    """Pick a ``sample_compute_location``; replay the trace up to it to list the block's valid
    locations there, and choose another one."""

    def apply(self, trace, ctx, rng):
        """See ``Mutator.apply``: a copy of ``trace`` with one decision of this kind changed, or None."""
        sites = [i for i, inst in enumerate(trace.insts) if inst.kind == "sample_compute_location"]
        while sites:
            pos = sites.pop(rng.randrange(len(sites)))
            inst = trace.insts[pos]
            sch = Schedule(ctx.mod)
            prefix = Trace(trace.insts[:pos])
            try:
                prefix.apply_to_schedule(sch)
                block = _bound(prefix, sch, inst.args["block"])
                candidates = sch._compute_location_candidates(block)
            except (ScheduleError, ValueError):
                continue
            choices = [c for c in candidates if c != inst.decision]
            if choices:
                new = choices[rng.randrange(len(choices))]
                return replace_instruction(trace, inst, Instruction(inst.kind, dict(inst.args), inst.outputs, new))
        return None


def _bound(prefix: Trace, sch, rv):
    """The handle in ``sch`` that the prefix's replay bound to the trace's ``rv``."""
    from tensorize.schedule.rv import BlockRV

    for inst, new in zip(prefix.insts, sch.trace.insts):
        for old_rv, new_rv in zip(inst.outputs, new.outputs):
            if old_rv is rv:
                return new_rv
    if isinstance(rv, BlockRV):
        return rv
    raise ValueError("the block handle of the sample_compute_location is not produced by the trace")
