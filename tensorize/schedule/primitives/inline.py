"""Schedule primitives: compute_inline, reverse_compute_inline."""
from __future__ import annotations

from ..base import ScheduleBase, primitive  # noqa: F401


class Inline(ScheduleBase):
    """compute_inline, reverse_compute_inline."""
