"""``verify``: the candidate is well formed and lowers."""
from __future__ import annotations

from tensorize.errors import TVMError
from tensorize.ir.stmt import ForKind
from tensorize.analysis.verify import verify_well_formed
from tensorize.schedule.tree import StmtIndex

from .base import POSTPROCS, Postproc, PostprocError
from .loops import loop_var_kinds, nest_blocks

__all__ = ["Verify"]


@POSTPROCS.register("verify")
class Verify(Postproc):
    """Reject a candidate that is not well formed or runs a reduction loop in parallel; with
    ``lower=True`` also one that does not lower (costs a lowering: ~0.1-1 s for an unrolled GEMM, so
    off by default; the builder lowers every measured candidate anyway)."""

    def __init__(self, lower: bool = False):
        self.lower = lower

    def apply(self, sch, ctx) -> None:
        """See ``Postproc.apply``: rewrite ``sch`` in place or raise ``PostprocError``."""
        mod = sch.mod
        try:
            verify_well_formed(mod)
        except (TVMError, ValueError) as err:
            raise PostprocError(f"not well formed: {str(err).splitlines()[0]}") from err
        for func_name in mod.function_names():
            index = StmtIndex(mod[func_name].body)
            for realize in nest_blocks(mod[func_name].body):
                kinds = loop_var_kinds(realize)
                for loop in index.loops_of(realize):
                    if loop.kind == ForKind.PARALLEL and kinds.get(id(loop.loop_var), set()) - {"S"}:
                        raise PostprocError(f"parallel loop {loop.loop_var.name} is bound to a reduction "
                                            f"iterator of block {realize.block.name_hint!r}")
        if self.lower:
            from tensorize.driver import lower

            try:
                lower(mod)
            except (TVMError, ValueError, TypeError, KeyError) as err:
                raise PostprocError(f"does not lower: {str(err).splitlines()[0] if str(err) else type(err).__name__}") \
                    from err

