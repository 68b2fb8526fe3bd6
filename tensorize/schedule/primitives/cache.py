"""Schedule primitives: cache_read, cache_write, reindex, set_scope, storage_align."""
from __future__ import annotations

from ..base import ScheduleBase, primitive  # noqa: F401


class Cache(ScheduleBase):
    """cache_read, cache_write, reindex, set_scope, storage_align."""
