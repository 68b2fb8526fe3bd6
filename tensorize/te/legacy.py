"""Lowering of a legacy ``te.Schedule`` to a PrimFunc of plain loops (no blocks).

This is what ``tvm.lower(s, [a, b, c])`` gives for a default TE schedule before the driver's
simplification and flattening passes: one loop nest per compute op, loops named after the op's
axes, reductions as an init store followed by a loop over the reduction axes, intermediate
tensors allocated around the function body, and the attributes
``{"from_legacy_te_schedule": T.bool(True), "tir.noalias": T.bool(True)}``.

>>> from tensorize import te
>>> a = te.placeholder((128,), name="a")
>>> b = te.placeholder((128,), name="b")
>>> c = te.compute((128,), lambda i: a[i] + b[i], name="c")
>>> mod = lower_te_schedule(te.create_schedule(c.op), [a, b, c])
>>> loop = mod["main"].body
>>> loop.loop_var.name, loop.body.buffer.name
('i', 'c')
"""
from __future__ import annotations

from ..errors import TVMTypeError, TVMValueError

from typing import Any, Sequence

from ..ir.buffer import Buffer
from ..ir.expr import IntImm, Reduce, Var
from ..ir.function import IRModule, PrimFunc
from ..ir.stmt import Allocate, BufferStore, DeclBuffer, For, ForKind, IfThenElse, SeqStmt, Stmt
from .create_prim_func import _Context, _reduction_stmts, _simplify
from .schedule import Schedule
from .tensor import ComputeOp, PlaceholderOp, Tensor


def _loop_vars(axes, remap: dict) -> list:
    """Fresh loop variables named after ``axes``; ``remap`` maps each axis variable to its loop variable."""
    loops = []
    for iv in axes:
        loop_var = iv.var.copy_with_name(iv.var.name)
        remap[iv.var] = loop_var
        loops.append((loop_var, iv.dom))
    return loops


def _wrap(loops, body: Stmt) -> Stmt:
    for loop_var, dom in reversed(loops):
        body = For(loop_var, _simplify(dom.min), _simplify(dom.extent), ForKind.SERIAL, body)
    return body


def _lower_compute(op: ComputeOp, ctx: _Context) -> Stmt:
    remap: dict = {}
    spatial = _loop_vars(op.axis, remap)
    buffers = [ctx.buffers[op.output(i)] for i in range(op.num_outputs)]
    indices = [v for v, _ in spatial]
    if not isinstance(op.body[0], Reduce):
        stores = [BufferStore(b, _simplify(ctx.lower(e, remap)), indices) for b, e in zip(buffers, op.body)]
        return _wrap(spatial, SeqStmt.flatten(stores))
    reduce_loops = _loop_vars(op.reduce_axis, remap)
    reduce = op.body[0]
    # The legacy form guards the update with an `if` rather than an if_then_else on the value.
    plain = Reduce(reduce.combiner, reduce.source, reduce.axis, True, reduce.value_index, reduce.init)
    init, update = _reduction_stmts(plain, buffers, indices, remap, ctx)
    condition = _simplify(ctx.lower(reduce.condition, remap))
    if not (isinstance(condition, IntImm) and condition.value):
        update = IfThenElse(condition, update)
    return _wrap(spatial, SeqStmt.flatten([init, _wrap(reduce_loops, update)]))


def lower_te_schedule(sch: Schedule, args: Sequence[Any], name: str = "main") -> IRModule:
    """The module ``{name: PrimFunc}`` computing the default schedule ``sch`` with parameters ``args``
    (tensors in order; scalar ``te.var``s become scalar parameters).

    Parameters
    ----------
    sch : te.Schedule
        The default schedule.
    args : list of Tensor or Var
        The parameters, in order.
    name : str
        The function's name.

    Returns
    -------
    IRModule
        The module.
    """
    if not isinstance(sch, Schedule):
        raise TVMTypeError(f"lower_te_schedule takes a te.Schedule (te.create_schedule(C.op)), got {type(sch).__name__}")
    args = list(args)
    ctx = _Context(args)
    stmts: list[Stmt] = []
    for op in sch.ops:
        if isinstance(op, PlaceholderOp):
            if not ctx.is_arg(op.output(0)):
                raise TVMValueError(f"lower: placeholder {op.name!r} is read by the schedule but is not in the argument "
                                 f"list; add it to the list passed to tvm.lower")
            ctx.declare(op.output(0))
        elif isinstance(op, ComputeOp):
            for i in range(op.num_outputs):
                ctx.declare(op.output(i))
            stmts.append(_lower_compute(op, ctx))
        else:
            raise TVMTypeError(f"lower: unsupported operation {type(op).__name__}")
    body = SeqStmt.flatten(stmts)
    for buffer in reversed(ctx.root_alloc):
        body = Allocate(buffer.data, buffer.dtype, buffer.shape, IntImm("bool", 1), DeclBuffer(buffer, body))
    params: list[Var] = []
    buffer_map: dict[Var, Buffer] = {}
    for a in args:
        if isinstance(a, Tensor):
            if a not in ctx.buffers:
                raise TVMValueError(f"lower: argument {a.name!r} is not computed or read by the schedule")
            param = Var(a.name.replace(".", "_"), "handle")
            params.append(param)
            buffer_map[param] = ctx.buffers[a]
        elif isinstance(a, Var):
            params.append(a)
        else:
            raise TVMTypeError(f"lower: arguments are te Tensors or scalar te.vars, got {a!r}")
    attrs = {"from_legacy_te_schedule": IntImm("bool", 1), "tir.noalias": IntImm("bool", 1)}
    return IRModule({name: PrimFunc(params, body, buffer_map=buffer_map, attrs=attrs)})


__all__ = ["lower_te_schedule"]
