"""``rewrite_reduction_block``: split each tiled reduction's init into its own block, so the init
loops run once per output tile (and keep their vectorized / unrolled kinds)."""
from __future__ import annotations

from tensorize.ir.stmt import BlockRealize
from tensorize.schedule import ScheduleError

from ..schedule_rule.analysis import AUTO_TENSORIZE
from .base import POSTPROCS, Postproc, PostprocError
from .loops import loop_var_kinds, nest_blocks, under_annotated

__all__ = ["RewriteReductionBlock"]


@POSTPROCS.register("rewrite_reduction_block")
class RewriteReductionBlock(Postproc):
    """``decompose_reduction`` every block with an init at its outermost loop bound to a reduction
    iterator (blocks whose reduction loops are all inside the block keep their init). The init block
    of a block marked ``meta_schedule.auto_tensorize`` loses that mark (only the update is tensorized).

    Raises ``PostprocError`` when a reduction cannot be decomposed there (e.g. a spatial loop of the
    block sits inside a parallel reduction split it does not own).
    """

    def apply(self, sch, ctx) -> None:
        """See ``Postproc.apply``: rewrite ``sch`` in place or raise ``PostprocError``."""
        for func_name in sch.mod.function_names():
            body = sch.mod[func_name].body
            if not isinstance(body, BlockRealize):
                continue
            names = [r.block.name_hint for r in nest_blocks(body.block.body) if r.block.init is not None]
            for name in names:
                self._decompose(sch, func_name, name)

    @staticmethod
    def _decompose(sch, func_name, name) -> None:
        index = sch._index(func_name)
        realize = index.block(name)
        parent = index.parent_block_realize(realize)
        if parent is not None and under_annotated(index, parent, AUTO_TENSORIZE):
            return  # inside a block that becomes an intrinsic
        loops = index.loops_of(realize)
        kinds = loop_var_kinds(realize)
        pos = next((i for i, lp in enumerate(loops) if "R" in kinds.get(id(lp.loop_var), ())), None)
        if pos is None:
            return
        block = sch.get_block(name, func_name)
        try:
            init = sch.decompose_reduction(block, sch.get_loops(block)[pos])
        except ScheduleError as err:
            raise PostprocError(f"cannot decompose the reduction of block {name!r}: {err.reason}") from err
        if AUTO_TENSORIZE in sch.get(init).annotations:
            sch.unannotate(init, AUTO_TENSORIZE)
