"""``te.create_prim_func``: turn a tensor-expression graph into a TensorIR PrimFunc.

Each ``te.compute`` becomes one loop nest with one block named after the op (one block per
output for multi-output element-wise computes); loops are named after the compute's axes and
block iterators ``v_<axis>``; reductions get a ``T.init()`` with the reducer's identity (or the
``init=`` value); tensors that are not arguments become ``alloc_buffer``s of the root block.

>>> from tensorize import te
>>> A = te.placeholder((8,), name="A")
>>> B = te.compute((8,), lambda *i: A(*i) + 1.0, name="B")
>>> f = te.create_prim_func([A, B])
>>> loop = f.body.block.body
>>> loop.loop_var.name, loop.body.block.name_hint, loop.body.block.iter_vars[0].var.name
('i0', 'B', 'v_i0')
"""
from __future__ import annotations

from ..errors import TVMNotImplementedError, TVMTypeError, TVMValueError

import logging
from typing import Any, Sequence

from ..ir import dtype as dt
from ..arith.block_access import infer_block_access
from ..ir.buffer import Buffer, decl_buffer
from ..ir.expr import BufferLoad, IntImm, IterVar, PrimExpr, Range, Reduce, Var
from ..ir.function import PrimFunc
from ..ir.functor import StmtExprMutator, collect_vars, substitute
from ..ir.op import if_then_else
from ..ir.stmt import Block, BlockRealize, BufferStore, For, ForKind, LetStmt, SeqStmt, Stmt
from .tensor import ComputeOp, Operation, PlaceholderOp, Tensor

logger = logging.getLogger(__name__)

# Compute attrs that describe the TE graph and have no meaning on a TensorIR block.
_DROPPED_ATTRS = ("const_matrix", "auto_scheduler_simplify_const_tensor_indices", "workload")
_LAYOUT_FREE = "layout_free_placeholders"


def _simplify(expr: PrimExpr) -> PrimExpr:
    """Simplify with ``tensorize.arith`` when it is available (TVM simplifies generated bodies)."""
    try:
        from ..arith import Analyzer  # noqa: PLC0415 - optional, lands independently
    except ImportError:
        return expr
    return Analyzer().simplify(expr)


class _ProducerToBuffer(StmtExprMutator):
    """ProducerLoad of a te Tensor -> BufferLoad of the tensor's buffer."""

    def __init__(self, buffers: dict[Tensor, Buffer]):
        self.buffers = buffers

    def visit_producer_load_(self, op):
        indices = self._exprs(op.indices)
        buffer = self.buffers.get(op.producer)
        if buffer is None:
            raise TVMValueError(f"create_prim_func: tensor {op.producer.name!r} is read before it is defined; "
                             f"pass its placeholder in the argument list")
        return BufferLoad(buffer, indices)


class _NameSupply:
    """Unique block names: ``C``, then ``C_1``, ``C_2``, ..."""

    def __init__(self):
        self.used: dict[str, int] = {}

    def fresh(self, name: str) -> str:
        if name not in self.used:
            self.used[name] = 0
            return name
        while True:
            self.used[name] += 1
            candidate = f"{name}_{self.used[name]}"
            if candidate not in self.used:
                self.used[candidate] = 0
                return candidate


class _Context:
    def __init__(self, args: Sequence[Any]):
        self.arg_tensors = [a for a in args if isinstance(a, Tensor)]
        self.buffers: dict[Tensor, Buffer] = {}
        self.root_alloc: list[Buffer] = []
        self.names = _NameSupply()
        self.to_buffer = _ProducerToBuffer(self.buffers)

    def is_arg(self, tensor: Tensor) -> bool:
        return any(tensor == a for a in self.arg_tensors)

    def declare(self, tensor: Tensor) -> Buffer:
        buffer = decl_buffer(tensor.shape, tensor.dtype, tensor.name)
        self.buffers[tensor] = buffer
        if not self.is_arg(tensor):
            self.root_alloc.append(buffer)
        return buffer

    def lower(self, expr: PrimExpr, remap: dict) -> PrimExpr:
        """Loads of tensors become buffer loads, compute axes become block iterators."""
        return substitute(self.to_buffer(expr), remap)


def _ordered_ops(args: Sequence[Tensor]) -> list[Operation]:
    """Operations reachable from the arguments, producers before consumers (post-order DFS)."""
    order: list[Operation] = []
    state: dict[int, str] = {}

    def visit(op: Operation):
        mark = state.get(id(op))
        if mark == "done":
            return
        if mark == "active":
            raise TVMValueError(f"create_prim_func: the tensor graph has a cycle through {op.name!r}")
        state[id(op)] = "active"
        for t in op.input_tensors:
            visit(t.op)
        state[id(op)] = "done"
        order.append(op)

    for t in args:
        visit(t.op)
    return order


