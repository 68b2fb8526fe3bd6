"""Schedule primitives: compute_at, reverse_compute_at, sample_compute_location."""
from __future__ import annotations

from ..base import ScheduleBase, primitive  # noqa: F401


class ComputeAt(ScheduleBase):
    """compute_at, reverse_compute_at, sample_compute_location."""
