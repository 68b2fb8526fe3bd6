"""``tvm.s_tir.schedule``: the block schedule's names where current Apache TVM keeps them."""
from ...schedule import BlockRV, ExprRV, Instruction, LoopRV, SBlockRV, Schedule, ScheduleError, Trace  # noqa: F401
from ...schedule.trace import InstructionKind  # noqa: F401
from . import schedule, state  # noqa: F401,E402  (tvm.s_tir.schedule.schedule.ScheduleError, ...state.ScheduleDebugMask)
