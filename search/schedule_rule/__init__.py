"""Schedule rules: what the design space is made of (MetaSchedule's ``schedule_rule``).

Each rule transforms one block and returns the branch schedules; ``PostOrderApply``
(``search.space_generator``) applies the rules block by block. ``default_rules(ctx)`` is the CPU set:
auto_inline, add_rfactor, multi_level_tiling_with_intrin (when the target has intrinsics),
multi_level_tiling, parallel_vectorize_unroll, random_compute_location.

>>> [type(r).__name__ for r in default_rules(None)]                        # doctest: +NORMALIZE_WHITESPACE
['AutoInline', 'AddRFactor', 'MultiLevelTiling', 'ParallelVectorizeUnroll', 'RandomComputeLocation']
"""
from .add_rfactor import AddRFactor
from .auto_inline import AutoInline
from .base import RULES, ScheduleRule
from .multi_level_tiling import MultiLevelTiling
from .multi_level_tiling_with_intrin import LAYOUT_REWRITE_PREPROC, MultiLevelTilingWithIntrin
from .parallel_vectorize_unroll import PARALLEL, UNROLL, VECTORIZE, ParallelVectorizeUnroll
from .random_compute_location import RandomComputeLocation
from .gpu_limits import is_gpu_target
from .gpu_default import default_gpu_rules

__all__ = ["ScheduleRule", "RULES", "default_rules", "AutoInline", "AddRFactor", "MultiLevelTiling",
           "MultiLevelTilingWithIntrin", "ParallelVectorizeUnroll", "RandomComputeLocation",
           "LAYOUT_REWRITE_PREPROC", "PARALLEL", "VECTORIZE", "UNROLL"]


def default_rules(ctx) -> list[ScheduleRule]:
    """MetaSchedule's CPU rules for ``ctx`` (a TuneContext; ``None``: a target without intrinsics); a CUDA
    target gets ``default_gpu_rules(ctx)``."""
    if ctx is not None and is_gpu_target(ctx.target):
        return default_gpu_rules(ctx)
    rules: list[ScheduleRule] = [AutoInline(pad_branch=True), AddRFactor()]
    if ctx is not None and ctx.intrinsics:
        rules.append(MultiLevelTilingWithIntrin())
    rules += [MultiLevelTiling(), ParallelVectorizeUnroll(), RandomComputeLocation()]
    return rules
