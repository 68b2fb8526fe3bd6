"""Schedule primitives that set how a loop runs: parallel, vectorize, unroll, bind."""
from __future__ import annotations

from ...ir import expr as E
from ...analysis.expr_forms import _is_quasi_affine
from ...ir.stmt import ForKind
from ..analysis import COMM_REDUCE, DATA_PAR, block_realizes_under, iter_kind_name, uses_any
from ..base import ScheduleBase, primitive
from ..rv import LoopRV

THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
               "vthread", "vthread.x", "vthread.y", "vthread.z")


def _dataflow_problem(realize) -> str | None:
    """Why a block under a loop to parallelize breaks TVM's rules, or None: its bindings must be
    quasi-affine, and it must be complete (spatial, not reading what it writes) or a reduction whose
    writes are indexed by spatial iterators only."""
    block = realize.block
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if not _is_quasi_affine(value):
            return f"binds iterator {iv.var.name} to {value}, which is not affine in the loops"
    kinds = {iv.iter_type for iv in block.iter_vars}
    if kinds - {DATA_PAR, COMM_REDUCE}:
        return "has iterators that are neither spatial nor reduction"
    reduce_ids = {id(iv.var) for iv in block.iter_vars if iv.iter_type == COMM_REDUCE}
    if reduce_ids or block.init is not None:
        for region in block.writes:
            if any(uses_any(r.min, reduce_ids) or uses_any(r.extent, reduce_ids) for r in region.region):
                return f"writes {region.buffer.name} at an index that depends on a reduction iterator"
        return None
    written = {id(r.buffer) for r in block.writes}
    clash = next((r.buffer.name for r in block.reads if id(r.buffer) in written), None)
    if clash is not None:
        return f"reads {clash}, which it writes, so it is neither a complete nor a reduction block"
    return None


class ForKindPrimitives(ScheduleBase):
    """parallel, vectorize, unroll, bind."""

    def _check_parallelizable(self, for_node, what: str, thread_tag: str | None = None) -> None:
        """Every block iterator bound to ``for_node`` must be spatial; a reduction iterator may be
        bound to a ``threadIdx`` loop only (cross-thread reduction)."""
        loop_id = {id(for_node.loop_var)}
        for realize in block_realizes_under(for_node.body):
            reason = _dataflow_problem(realize)
            if reason is not None:
                raise self._error(f"cannot {what} loop {for_node.loop_var.name}: block {realize.block.name_hint!r} "
                                  f"under it {reason}", realize)
            for iv, value in zip(realize.block.iter_vars, realize.iter_values):
                if not uses_any(value, loop_id):
                    continue
                if iv.iter_type == DATA_PAR:
                    continue
                if iv.iter_type == COMM_REDUCE and thread_tag is not None and thread_tag.startswith("threadIdx"):
                    continue
                raise self._error(
                    f"cannot {what} loop {for_node.loop_var.name}: it is bound to the "
                    f"{iter_kind_name(iv.iter_type)} iterator {iv.var.name} of block {realize.block.name_hint!r}; "
                    f"only loops bound to spatial (data-parallel) iterators can be {what}d"
                    + (" (rfactor or decompose the reduction first)" if iv.iter_type == COMM_REDUCE else ""),
                    realize)

    def _set_kind(self, loop: LoopRV, kind: ForKind, what: str, thread_binding=None, check=True) -> None:
        func_name, _index, for_node = self._loop(loop)
        if check:
            self._check_parallelizable(for_node, what, thread_binding.thread_tag if thread_binding else None)
        self._replace(func_name, for_node, for_node.replace(kind=kind, thread_binding=thread_binding))

    @primitive
    def parallel(self, loop: LoopRV) -> None:
        """Run the iterations of ``loop`` in parallel threads. Every block iterator bound to the loop
        must be spatial (parallelizing a reduction loop is an error).

        Parameters
        ----------
        loop : LoopRV
            The loop to parallelize.

        Example::

            # before
            for i_0, i_2, i_1 in T.grid(8, 4, 4):
                with T.block("C"): ...

            sch.parallel(i_0)

            # after
            for i_0 in T.parallel(8):
                for i_2, i_1 in T.grid(4, 4):
                    with T.block("C"): ...

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> i, j, k = sch.get_loops(sch.get_block("C"))
        >>> sch.parallel(i)
        >>> sch.get(i).kind == tvm.tir.ForKind.PARALLEL
        True
        """
        self._set_kind(loop, ForKind.PARALLEL, "parallelize")

    @primitive
    def vectorize(self, loop: LoopRV) -> None:
        """Run ``loop`` as vector lanes. Every block iterator bound to the loop must be spatial.

        Parameters
        ----------
        loop : LoopRV
            The loop to vectorize.

        Example::

            sch.vectorize(j_1)
            # for j_1 in T.vectorized(8):
        """
        self._set_kind(loop, ForKind.VECTORIZED, "vectorize")

    @primitive
    def unroll(self, loop: LoopRV) -> None:
        """Unroll ``loop`` (always allowed).

        Parameters
        ----------
        loop : LoopRV
            The loop to unroll.

        Example::

            sch.unroll(k_1)
            # for k_1 in T.unroll(4):
        """
        self._set_kind(loop, ForKind.UNROLLED, "unroll", check=False)

    @primitive
    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind ``loop`` to a GPU thread axis: ``blockIdx.x/y/z``, ``threadIdx.x/y/z`` or
        ``vthread.x/y/z``. Block iterators bound to the loop must be spatial, except that a
        reduction may be bound to ``threadIdx`` (cross-thread reduction).

        Parameters
        ----------
        loop : LoopRV
            The loop to bind.
        thread_axis : str
            The thread axis, e.g. ``"threadIdx.x"``.

        Example::

            # before
            for i_0, i_2, i_1 in T.grid(2, 2, 2):
                with T.block("B"): ...

            sch.bind(i_0, "blockIdx.x")
            sch.bind(i_2, "threadIdx.x")

            # after
            for i_0 in T.thread_binding(2, thread="blockIdx.x"):
                for i_2 in T.thread_binding(2, thread="threadIdx.x"):
                    for i_1 in range(2):
                        with T.block("B"): ...
        """
        if isinstance(thread_axis, E.IterVar):
            thread_axis = thread_axis.thread_tag
        if not isinstance(thread_axis, str) or thread_axis not in THREAD_TAGS:
            raise self._error(f"bind: unknown thread axis {thread_axis!r}; use one of {', '.join(THREAD_TAGS)}")
        _func, _index, for_node = self._loop(loop)
        iv = E.IterVar(E.Range.from_min_extent(for_node.min, for_node.extent), E.Var(thread_axis, for_node.loop_var.dtype),
                       E.IterVar.ThreadIndex, thread_axis)
        self._set_kind(loop, ForKind.THREAD_BINDING, "bind", thread_binding=iv)
