"""``cache_inplace``: a buffer a block updates in place (reads and writes it, e.g. through an external
call on its data pointer) is copied into a cache right before the block and back right after it, and
the block works on the cache (TVM's ``CacheInplace``)."""
from __future__ import annotations

from ...ir import expr as E
from ...ir.functor import substitute
from ..base import primitive
from ..rv import BlockRV
from ..surgery import replace_in_scope, seq
from .cache import Cache, _CacheSwapper, new_buffer_like, unique_block_name
from .cache_placement import context_analyzer, copy_stage, region_of


class CacheInplace(Cache):
    """cache_inplace."""

    @primitive
    def cache_inplace(self, block: BlockRV | str, read_buffer_index, storage_scope: str) -> list[BlockRV]:
        """Copy the ``read_buffer_index``-th read buffer of ``block`` (an index, the Buffer or its name),
        which the block also writes, into a new buffer ``<buffer>_<scope>`` right before the block and
        back right after it; the block then reads and writes the cache, its opaque accesses to the
        buffer's data pointer included. Both copies cover the region the block reads.

        Parameters
        ----------
        block : BlockRV or str
            The block updating the buffer in place (or its name).
        read_buffer_index : int, Buffer or str
            Which read buffer of ``block`` to cache; the block must write it too.
        storage_scope : str
            The cache's storage scope, e.g. ``"local"``.

        Returns
        -------
        list of BlockRV
            The copy into the cache and the copy back, in that order.

        Raises
        ------
        ScheduleError
            When the block does not write the buffer it reads (use ``cache_read``), or the scope is
            not a storage scope.

        Examples
        --------
        ::


            # before
            for i0 in range(1):
                with T.block("ext_call"):
                    T.reads(data_io[0:64])
                    T.writes(data_io[0:64])
                    T.evaluate(T.call_extern("call_impl", data_io.data, dtype=""))

            copy_in, copy_out = sch.cache_inplace("ext_call", 0, "local")

            # after
            for i0 in range(1):
                for ax0 in range(64):
                    with T.block("data_io_local"):
                        v0 = T.axis.spatial(64, ax0)
                        data_io_local[v0] = data_io[v0]
                with T.block("ext_call"):
                    T.reads(data_io_local[0:64])
                    T.writes(data_io_local[0:64])
                    T.evaluate(T.call_extern("call_impl", data_io_local.data, dtype=""))
                for ax0 in range(64):
                    with T.block("data_io_local_1"):
                        v0 = T.axis.spatial(64, ax0)
                        data_io[v0] = data_io_local[v0]
        """
        func_name, tree, realize, _, buf, _, _ = self._cache_target(block, read_buffer_index, "read", storage_scope,
                                                                 "cache_inplace")
        written = region_of(realize.block.writes, buf)
        if written is None:
            raise self._error(f"cache_inplace: block {realize.block.name_hint!r} reads {buf.name!r} but does not "
                              "write it, so nothing is updated in place; use cache_read", realize)
        cache = new_buffer_like(buf, f"{buf.name}_{storage_scope}", scope=storage_scope)
        # the region one instance of the block reads, in the variables around it
        bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
        region = [E.Range.from_min_extent(substitute(r.min, bindings), substitute(r.extent, bindings))
                  for r in region_of(realize.block.reads, buf).region]
        ana = context_analyzer(tree, realize)
        name_in = unique_block_name(tree, cache.name)
        name_out = unique_block_name(tree, cache.name, (name_in,))
        copy_in = copy_stage(name_in, buf, cache, region, ana)
        copy_out = copy_stage(name_out, cache, buf, region, ana)
        swapped = _CacheSwapper(buf, cache).visit(realize)
        body = replace_in_scope(tree, realize, {id(realize): seq([copy_in, swapped, copy_out])}, [cache])
        self._set_body(func_name, body)
        return [BlockRV(name_in, func_name), BlockRV(name_out, func_name)]


__all__ = ["CacheInplace"]