def _index_dtype(iv: IterVar) -> str:
    return f"int{max(dt.parse(iv.dom.min.dtype).bits, dt.parse(iv.dom.extent.dtype).bits)}"


def _annotations(op: ComputeOp, ctx: _Context) -> dict:
    def convert(value):
        if isinstance(value, Tensor):
            return ctx.buffers[value]
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        return value

    return {k: convert(v) for k, v in op.attrs.items() if k not in _DROPPED_ATTRS}


def _generate_compute(op: ComputeOp, ctx: _Context) -> Stmt:
    axes = list(op.axis) + list(op.reduce_axis)
    axis_vars = {id(iv.var) for iv in axes}
    for iv in axes:
        if any(id(v) in axis_vars for v in collect_vars(iv.dom.min) + collect_vars(iv.dom.extent)):
            raise TVMNotImplementedError(
                f"create_prim_func: axis {iv.var.name!r} of {op.name!r} has a domain that depends on another axis "
                f"(a triangular iteration space); give it a rectangular domain and mask with where=/if_then_else")

    loops: list[tuple[Var, Range]] = []
    block_iters: list[IterVar] = []
    bindings: list[PrimExpr] = []
    remap: dict[Var, PrimExpr] = {}
    for iv in axes:
        index_dtype = _index_dtype(iv)
        loop_var = Var(iv.var.name, index_dtype)
        dom = Range.from_min_extent(_simplify(iv.dom.min), _simplify(iv.dom.extent))
        block_var = Var("v_" + iv.var.name, index_dtype)
        loops.append((loop_var, dom))
        block_iters.append(IterVar(dom, block_var, iv.iter_type, iv.thread_tag, iv.span))
        bindings.append(loop_var)
        remap[iv.var] = block_var
    if not block_iters:  # a 0-d compute still needs one block iterator
        block_iters.append(IterVar(Range.from_min_extent(0, 1), Var("vi", "int32"), IterVar.DataPar))
        bindings.append(IntImm("int32", 0))
    n_spatial = len(op.axis)

    outputs = [op.output(i) for i in range(op.num_outputs)]
    buffers = [ctx.declare(t) for t in outputs]
    annotations = _annotations(op, ctx)
    realizes: list[Stmt] = []
    if isinstance(op.body[0], Reduce):
        indices = [iv.var for iv in block_iters[:n_spatial]]
        init, body = _reduction_stmts(op.body[0], buffers, indices, remap, ctx)
        block = Block(block_iters, [], [], ctx.names.fresh(op.name), body, init, annotations=annotations)
        realizes.append(BlockRealize(bindings, True, block))
    else:
        for i, (expr, buffer) in enumerate(zip(op.body, buffers)):
            iters, local_remap = block_iters, remap
            if i > 0:  # each block defines its own iterator variables
                iters = [iv.replace(var=iv.var.copy_with_name(iv.var.name)) for iv in block_iters]
                local_remap = {axis.var: new.var for axis, new in zip(axes, iters)}
            indices = [iv.var for iv in iters[:n_spatial]]
            store = BufferStore(buffer, _simplify(ctx.lower(expr, local_remap)), indices)
            block = Block(iters, [], [], ctx.names.fresh(buffer.name), store, annotations=annotations)
            realizes.append(BlockRealize(bindings, True, block))
    stmt = SeqStmt.flatten(realizes)
    for loop_var, dom in reversed(loops):
        stmt = For(loop_var, dom.min, dom.extent, ForKind.SERIAL, stmt)
    return stmt


def _reduction_stmts(reduce: Reduce, buffers: list[Buffer], indices: list[PrimExpr], remap: dict,
                     ctx: _Context) -> tuple[Stmt, Stmt]:
    """The init and update statements of a (possibly multi-value) reduction block."""
    starts = reduce.init if reduce.init else reduce.combiner.identity_element
    init = SeqStmt.flatten([BufferStore(b, ctx.lower(v, remap), indices) for b, v in zip(buffers, starts)])
    lhs = [BufferLoad(b, indices) for b in buffers]
    rhs = [_simplify(ctx.lower(s, remap)) for s in reduce.source]
    combined = [ctx.lower(c, remap) for c in reduce.combiner(lhs, rhs)]
    condition = _simplify(ctx.lower(reduce.condition, remap))
    if not (isinstance(condition, IntImm) and condition.value):
        # `where=`: points outside the condition keep the accumulator unchanged.
        combined = [if_then_else(condition, c, old) for c, old in zip(combined, lhs)]
    if len(buffers) == 1:
        return init, BufferStore(buffers[0], combined[0], indices)
    # Several values: bind each combined value first so that no store sees a half-updated accumulator.
    temps = [Var("v_" + b.name.replace(".", "_"), b.dtype) for b in buffers]
    body: Stmt = SeqStmt.flatten([BufferStore(b, t, indices) for b, t in zip(buffers, temps)])
    for temp, value in reversed(list(zip(temps, combined))):
        body = LetStmt(temp, value, body)
    return init, body


