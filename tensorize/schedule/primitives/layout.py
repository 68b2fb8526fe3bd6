"""Schedule primitives: transform_layout, transform_block_layout, pad_einsum."""
from __future__ import annotations

from ..base import ScheduleBase, primitive  # noqa: F401


class Layout(ScheduleBase):
    """transform_layout, transform_block_layout, pad_einsum."""
