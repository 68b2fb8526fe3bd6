"""Schedule primitives: split, fuse, reorder, merge, add_unit_loop."""
from __future__ import annotations

from ..base import ScheduleBase, primitive  # noqa: F401


class LoopTransform(ScheduleBase):
    """split, fuse, reorder, merge, add_unit_loop."""
