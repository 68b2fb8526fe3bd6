"""Mutators: small changes of a candidate's decisions, for the evolutionary search (MetaSchedule's
``mutator``). ``default_mutators(ctx)`` gives MetaSchedule's CPU probabilities.

>>> {type(m).__name__: p for m, p in default_mutators(None).items()}   # doctest: +NORMALIZE_WHITESPACE
{'MutateTileSize': 0.9, 'MutateComputeLocation': 0.05, 'MutateUnroll': 0.03, 'MutateParallel': 0.02,
 'MutateSplitChoice': 0.05}
"""
from .base import MUTATORS, Mutator
from .mutate_compute_location import MutateComputeLocation
from .mutate_parallel import MutateParallel
from .mutate_split_choice import MutateSplitChoice
from .mutate_tile_size import MutateTileSize
from .mutate_unroll import MutateUnroll

__all__ = ["Mutator", "MUTATORS", "default_mutators", "MutateTileSize", "MutateComputeLocation", "MutateUnroll",
           "MutateParallel", "MutateSplitChoice"]


def default_mutators(ctx) -> dict[Mutator, float]:
    """The mutators with their probabilities (MetaSchedule's defaults; on a CPU target also ``MutateSplitChoice``
    for the row counts of the default schedules a graph's tasks are seeded with)."""
    from ..schedule_rule.gpu_limits import is_gpu_target

    mutators = {MutateTileSize(): 0.9, MutateComputeLocation(): 0.05, MutateUnroll(): 0.03, MutateParallel(): 0.02}
    if ctx is None or not is_gpu_target(ctx.target):
        mutators[MutateSplitChoice()] = 0.05
    return mutators
