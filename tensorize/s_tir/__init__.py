"""``tvm.s_tir``: where current Apache TVM keeps the block schedule (``tvm.s_tir.Schedule``)."""
from ..schedule import BlockRV, ExprRV, LoopRV, SBlockRV, Schedule, ScheduleError, Trace  # noqa: F401
from ..schedule.sref import ScheduleState, StmtSRef  # noqa: F401,E402
from . import schedule  # noqa: F401,E402  (tvm.s_tir.schedule.state, ...schedule.ScheduleError)
