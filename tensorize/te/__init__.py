"""``tvm.te``: tensor expressions.

Describe a computation with ``placeholder`` and ``compute`` (reductions with ``reduce_axis`` and
``sum``/``max``/``min``/``comm_reducer``), then turn it into TensorIR with ``create_prim_func``
(or into a legacy loop program with ``create_schedule`` + ``tvm.lower``).

>>> from tensorize import te
>>> A = te.placeholder((8,), name="A")
>>> B = te.compute((8,), lambda *i: A(*i) + 1.0, name="B")
>>> func = te.create_prim_func([A, B])
>>> func.body.block.body.body.block.name_hint
'B'
"""
from ..ir.expr import IterVar, Range
from ..ir.op import *  # noqa: F401,F403  (exp, log, sqrt, tanh, if_then_else, max_value, min_value, ...)
from ..ir.op import const, if_then_else, max_value, min_value, all, any  # noqa: A004
from .create_prim_func import create_prim_func
from .legacy import lower_te_schedule
from .reduction import Reducer, comm_reducer, max, min, sum  # noqa: A004 - TVM's names
from .schedule import Schedule, Stage, create_schedule
from .tensor import (ComputeOp, Operation, PlaceholderOp, Tensor, TensorSlice, compute, placeholder, reduce_axis,
                     size_var, thread_axis, var)

__all__ = ["IterVar", "Range", "create_prim_func", "lower_te_schedule", "Reducer", "comm_reducer", "max", "min",
           "sum", "Schedule", "Stage", "create_schedule", "ComputeOp", "Operation", "PlaceholderOp", "Tensor",
           "TensorSlice", "compute", "placeholder", "reduce_axis", "size_var", "thread_axis", "var", "const",
           "if_then_else", "max_value", "min_value", "all", "any"]
