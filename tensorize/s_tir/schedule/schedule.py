"""``tvm.s_tir.schedule.schedule``: the Schedule class and its error."""
from ...schedule import BlockRV, ExprRV, LoopRV, SBlockRV, Schedule, ScheduleError  # noqa: F401
