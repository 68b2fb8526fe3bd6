"""``add_rfactor``: for reductions with little spatial parallelism, factor the reduction so its
outer part becomes a parallel spatial axis."""
from __future__ import annotations

from tensorize.schedule import ScheduleError

from .analysis import TILED, loop_kinds, needs_multi_level_tiling
from .base import RULES, ScheduleRule

__all__ = ["AddRFactor"]


@RULES.register("add_rfactor")
class AddRFactor(ScheduleRule):
    """Branch a reduction whose spatial iteration count is below ``ctx.num_threads * max_jobs_per_core``
    and whose reduction is longer: fuse the reduction loops, split them by a sampled tile and
    ``rfactor`` the outer part (the original schedule is kept as the other branch).

    Parameters
    ----------
    max_jobs_per_core : int
        The parallelism a block should offer per thread before rfactor is considered.
    max_innermost_factor : int
        Upper bound of the inner factor of the reduction split.
    """

    def __init__(self, max_jobs_per_core: int = 16, max_innermost_factor: int = 64):
        self.max_jobs_per_core = max_jobs_per_core
        self.max_innermost_factor = max_innermost_factor

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        blk = sch.get(block)
        if TILED in blk.annotations or not needs_multi_level_tiling(blk):
            return [sch]
        kinds = loop_kinds(sch, block)
        if "R" not in kinds or "O" in kinds:
            return [sch]
        func_name, index, realize = sch._block(block)
        extents = [int(f.extent) for f in index.loops_of(realize)]
        spatial = reduce_ = 1
        for kind, ext in zip(kinds, extents):
            if kind == "R":
                reduce_ *= ext
            else:
                spatial *= ext
        if spatial >= ctx.num_threads * self.max_jobs_per_core or reduce_ <= spatial:
            return [sch]
        branch = sch.copy()
        try:
            loops = branch.get_loops(block)
            s_loops = [lp for lp, k in zip(loops, kinds) if k != "R"]
            r_loops = [lp for lp, k in zip(loops, kinds) if k == "R"]
            branch.reorder(*s_loops, *r_loops)
            fused = branch.fuse(*r_loops) if len(r_loops) > 1 else r_loops[0]
            factors = branch.sample_perfect_tile(fused, n=2, max_innermost_factor=self.max_innermost_factor)
            outer, _inner = branch.split(fused, factors=factors)
            rf = branch.rfactor(outer, factor_axis=0)
            branch.annotate(rf, "meta_schedule.random_compute_producer", 1)
        except ScheduleError:
            return [sch]
        return [sch, branch]
