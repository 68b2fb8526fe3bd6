"""Schedule primitives: decompose_reduction, rfactor."""
from __future__ import annotations

from ..base import ScheduleBase, primitive  # noqa: F401


class Reduction(ScheduleBase):
    """decompose_reduction, rfactor."""
