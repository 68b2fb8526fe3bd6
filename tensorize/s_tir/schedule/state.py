"""``tvm.s_tir.schedule.state``: the schedule state, its srefs and the cached flags of its blocks."""
from ...schedule.sref import ScheduleState, StmtSRef  # noqa: F401
from ...schedule.state_flags import CachedFlags  # noqa: F401


class ScheduleDebugMask:
    """TVM's debug-mask bits of a schedule (``debug_mask=ScheduleDebugMask.VERIFY_SREF_TREE``).

    They are accepted and kept on the schedule (``sch.debug_mask``); this implementation always keeps
    its state consistent, so no extra verification runs for them.

    >>> ScheduleDebugMask.VERIFY_SREF_TREE | ScheduleDebugMask.VERIFY_CACHED_FLAGS
    3
    """

    VERIFY_SREF_TREE = 1
    VERIFY_CACHED_FLAGS = 2
