"""``tvm.s_tir.schedule.state``: the schedule state, its srefs and the cached flags of its blocks."""
from ...schedule.sref import ScheduleState, StmtSRef  # noqa: F401
from ...schedule.state_flags import CachedFlags  # noqa: F401
