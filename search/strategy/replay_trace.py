"""Random search: sample the sketches with fresh decisions (MetaSchedule's ``ReplayTrace``).

The control of every study: no cost model, no mutation, just uniform sampling of the space.
"""
from __future__ import annotations

from .base import Candidate, SearchStrategy
from .registry import STRATEGIES

__all__ = ["ReplayTrace"]


@STRATEGIES.register("random")
class ReplayTrace(SearchStrategy):
    """Propose ``n`` fresh programs sampled from the sketches.

    Parameters
    ----------
    max_fail_count : int
        Sampling attempts per wanted candidate before a round gives up (the space may be small
        or mostly invalid).
    num_workers : int, optional
        Processes that replay the samples (``None``: the cores this process may use).
    """

    def __init__(self, max_fail_count: int = 20, num_workers: int | None = None):
        super().__init__()
        self.max_fail_count = max_fail_count
        self.num_workers = num_workers

    def generate_measure_candidates(self, n: int) -> list[Candidate]:
        return self._fresh_samples(n, max_attempts=max(n, 1) * self.max_fail_count, seen=set())
