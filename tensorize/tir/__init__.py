"""``tvm.tir``: the TVM names of TensorIR nodes and helpers, re-exported from ``tensorize.ir`` and the
other core packages. No logic lives here."""
from ..ir.buffer import Buffer, decl_buffer
from ..ir.expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, Broadcast, BufferLoad, Call, CallEffectKind, Cast, Div, FloatImm,
    FloorDiv, FloorMod, IntImm, IterVar, Let, Max, Min, Mod, Mul, Not, Op, Or, PrimExpr, ProducerLoad, Ramp,
    Select, Shuffle, SizeVar, StringImm, Sub, Var, PointerType, truncdiv, truncmod, floordiv, floormod, ceildiv, cast,
)
from ..ir.function import PrimFunc
from ..ir.op import *  # noqa: F401,F403  (exp, sqrt, if_then_else, call_llvm_pure_intrin, ...)
from ..ir.op import const, min, max, all, any, abs, pow  # noqa: A004
from ..ir.stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer, Evaluate, For,
    ForKind, IfThenElse, LetStmt, MatchBufferRegion, SBlock, SBlockRealize, SeqStmt, Stmt, While,
)
from ..ir.expr import Range
from ..ir.tensor_intrin import TensorIntrin
from . import stmt_functor  # noqa: F401
from . import analysis  # noqa: F401
from . import transform  # noqa: F401


def __getattr__(name):
    # Schedule lives in tensorize.schedule; import lazily so tir stays importable on its own.
    if name in ("Schedule", "ScheduleError", "BlockRV", "LoopRV", "SBlockRV", "Trace", "Instruction", "ExprRV"):
        from .. import schedule

        return getattr(schedule, name)
    if name == "schedule":
        from .. import schedule

        return schedule
    if name == "Expr":  # current Apache TVM's name for PrimExpr in annotations
        return PrimExpr
    if name == "IndexMap":
        from ..arith.index_map import IndexMap

        return IndexMap
    raise AttributeError(f"module 'tensorize.tir' has no attribute {name!r}")
