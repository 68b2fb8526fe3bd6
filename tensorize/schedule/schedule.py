"""``Schedule``: TensorIR's transformation primitives over an IRModule, with a replayable trace.

>>> import tensorize as tvm
>>> from tensorize import te
>>> A = te.placeholder((8,), name="A")
>>> B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
>>> sch = tvm.tir.Schedule(te.create_prim_func([A, B]))
>>> i, = sch.get_loops(sch.get_block("B"))
>>> i0, i1 = sch.split(i, factors=[2, 4])
>>> print(sch.mod.script())  # doctest: +ELLIPSIS
# from tvm.script import ir as I
...
        for i_0, i_1 in T.grid(2, 4):
            with T.block("B"):
                v_i = T.axis.spatial(8, i_0 * 4 + i_1)
...
"""
from __future__ import annotations

from .base import ScheduleBase
from .primitives.annotation import Annotation
from .primitives.blockize import Blockize
from .primitives.buffer_prims import BufferPrimitives
from .primitives.cache_index import CacheIndex
from .primitives.cache_inplace import CacheInplace
from .primitives.compute_location import ComputeLocation
from .primitives.for_kind import ForKindPrimitives
from .primitives.get_handles import GetHandles
from .primitives.inline import Inline
from .primitives.layout import Layout
from .primitives.loop_transform import LoopTransform
from .primitives.reduction import Reduction
from .primitives.reindex_cache import ReindexCache
from .primitives.sampling import Sampling
from .primitives.tensorize import Tensorize


class Schedule(GetHandles, Sampling, LoopTransform, ForKindPrimitives, Annotation, Inline, Reduction, ComputeLocation,
               BufferPrimitives, ReindexCache, CacheInplace, CacheIndex, Layout, Blockize, Tensorize, ScheduleBase):
    """A schedule of ``mod`` (``tvm.tir.Schedule``): the primitives, the current module
    (``sch.mod``) and the replayable ``trace``.

    Every primitive either applies fully or raises ``ScheduleError`` leaving the schedule unchanged.

    Parameters
    ----------
    mod : IRModule or PrimFunc
        What to schedule (a PrimFunc becomes the module's ``main``).
    seed : int, optional
        The random state of the sampling primitives (same seed, same schedule).
    debug_mask, error_render_level
        As in TVM (``error_render_level``: ``"detail"``, ``"fast"`` or ``"none"``).

    Examples
    --------
    >>> import tensorize as tvm
    >>> from tensorize import te
    >>> A = te.placeholder((8,), name="A")
    >>> B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    >>> sch = tvm.tir.Schedule(te.create_prim_func([A, B]), seed=0)
    >>> [sch.get(l).extent.value for l in sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 4])]
    [2, 4]
    """

    def enter_postproc(self) -> None:
        """Mark the start of post-processing in the trace (``remove_postproc`` drops what follows)."""
        from .trace import Instruction

        self._trace.append(Instruction("enter_postproc", {}, []))
