"""``Schedule``: TensorIR's transformation primitives over an IRModule, with a replayable trace.

>>> # sch = tvm.tir.Schedule(ir_module)
>>> # i, = sch.get_loops(sch.get_block("B"))
>>> # i0, i1, i2 = sch.split(i, factors=[2, 2, 2])
>>> # print(sch.mod.script())
"""
from __future__ import annotations

from .base import ScheduleBase
from .primitives.annotation import Annotation
from .primitives.blockize import Blockize
from .primitives.cache import Cache
from .primitives.compute_at import ComputeAt
from .primitives.for_kind import ForKindPrimitives
from .primitives.get_handles import GetHandles
from .primitives.inline import Inline
from .primitives.layout import Layout
from .primitives.loop_transform import LoopTransform
from .primitives.reduction import Reduction
from .primitives.sampling import Sampling
from .primitives.tensorize import Tensorize


class Schedule(GetHandles, Sampling, LoopTransform, ForKindPrimitives, Annotation, Inline, Reduction, ComputeAt,
               Cache, Layout, Blockize, Tensorize, ScheduleBase):
    """A schedule of ``mod`` (an IRModule or a PrimFunc).

    Parameters: ``seed`` for the random state of sampling primitives (same seed, same schedule);
    ``debug_mask`` and ``error_render_level`` ("detail", "fast", "none") as in TVM.
    Every primitive either applies fully or raises ``ScheduleError`` leaving the schedule unchanged.
    """

    def enter_postproc(self) -> None:
        """Mark the start of post-processing in the trace (``remove_postproc`` drops what follows)."""
        from .trace import Instruction

        self._trace.append(Instruction("enter_postproc", {}, []))
