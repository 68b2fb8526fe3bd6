"""Getting handles: ``get_block``, ``get_loops``, ``get_child_blocks``, ``get_producers``, ``get_consumers``."""
from __future__ import annotations

from ...ir.stmt import BlockRealize
from ..base import ScheduleBase, primitive
from ..rv import BlockRV, LoopRV


def _buffers(regions) -> set[int]:
    return {id(r.buffer) for r in regions}


class GetHandles(ScheduleBase):
    """Handle getters: ``get_block``, ``get_loops``, ``get_child_blocks``, ``get_producers``, ``get_consumers``, ``get_output_blocks``."""
    @primitive
    def get_block(self, name: str, func_name: str | None = None) -> BlockRV:
        """The block named ``name``.

        Parameters
        ----------
        name : str
            The block's name.
        func_name : str, optional
            The function to look in (default: the one ``work_on`` chose, or the only one).

        Returns
        -------
        BlockRV
            A handle to the block.

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> sch.get_block("C")
        BlockRV('C')
        """
        func_name = self._func_name(func_name)
        found = self._index(func_name).blocks.get(name)
        if not found:
            names = sorted(self._index(func_name).blocks)
            raise self._error(f"no block named {name!r} in function {func_name!r}; blocks are {names}")
        if len(found) > 1:
            raise self._error(f"{len(found)} blocks are named {name!r} in function {func_name!r}; names must be unique "
                              "to get a handle: rename one in the program")
        return BlockRV(name, func_name)

    get_sblock = get_block

    @primitive
    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        """The loops around ``block`` up to its enclosing block, outermost first.

        Parameters
        ----------
        block : BlockRV
            The block.

        Returns
        -------
        list of LoopRV
            The loops, outermost first.

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> sch.get_loops(sch.get_block("C"))
        [LoopRV(i), LoopRV(j), LoopRV(k)]
        """
        func_name, index, realize = self._block(block)
        return [LoopRV(f.loop_var, func_name) for f in index.loops_of(realize)]

    @primitive
    def get_child_blocks(self, block_or_loop) -> list[BlockRV]:
        """The blocks directly under a block or a loop (not nested in another block), in program order.

        Parameters
        ----------
        block_or_loop : BlockRV or LoopRV
            The parent.

        Returns
        -------
        list of BlockRV
            The child blocks in program order.
        """
        if isinstance(block_or_loop, BlockRV):
            func_name, index, stmt = self._block(block_or_loop)
        else:
            func_name, index, stmt = self._loop(block_or_loop)
        return [BlockRV(r.block.name_hint, func_name) for r in index.child_block_realizes(stmt)]

    def _siblings(self, block: BlockRV) -> tuple[str, BlockRealize, list[BlockRealize]]:
        func_name, index, realize = self._block(block)
        scope = index.parent_block_realize(realize)
        siblings = index.child_block_realizes(scope) if scope is not None else index.child_block_realizes(index.root)
        return func_name, realize, siblings

    @primitive
    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        """Blocks in the same scope, before ``block``, that write a buffer ``block`` reads.

        Parameters
        ----------
        block : BlockRV
            The consumer.

        Returns
        -------
        list of BlockRV
            The producers in program order.
        """
        func_name, realize, siblings = self._siblings(block)
        reads = _buffers(realize.block.reads)
        out = []
        for s in siblings:
            if s is realize:
                break
            if _buffers(s.block.writes) & reads:
                out.append(BlockRV(s.block.name_hint, func_name))
        return out

    @primitive
    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        """Blocks in the same scope, after ``block``, that read a buffer ``block`` writes.

        Parameters
        ----------
        block : BlockRV
            The producer.

        Returns
        -------
        list of BlockRV
            The consumers in program order.
        """
        func_name, realize, siblings = self._siblings(block)
        writes = _buffers(realize.block.writes)
        out, after = [], False
        for s in siblings:
            if s is realize:
                after = True
                continue
            if after and _buffers(s.block.reads) & writes:
                out.append(BlockRV(s.block.name_hint, func_name))
        return out

    @primitive
    def get_output_blocks(self, scope_block: BlockRV) -> list[BlockRV]:
        """Blocks under ``scope_block`` (nested ones included) that write the function's parameter buffers.

        Parameters
        ----------
        scope_block : BlockRV
            The scope (block) to look in.

        Returns
        -------
        list of BlockRV
            The blocks of the scope that write a function output.
        """
        func_name, index, realize = self._block(scope_block)
        params = {id(b) for b in self._func(func_name).buffer_map.values()}
        found = []  # as TVM: every block below the scope, nested ones included, in pre-order

        def walk(r):
            for child in index.child_block_realizes(r):
                if any(id(w.buffer) in params for w in child.block.writes):
                    found.append(child)
                walk(child)

        walk(realize)
        return [BlockRV(r.block.name_hint, func_name) for r in found]
