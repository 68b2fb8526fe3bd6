"""``rewrite_cooperative_fetch``: spread each shared-memory copy over the threads of its CUDA block."""
from __future__ import annotations

from tensorize.ir import expr as E
from tensorize.ir.functor import post_order_visit
from tensorize.ir.stmt import BlockRealize, BufferStore, ForKind, SeqStmt
from tensorize.schedule import ScheduleError

from ..schedule_rule.gpu_limits import (COOPERATIVE_FETCH, PIPELINE_ASYNC_STAGES, PIPELINE_DEPTH, PIPELINE_STAGE,
                                        WARP_EXECUTION)
from .base import POSTPROCS, Postproc, PostprocError
from .loops import nest_blocks

__all__ = ["RewriteCooperativeFetch", "thread_extents"]

_TAGS = ("threadIdx.z", "threadIdx.y", "threadIdx.x")


def _writes_shared(stmt) -> bool:
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, BufferStore)
                     and n.buffer.scope().startswith("shared") else None)
    return bool(found)


def _value(v) -> int:
    return int(v.value) if isinstance(v, E.IntImm) else int(v)


def thread_extents(sch, block) -> dict:
    """``{tag: extent}`` of the threadIdx loops around ``block``; without a threadIdx.x loop there, the lanes a
    tensorized intrinsic of the same kernel binds inside its body (a warpgroup's 128), or 32 when a block of
    the kernel runs on whole warps (``meta_schedule.warp_execution``).

    Parameters
    ----------
    sch : Schedule
        The schedule.
    block : BlockRV
        A block inside a kernel.

    Returns
    -------
    dict
        Thread tag -> extent.
    """
    out = {}
    loops = sch.get_loops(block)
    for lp in loops:
        loop = sch.get(lp)
        tb = loop.thread_binding
        if loop.kind == ForKind.THREAD_BINDING and tb is not None and tb.thread_tag in _TAGS:
            out[tb.thread_tag] = _value(loop.extent)
    if "threadIdx.x" not in out and loops:
        kernel = sch.get(loops[0])
        lanes = []  # a tensorized warpgroup intrinsic binds its 128 lanes inside its own body
        post_order_visit(kernel.body, lambda n: lanes.append(_value(n.extent)) if getattr(n, "thread_binding", None)
                         is not None and n.kind == ForKind.THREAD_BINDING
                         and n.thread_binding.thread_tag == "threadIdx.x" else None)
        if lanes:
            out["threadIdx.x"] = max(lanes)
        elif any(WARP_EXECUTION in r.block.annotations for r in nest_blocks(kernel.body)):
            out["threadIdx.x"] = 32
    return out


@POSTPROCS.register("rewrite_cooperative_fetch")
class RewriteCooperativeFetch(Postproc):
    """For each block annotated ``meta_schedule.cooperative_fetch = v``: fuse its own loops (those under
    its ``compute_at`` point), split them as ``[rest, threadIdx.z, threadIdx.y, threadIdx.x, v]`` with the
    kernel's thread extents, bind, and vectorize the ``v`` consecutive elements of each thread (the CUDA
    code generator makes an aligned contiguous copy one wide access). A loop with a sampled
    ``meta_schedule.software_pipeline_depth`` gets TVM's ``software_pipeline_stage`` annotations.

    Raises ``PostprocError`` when the copy is not inside a thread-bound kernel.
    """

    def apply(self, sch, ctx) -> None:
        """See ``Postproc.apply``: rewrite ``sch`` in place or raise ``PostprocError``."""
        for func_name in sch.mod.function_names():
            body = sch.mod[func_name].body
            if not isinstance(body, BlockRealize):
                continue
            names = [(r.block.name_hint, r.block.annotations[COOPERATIVE_FETCH])
                     for r in nest_blocks(body.block.body) if COOPERATIVE_FETCH in r.block.annotations]
            for name, lanes in names:
                self._rewrite(sch, sch.get_block(name, func_name), max(1, _value(lanes)))
            self._pipelines(sch, [sch.get_block(name, func_name) for name, _ in names])

    @staticmethod
    def _pipelines(sch, fetches) -> None:
        """Turn the sampled ``meta_schedule.software_pipeline_depth`` of a loop around the shared fetches
        (the rule annotates the loop they are computed at) into TVM's software pipeline annotations: the
        statements of its body that write shared memory (the fetches) are stage 0 and asynchronous, the
        rest (the compute) stage ``depth``."""
        seen = set()
        for block in fetches:
            for lp in sch.get_loops(block):
                loop = sch.get(lp)
                if id(loop.loop_var) in seen or PIPELINE_DEPTH not in loop.annotations:
                    continue
                seen.add(id(loop.loop_var))
                depth = _value(loop.annotations[PIPELINE_DEPTH])
                sch.unannotate(lp, PIPELINE_DEPTH)
                if depth <= 0:
                    continue
                items = list(loop.body.seq) if isinstance(loop.body, SeqStmt) else [loop.body]
                stages = [0 if _writes_shared(item) else depth for item in items]
                if 0 in stages and depth in stages:
                    sch.annotate(lp, PIPELINE_STAGE, stages)
                    sch.annotate(lp, PIPELINE_ASYNC_STAGES, [0])

    @staticmethod
    def _rewrite(sch, block, lanes: int) -> None:
        sch.unannotate(block, COOPERATIVE_FETCH)
        threads = thread_extents(sch, block)
        if not threads:
            raise PostprocError(f"the shared copy {sch.get(block).name_hint!r} is outside any thread-bound loop")
        consumers = sch.get_consumers(block)
        shared_loops = set()
        for consumer in consumers:
            shared_loops.update(id(sch.get(lp).loop_var) for lp in sch.get_loops(consumer))
        own = [lp for lp in sch.get_loops(block) if id(sch.get(lp).loop_var) not in shared_loops]
        if not own:
            return
        try:
            fused = sch.fuse(*own) if len(own) > 1 else own[0]
            tags = [t for t in _TAGS if t in threads]
            factors = [None] + [threads[t] for t in tags] + ([lanes] if lanes > 1 else [])
            parts = sch.split(fused, factors)
            for tag, loop in zip(tags, parts[1:]):
                sch.bind(loop, tag)
            if lanes > 1:  # one wide (up to 16-byte) access per thread where the lanes are contiguous
                sch.vectorize(parts[-1])
        except ScheduleError as err:
            raise PostprocError(f"cannot spread the copy over the threads: {err.reason}") from err
