"""``rewrite_unbound_block``: bind the loops of every top-level block left unbound (layout copies,
padding made by other rules) to ``blockIdx.x`` x ``threadIdx.x``, so each becomes a CUDA kernel."""
from __future__ import annotations

from tensorize.ir import expr as E
from tensorize.ir.stmt import BlockRealize, ForKind
from tensorize.schedule import ScheduleError

from ..schedule_rule.gpu_auto_bind import bind_block
from .base import POSTPROCS, Postproc, PostprocError
from .loops import nest_blocks

__all__ = ["RewriteUnboundBlock"]


@POSTPROCS.register("rewrite_unbound_block")
class RewriteUnboundBlock(Postproc):
    """Bind each unbound top-level loop nest (split by ``max_threads`` threads per block).

    Parameters
    ----------
    max_threads : int
        Threads per block of the bound kernels (fewer when the loops have fewer iterations).
    """

    def __init__(self, max_threads: int = 256):
        self.max_threads = max_threads

    def apply(self, sch, ctx) -> None:
        """See ``Postproc.apply``: rewrite ``sch`` in place or raise ``PostprocError``."""
        for func_name in sch.mod.function_names():
            body = sch.mod[func_name].body
            if not isinstance(body, BlockRealize):
                continue
            index = sch._index(func_name)
            for realize in nest_blocks(body.block.body):
                if index.parent_block_realize(realize) is not body or realize.block.body is None:
                    continue
                loops = index.loops_of(realize)
                if not loops or any(lp.kind == ForKind.THREAD_BINDING for lp in loops):
                    continue
                if any(isinstance(n, BlockRealize) for n in nest_blocks(realize.block.body)):
                    continue  # a block of blocks: its inner blocks are bound on their own
                block = sch.get_block(realize.block.name_hint, func_name)
                extent = 1
                for lp in loops:
                    extent *= int(lp.extent.value) if isinstance(lp.extent, E.IntImm) else self.max_threads
                try:
                    if not bind_block(sch, block, min(self.max_threads, max(1, extent))):
                        raise PostprocError(f"block {realize.block.name_hint!r} has no spatial loop to bind "
                                            "to GPU threads")
                except ScheduleError as err:
                    raise PostprocError(f"cannot bind block {realize.block.name_hint!r}: {err.reason}") from err
