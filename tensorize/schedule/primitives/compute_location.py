"""Schedule primitive sample_compute_location, and the plausible-location list the search's mutator
and replay checks share: the loops above a block's first consumer where ``compute_at`` applies,
plus the root (-1) and inline (-2) locations.
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir.stmt import Block, BlockRealize
from ..base import primitive
from ..error import ScheduleError
from ..rv import BlockRV, ExprRV, LoopRV
from .compute_at import ComputeAt, inline_location, root_location


class ComputeLocation(ComputeAt):
    """sample_compute_location on top of compute_at."""

    @primitive
    def sample_compute_location(self, block: BlockRV, decision: int | None = None) -> LoopRV:
        """Sample a loop where ``block`` can be computed at: one of the loops above its first consumer
        where ``compute_at`` applies, or the root (decision -1) or inline (-2, when the block is
        inlinable) locations. The decision is -2, -1 or the index of the loop among the first
        consumer's loops.

        Parameters
        ----------
        block : BlockRV
            The producer block.
        decision : int, optional
            A fixed decision (replaying a trace); sampled when None.

        Returns
        -------
        LoopRV
            The sampled loop, or the root or inline mark.

        Example::

            loc = sch.sample_compute_location(sch.get_block("B"))
            sch.compute_at(sch.get_block("B"), loc)
        """
        func_name, index_, realize = self._block(block)
        if decision is None:
            decision = self._draw_compute_location(block)
        else:
            decision = int(decision.value if isinstance(decision, ExprRV) else decision)
            # Checked for its form only: the compute_at that uses the location checks it in full.
            if decision not in self._location_options(block):
                raise self._error(f"decision {decision} is not a valid compute location of block "
                                  f"{block.name!r}; valid ones are {self._compute_location_candidates(block)}",
                                  realize)
        self._record_decision(decision)
        if decision == -1:
            return root_location(func_name)
        if decision == -2:
            return inline_location(func_name)
        consumer = self._first_consumer(block)
        return LoopRV(index_.loops_of(consumer)[decision].loop_var, func_name)

    # -- candidates ----------------------------------------------------------------------------
    def _first_consumer(self, block: BlockRV) -> BlockRealize | None:
        func_name, index, realize = self._block(block)
        scope = index.parent_block_realize(realize)
        siblings = index.child_block_realizes(scope if scope is not None else index.root)
        written = {id(r.buffer) for r in realize.block.writes}
        after = False
        for s in siblings:
            if s is realize:
                after = True
            elif after and any(id(r.buffer) in written for r in s.block.reads):
                return s
        return None

    def _location_options(self, block: BlockRV) -> list[int]:
        """Plausible locations: inline (-2) if inlinable, root (-1), first-consumer loops not above the block."""
        func_name, index, realize = self._block(block)
        options = [-2] if self._can_inline(realize.block, func_name) else []
        options.append(-1)
        consumer = self._first_consumer(block)
        if consumer is not None:
            options += [i for i, loop in enumerate(index.loops_of(consumer)) if not index.is_ancestor(loop, realize)]
        return options

    def _location_applies(self, block: BlockRV, decision: int) -> bool:
        """Whether ``compute_at`` applies at plausible location ``decision`` (tried on a copy)."""
        if decision < 0:
            return True
        func_name, index, _ = self._block(block)
        loop = index.loops_of(self._first_consumer(block))[decision]
        try:
            self.copy()._move_block(block, LoopRV(loop.loop_var, func_name), False, -1, reverse=False)
        except ScheduleError:
            return False
        return True

    def _compute_location_candidates(self, block: BlockRV) -> list[int]:
        """Every location where ``compute_at`` applies (one trial per loop)."""
        return [d for d in self._location_options(block) if self._location_applies(block, d)]

    def _draw_compute_location(self, block: BlockRV) -> int:
        """A valid location drawn uniformly, by rejection among the plausible ones (one trial, not one per loop)."""
        options = self._location_options(block)
        while True:
            decision = self._rng.choice(options)
            if self._location_applies(block, decision):
                return decision
            options.remove(decision)

    def _can_inline(self, block: Block, func_name: str) -> bool:
        """Cheap test of compute_inline's preconditions: a spatial block with one write, not an output."""
        from ...ir.stmt import BufferStore

        if block.init is not None or len(block.writes) != 1 or block.alloc_buffers or block.match_buffers:
            return False
        if any(iv.iter_type != E.IterVar.DataPar for iv in block.iter_vars):
            return False
        if not isinstance(block.body, BufferStore):
            return False
        params = {id(b) for b in self._func(func_name).buffer_map.values()}
        if id(block.writes[0].buffer) in params:
            return False
        ivars = [iv.var for iv in block.iter_vars]
        idx = block.body.indices
        return all(isinstance(i, E.Var) for i in idx) and len({id(i) for i in idx}) == len(idx) and all(
            any(i is v for v in ivars) for i in idx)
