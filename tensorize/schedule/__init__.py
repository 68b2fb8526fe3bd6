"""The TensorIR schedule: primitives, handles and traces (``tvm.tir.Schedule`` / ``tvm.s_tir.Schedule``)."""
from .error import ScheduleError
from .rv import BlockRV, ExprRV, LoopRV, SBlockRV
from .schedule import Schedule
from .trace import Instruction, Trace, register_codec

__all__ = ["Schedule", "ScheduleError", "BlockRV", "SBlockRV", "LoopRV", "ExprRV", "Trace", "Instruction",
           "register_codec"]
