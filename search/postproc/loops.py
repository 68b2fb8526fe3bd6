"""Loop facts the postprocessors share: which loops a block's iterators of each kind use."""
from __future__ import annotations

from tensorize.ir import expr as E
from tensorize.ir.functor import post_order_visit
from tensorize.ir.stmt import BlockRealize
from tensorize.schedule.analysis import nest_blocks

__all__ = ["loop_var_kinds", "nest_blocks", "under_annotated"]


def loop_var_kinds(realize: BlockRealize, into: dict[int, set] | None = None) -> dict[int, set]:
    """``{id(loop var): {"S", "R", "O"}}``: the kinds of the iterators whose bindings use each variable."""
    out = {} if into is None else into
    for iv, value in zip(realize.block.iter_vars, realize.iter_values):
        kind = "S" if iv.iter_type == E.IterVar.DataPar else "R" if iv.iter_type == E.IterVar.CommReduce else "O"

        def visit(node, kind=kind):
            if isinstance(node, E.Var):
                out.setdefault(id(node), set()).add(kind)

        post_order_visit(value, visit)
    return out


def under_annotated(index, realize: BlockRealize, key: str) -> bool:
    """``realize`` or a block above it carries annotation ``key``."""
    node = realize
    while node is not None:
        if key in node.block.annotations:
            return True
        node = index.parent_block_realize(node)
    return False

