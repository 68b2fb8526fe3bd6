"""Schedule primitives: blockize."""
from __future__ import annotations

from ..base import ScheduleBase, primitive  # noqa: F401


class Blockize(ScheduleBase):
    """blockize."""