class _FillAccess(StmtExprMutator):
    """Give every generated block its read/write regions."""

    def visit_block_(self, op):
        op = super().visit_block_(op)
        # The same inference the TVMScript parser uses, so te and parsed programs get identical regions.
        reads, writes = infer_block_access(op, exclude_written=True)
        return op.replace(reads=tuple(reads), writes=tuple(writes))


def _layout_free_attr(body: Stmt, params: list[Var], buffer_map: dict) -> tuple[Stmt, list[int]]:
    """Move argument buffers named in ``layout_free_placeholders`` block annotations to the function
    attribute ``layout_free_buffers`` (parameter indices), as TVM does."""
    index_of = {id(buffer_map[p]): i for i, p in enumerate(params) if p in buffer_map}
    found: set[int] = set()

    class Rewrite(StmtExprMutator):
        def visit_block_(self, op):
            op = super().visit_block_(op)
            value = op.annotations.get(_LAYOUT_FREE)
            if value is None:
                return op
            keep = [b for b in value if id(b) not in index_of]
            found.update(index_of[id(b)] for b in value if id(b) in index_of)
            annotations = dict(op.annotations)
            if keep:
                annotations[_LAYOUT_FREE] = keep
            else:
                del annotations[_LAYOUT_FREE]
            return op.replace(annotations=annotations)

    return Rewrite()(body), sorted(found)


def create_prim_func(ops: Sequence[Any], index_dtype_override: str | None = None) -> PrimFunc:
    """The PrimFunc computing the tensors in ``ops`` (``tvm.te.create_prim_func``).

    Each ``compute`` becomes a block (spatial and reduce iterators, an ``init`` for reductions),
    intermediate tensors become allocated buffers, and the function carries ``tir.noalias``.

    Parameters
    ----------
    ops : list of Tensor or Var
        The function's parameters in order: placeholders and computes (each becomes a buffer
        parameter) and scalar ``te.var`` (each becomes a scalar parameter).
    index_dtype_override : str, optional
        Not supported yet; declare shapes with the index dtype you want instead.

    Returns
    -------
    PrimFunc
        The function, ready for ``tvm.tir.Schedule`` or ``tvm.build``.

    Examples
    --------
    >>> from tensorize import te
    >>> k = te.reduce_axis((0, 16), "k")
    >>> A = te.placeholder((16, 16), name="A")
    >>> B = te.placeholder((16, 16), name="B")
    >>> C = te.compute((16, 16), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    >>> f = te.create_prim_func([A, B, C])
    >>> [b.name for b in f.buffers], f.attrs
    (['A', 'B', 'C'], {'global_symbol': 'main', 'tir.noalias': True})
    """
    if index_dtype_override is not None:
        raise TVMNotImplementedError("create_prim_func: index_dtype_override is not supported yet; declare shapes "
                                  "with the index dtype you want (e.g. tir.IntImm('int64', n))")
    args = list(ops)
    for a in args:
        if not isinstance(a, (Tensor, Var)):
            raise TVMTypeError(f"create_prim_func takes te Tensors (and scalar te.var parameters), got {a!r}")
    tensor_args = [a for a in args if isinstance(a, Tensor)]
    ctx = _Context(args)
    stmts: list[Stmt] = []
    for op in _ordered_ops(tensor_args):
        if isinstance(op, PlaceholderOp):
            tensor = op.output(0)
            if not ctx.is_arg(tensor):
                raise TVMValueError(f"create_prim_func: placeholder {op.name!r} is read by the computation but is not "
                                 f"in the argument list; add it to the list passed to create_prim_func")
            ctx.declare(tensor)
        elif isinstance(op, ComputeOp):
            stmts.append(_generate_compute(op, ctx))
        else:
            raise TVMTypeError(f"create_prim_func: unsupported operation {type(op).__name__}; only te.placeholder "
                            f"and te.compute are supported")
    body = _FillAccess()(SeqStmt.flatten(stmts))
    body = BlockRealize([], True, Block([], [], [], "root", body, alloc_buffers=ctx.root_alloc))

    params: list[Var] = []
    buffer_map: dict[Var, Buffer] = {}
    for a in args:
        if isinstance(a, Tensor):
            param = Var("var_" + a.name.replace(".", "_"), "handle")
            params.append(param)
            buffer_map[param] = ctx.buffers[a]
        else:
            params.append(a)
    attrs: dict[str, Any] = {"global_symbol": "main", "tir.noalias": True}  # as TVM
    body, layout_free = _layout_free_attr(body, params, buffer_map)
    if layout_free:
        attrs["layout_free_buffers"] = layout_free
    logger.debug("create_prim_func: %d blocks from %d arguments", len(stmts), len(args))
    return PrimFunc(params, body, buffer_map=buffer_map, attrs=attrs)


__all__ = ["create_prim_func"]
