"""Schedule primitives: parallel, vectorize, unroll, bind."""
from __future__ import annotations

from ..base import ScheduleBase, primitive  # noqa: F401


class ForKindPrimitives(ScheduleBase):
    """parallel, vectorize, unroll, bind."""
