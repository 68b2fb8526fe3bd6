"""``mutate_parallel``: another parallel budget on the root block."""
from __future__ import annotations

from tensorize.schedule.trace import Instruction

from ..schedule_rule.parallel_vectorize_unroll import PARALLEL
from .base import MUTATORS, Mutator, replace_instruction

__all__ = ["MutateParallel"]


@MUTATORS.register("mutate_parallel")
class MutateParallel(Mutator):
    """Change the value of the ``meta_schedule.parallel`` annotation (how many outer iterations
    ``rewrite_parallel_vectorize_unroll`` may fuse into the parallel loop) to another multiple of
    ``ctx.num_threads``: ``num_threads * j`` for ``j`` in ``jobs_per_core``.

    Parameters
    ----------
    jobs_per_core : sequence of int
        The parallel iterations per thread to choose from.
    """

    def __init__(self, jobs_per_core=(1, 2, 4, 8, 16, 32, 64)):
        self.jobs_per_core = tuple(int(j) for j in jobs_per_core)

    def apply(self, trace, ctx, rng):
        """See ``Mutator.apply``: a copy of ``trace`` with one decision of this kind changed, or None."""
        anns = [inst for inst in trace.insts if inst.kind == "annotate" and inst.args.get("ann_key") == PARALLEL]
        if not anns:
            return None
        inst = anns[rng.randrange(len(anns))]
        threads = ctx.num_threads if ctx is not None else 1
        old = int(inst.args["ann_val"])
        choices = [threads * j for j in self.jobs_per_core if threads * j != old]
        if not choices:
            return None
        args = dict(inst.args)
        args["ann_val"] = choices[rng.randrange(len(choices))]
        return replace_instruction(trace, inst, Instruction(inst.kind, args, inst.outputs, inst.decision))
