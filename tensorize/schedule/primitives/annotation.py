"""Schedule primitives: annotate, unannotate."""
from __future__ import annotations

from ..base import ScheduleBase, primitive  # noqa: F401


class Annotation(ScheduleBase):
    """annotate, unannotate."""
