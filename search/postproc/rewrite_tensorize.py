"""``rewrite_tensorize``: tensorize the blocks ``multi_level_tiling_with_intrin`` marked."""
from __future__ import annotations

from tensorize.ir.stmt import BlockRealize
from tensorize.schedule import ScheduleError

from ..schedule_rule.analysis import AUTO_TENSORIZE
from .base import POSTPROCS, Postproc, PostprocError
from .loops import nest_blocks

__all__ = ["RewriteTensorize"]


@POSTPROCS.register("rewrite_tensorize")
class RewriteTensorize(Postproc):
    """``sch.tensorize(block, intrin)`` for every block annotated ``meta_schedule.auto_tensorize``.

    Raises ``PostprocError`` when the block no longer matches the intrinsic's description.
    """

    def apply(self, sch, ctx) -> None:
        """See ``Postproc.apply``: rewrite ``sch`` in place or raise ``PostprocError``."""
        for func_name in sch.mod.function_names():
            body = sch.mod[func_name].body
            if not isinstance(body, BlockRealize):
                continue
            marked = [(r.block.name_hint, r.block.annotations[AUTO_TENSORIZE])
                      for r in nest_blocks(body.block.body) if AUTO_TENSORIZE in r.block.annotations]
            for name, intrin in marked:
                block = sch.get_block(name, func_name)
                try:
                    sch.unannotate(block, AUTO_TENSORIZE)
                    sch.tensorize(block, str(intrin))
                except ScheduleError as err:
                    raise PostprocError(f"cannot tensorize block {name!r} with {intrin}: {err.reason}") from err
