"""``ConvertBlocksToOpaque``: substitute block iterators by their bindings and drop them.

After this pass every block is opaque (no ``iter_vars``), so later passes may move code across
block boundaries without tracking iterator bindings.
"""
from __future__ import annotations

from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, substitute
from .pass_infra import func_pass


class _OpaqueConverter(StmtExprMutator):
    def visit_block_realize_(self, op):
        op = super().visit_block_realize_(op)
        block = op.block
        if not block.iter_vars:
            return op
        vmap = {iv.var: value for iv, value in zip(block.iter_vars, op.iter_values)}
        block = block.replace(
            iter_vars=(),
            body=substitute(block.body, vmap),
            init=None if block.init is None else substitute(block.init, vmap),
            reads=tuple(substitute(r, vmap) for r in block.reads),
            writes=tuple(substitute(r, vmap) for r in block.writes),
            match_buffers=tuple(S.MatchBufferRegion(m.buffer, substitute(m.source, vmap)) for m in block.match_buffers),
        )
        return S.BlockRealize((), op.predicate, block)


def convert_blocks_to_opaque(func):
    """``func`` with block iterators replaced by their bindings (the PrimFunc-level form of ``ConvertBlocksToOpaque``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    return func.with_body(_OpaqueConverter().visit(func.body))


def ConvertBlocksToOpaque():  # noqa: N802 - TVM's pass name
    """Replace block iterators by their bound values; blocks keep their regions, allocations and body.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(convert_blocks_to_opaque, "tir.ConvertBlocksToOpaque")
