"""``parallel_vectorize_unroll``: annotate the root block with the parallel, vector and unroll budgets
that ``rewrite_parallel_vectorize_unroll`` turns into loop kinds."""
from __future__ import annotations

from .analysis import is_root
from .base import RULES, ScheduleRule

__all__ = ["ParallelVectorizeUnroll", "PARALLEL", "VECTORIZE", "UNROLL"]

PARALLEL = "meta_schedule.parallel"
VECTORIZE = "meta_schedule.vectorize"
UNROLL = "meta_schedule.unroll_explicit"


@RULES.register("parallel_vectorize_unroll")
class ParallelVectorizeUnroll(ScheduleRule):
    """On the root block: ``meta_schedule.parallel`` = ``num_threads * max_jobs_per_core``,
    ``meta_schedule.vectorize`` = ``vector_widths * ctx.vector_lanes()``, and
    ``meta_schedule.unroll_explicit`` = a ``sample_categorical`` over ``unroll_max_steps``.

    Parameters
    ----------
    max_jobs_per_core : int
        Parallel iterations per thread (MetaSchedule: 16).
    vector_widths : int
        How many vector registers wide the innermost vectorized loop may be.
    unroll_max_steps : sequence of int
        The unroll depths to sample from (uniformly).
    """

    def __init__(self, max_jobs_per_core: int = 16, vector_widths: int = 8,
                 unroll_max_steps=(0, 16, 64, 512)):
        self.max_jobs_per_core = max_jobs_per_core
        self.vector_widths = vector_widths
        self.unroll_max_steps = [int(s) for s in unroll_max_steps]

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        if not is_root(sch, block):
            return [sch]
        if self.max_jobs_per_core > 0:
            sch.annotate(block, PARALLEL, ctx.num_threads * self.max_jobs_per_core)
        if self.vector_widths > 0:
            sch.annotate(block, VECTORIZE, self.vector_widths * ctx.vector_lanes("float32"))
        if self.unroll_max_steps:
            n = len(self.unroll_max_steps)
            step = sch.sample_categorical(self.unroll_max_steps, [1.0 / n] * n)
            sch.annotate(block, UNROLL, step)
        return [sch]
