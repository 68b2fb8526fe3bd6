"""What the rules ask about a block: its loops' iterator kinds, whether it is elementwise, an output,
a reduction that needs tiling."""
from __future__ import annotations

from tensorize.ir import expr as E
from tensorize.ir.functor import post_order_visit
from tensorize.ir.stmt import Block, BlockRealize, BufferStore, For

__all__ = ["loop_kinds", "contiguous_output_loop", "is_spatial", "is_output_block", "has_if_then_else",
           "needs_multi_level_tiling", "is_elementwise_of", "is_leaf", "is_root", "TILED", "AUTO_TENSORIZE"]

TILED = "meta_schedule.tiling_structure"
AUTO_TENSORIZE = "meta_schedule.auto_tensorize"


def is_reduction_block(block: Block) -> bool:
    """A block with an init or a reduction iterator."""
    return block.init is not None or any(iv.iter_type == E.IterVar.CommReduce for iv in block.iter_vars)


def is_root(sch, block) -> bool:
    """Whether ``block`` is the root block of its function."""
    func = sch.mod[block.func_name]
    return isinstance(func.body, BlockRealize) and sch.get(block) is func.body.block


def loop_kinds(sch, block) -> list[str]:
    """Per loop above ``block`` (outermost first): "S" if only spatial iterators use its variable,
    "R" if only reduction ones do, "O" if both or other kinds do, "U" if none does."""
    realize = sch._block(block)[2]
    loops = sch._block(block)[1].loops_of(realize)
    used: dict[int, set[str]] = {id(f.loop_var): set() for f in loops}
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        kind = "S" if iv.iter_type == E.IterVar.DataPar else "R" if iv.iter_type == E.IterVar.CommReduce else "O"

        def visit(node, kind=kind):
            if isinstance(node, E.Var) and id(node) in used:
                used[id(node)].add(kind)

        post_order_visit(value, visit)
    out = []
    for f in loops:
        kinds = used[id(f.loop_var)]
        out.append("U" if not kinds else kinds.pop() if len(kinds) == 1 else "O")
    return out


def contiguous_output_loop(sch, block) -> int | None:
    """The position (among the loops above ``block``, outermost first) of the loop whose variable alone
    indexes the innermost dimension of the block's first output (the loop the postprocs vectorize:
    ``j`` of a GEMM ``C[i, j]``, the channel of an NHWC convolution), or None where no single loop does."""
    _, scope, realize = sch._block(block)
    block_node = realize.block
    if not block_node.writes or not isinstance(block_node.body, BufferStore):
        return None
    indices = block_node.body.indices
    if not indices or not isinstance(indices[-1], E.Var):
        return None
    binding = next((value for iv, value in zip(block_node.iter_vars, realize.iter_values)
                    if iv.var is indices[-1] and iv.iter_type == E.IterVar.DataPar), None)
    if not isinstance(binding, E.Var):
        return None
    return next((i for i, f in enumerate(scope.loops_of(realize)) if f.loop_var is binding), None)


def is_spatial(block: Block) -> bool:
    """Whether every iterator of ``block`` is spatial (and it is not a reduction)."""
    return not is_reduction_block(block) and all(iv.iter_type == E.IterVar.DataPar for iv in block.iter_vars)


def is_leaf(block: Block) -> bool:
    """The block's body holds no loops or nested blocks (a single computation)."""
    found = []

    def visit(node):
        if isinstance(node, (For, BlockRealize)):
            found.append(node)

    post_order_visit(block.body, visit)
    return not found


def is_output_block(sch, block) -> bool:
    """Whether ``block`` writes a function parameter."""
    params = {id(b) for b in sch.mod[block.func_name].buffer_map.values()}
    return any(id(w.buffer) in params for w in sch.get(block).writes)


def has_if_then_else(block: Block) -> bool:
    """Whether ``block`` computes a ``if_then_else`` or a ``Select``."""
    found = []

    def visit(node):
        if isinstance(node, E.Call) and getattr(node.op, "name", "") in ("tir.if_then_else", "if_then_else"):
            found.append(node)
        elif type(node).__name__ == "Select":
            found.append(node)

    post_order_visit(block.body, visit)
    return bool(found)


def is_elementwise_of(consumer: Block, producer: Block) -> bool:
    """``consumer`` is spatial, a single store, and reads what ``producer`` writes at its own output
    indices (ReLU, bias add, cast after a GEMM), or at its own iterators in order (an epilogue whose iteration
    space was remapped with the producer's buffer, e.g. image rows and columns fused into pixels, storing
    ``out[n, p // W, p % W, c]``); an iterator of extent 1 may be read as the constant 0 (a model's batch of
    one: ``clip[v_n, y, x, c] = f(conv[0, y, x, c])``)."""
    if not is_spatial(consumer) or not isinstance(consumer.body, BufferStore):
        return False
    written = {id(w.buffer) for w in producer.writes}
    store = consumer.body
    unit = {id(iv.var) for iv in consumer.iter_vars if isinstance(iv.dom.extent, E.IntImm) and iv.dom.extent.value == 1}
    iterators = [iv.var for iv in consumer.iter_vars]

    def same(read, index) -> bool:
        if read.same_as(index) if hasattr(read, "same_as") else read is index:
            return True
        return id(index) in unit and isinstance(read, E.IntImm) and read.value == 0

    def matches(indices, targets) -> bool:
        return len(indices) == len(targets) and all(same(a, b) for a, b in zip(indices, targets))

    ok = []

    def visit(node):
        if isinstance(node, E.BufferLoad) and id(node.buffer) in written:
            ok.append(matches(node.indices, store.indices) or matches(node.indices, iterators))

    post_order_visit(store.value, visit)
    return bool(ok) and all(ok)


def needs_multi_level_tiling(block: Block) -> bool:
    """A reduction, or a spatial block with data reuse (a read indexed by fewer iterators than it has)."""
    if not is_leaf(block) or not isinstance(block.body, BufferStore):
        return False
    if any(iv.iter_type not in (E.IterVar.DataPar, E.IterVar.CommReduce) for iv in block.iter_vars):
        return False
    if any(iv.iter_type == E.IterVar.CommReduce for iv in block.iter_vars):
        return True
    ivars = {id(iv.var) for iv in block.iter_vars if int(iv.dom.extent) > 1}
    for r in block.reads:
        used = set()
        for rng in r.region:
            def visit(node):
                if isinstance(node, E.Var):
                    used.add(id(node))
            post_order_visit(rng.min, visit)
        if ivars - used and len(block.reads) >= 2:
            return True
    return False
