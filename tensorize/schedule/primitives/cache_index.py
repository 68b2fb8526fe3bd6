"""``cache_index``: the index (and other pure) arithmetic a block repeats for every instance is computed
once per distinct value into ``index_var_<k>`` buffers by new blocks placed before it, and the block
reads those buffers instead (TVM's ``CacheIndex``).

Which expressions: the largest pure subexpressions of the block's stores (no loads, calls, ramps or
broadcasts; not a lone variable or constant) that use a block iterator. With ``cse_thresh = 0`` each
distinct one is cached; otherwise one that occurs fewer than ``cse_thresh`` times gives way to its own
largest such subexpressions (counted as often as it occurred), until every candidate left occurs at
least ``cse_thresh`` times. The most complex come first (``index_var_0``)."""
from __future__ import annotations

from ...arith.expr_key import expr_key
from ...arith.loop_relax import make_analyzer
from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.functor import collect_vars, ir_transform, post_order_visit, substitute
from ...ir.stmt import Block, BufferRegion, BufferStore
from ..base import ScheduleBase, primitive
from ..rv import BlockRV
from ..surgery import realize_in_loops, rebuild_scope, scope_parts, top_child
from ..tree import replace_many
from .cache import unique_block_name
from .cache_placement import storage_scope_error

_LEAVES = (E.Var, E.IntImm, E.FloatImm, E.StringImm, E.BufferLoad, E.Ramp, E.Broadcast, E.Call)


def _cacheable(node, block_vars: set[int]) -> bool:
    """A pure, non-trivial scalar expression over at least one block iterator."""
    if not isinstance(node, E.PrimExpr) or isinstance(node, _LEAVES) or node.dtype == "bool":
        return False
    impure = []
    post_order_visit(node, lambda n: impure.append(n) if isinstance(n, (E.BufferLoad, E.Call, E.Ramp,
                                                                        E.Broadcast)) else None)
    return not impure and any(id(v) in block_vars for v in collect_vars(node))


def _largest(node, block_vars: set[int], skip_root: bool = False) -> list:
    """The largest cacheable subexpressions of ``node`` (itself included unless ``skip_root``), in
    pre-order, with repeats."""
    found = []

    def pre(n):
        if skip_root and n is node:
            return None
        if _cacheable(n, block_vars):
            found.append(n)
            return n  # keep it and skip its children
        return None

    ir_transform(node, pre, None)
    return found


def _size(expr) -> int:
    count = [0]
    post_order_visit(expr, lambda n: count.__setitem__(0, count[0] + 1))
    return count[0]


class CacheIndex(ScheduleBase):
    """cache_index."""

    @primitive
    def cache_index(self, block: BlockRV | str, storage_scope: str, cse_thresh: int = 0) -> list[BlockRV]:
        """Precompute the pure arithmetic ``block`` repeats (its index expressions) into buffers
        ``index_var_<k>`` (``storage_scope``), one new block ``index_<k>`` each, placed before the
        block's loop nest; the block reads them instead. A block with no such arithmetic is unchanged.

        Parameters
        ----------
        block : BlockRV or str
            The block (or its name).
        storage_scope : str
            The storage scope of the index buffers.
        cse_thresh : int
            How often an expression must occur to be cached as a whole; 0 caches every one (see the
            module docstring).

        Returns
        -------
        list of BlockRV
            The blocks that fill the index buffers, ``index_0`` first.

        Raises
        ------
        ScheduleError
            For a negative ``cse_thresh`` or an unknown storage scope.

        Examples
        --------
        ::


            # before
            for i0, i1, i2, i3 in T.grid(1, 3, 80, 80):
                with T.block("A"):
                    n, c, vi, vj = T.axis.remap("SSSS", [i0, i1, i2, i3])
                    B[n, c, vi, vj] = A[n, c, vi // 4 + vj // 4, vj // 2]

            sch.cache_index("A", "global")

            # after
            for ax0, ax1 in T.grid(80, 80):
                with T.block("index_0"):
                    v0, v1 = T.axis.remap("SS", [ax0, ax1])
                    index_var_0[v0, v1] = v0 // 4 + v1 // 4
            for ax0 in range(80):
                with T.block("index_1"):
                    v0 = T.axis.spatial(80, ax0)
                    index_var_1[v0] = v0 // 2
            for i0, i1, i2, i3 in T.grid(1, 3, 80, 80):
                with T.block("A"):
                    n, c, vi, vj = T.axis.remap("SSSS", [i0, i1, i2, i3])
                    B[n, c, vi, vj] = A[n, c, index_var_0[vi, vj], index_var_1[vj]]
        """
        func_name, tree, realize = self._block(block)
        thresh = self._int(cse_thresh, "cse_thresh")
        if thresh < 0:
            raise self._error(f"cache_index: cse_thresh must be 0 or more, got {thresh}", realize)
        why = storage_scope_error(storage_scope)
        if why is not None:
            raise self._error(f"cache_index: {why}", realize)
        blk = realize.block
        exprs = self._candidates(blk, thresh)
        if not exprs:
            return []
        bindings = {id(iv.var): value for iv, value in zip(blk.iter_vars, realize.iter_values)}
        loops = {id(f.loop_var): f for f in tree.loops_of(realize)}
        stages, buffers, table, names = [], [], {}, []
        for k, expr in enumerate(exprs):
            stage, buf, used = self._index_stage(tree, k, expr, bindings, loops, storage_scope, names)
            stages.append(stage)
            buffers.append(buf)
            table[expr_key(expr)] = E.BufferLoad(buf, used)
        new_block = self._rewrite(blk, table)
        scope, children = scope_parts(tree, realize)
        pos = top_child(tree, children, realize)
        children = children[:pos] + stages + [replace_many(children[pos], {id(realize): realize.replace(
            block=new_block)})] + children[pos + 1:]
        self._set_body(func_name, rebuild_scope(tree, scope, children, buffers))
        return [BlockRV(n, func_name) for n in names]

    @staticmethod
    def _candidates(blk: Block, thresh: int) -> list:
        """The expressions to cache, most complex first (ties in order of first appearance)."""
        block_vars = {id(iv.var) for iv in blk.iter_vars}
        table: dict = {}  # key -> [expr, count]
        stores = []
        post_order_visit(blk.body, lambda n: stores.append(n) if isinstance(n, BufferStore) else None)
        for store in stores:
            for node in [store.value, *store.indices]:
                for e in _largest(node, block_vars):
                    table.setdefault(expr_key(e), [e, 0])[1] += 1
        changed = thresh > 0
        while changed:
            changed = False
            for key, (expr, count) in list(table.items()):
                if count < thresh:
                    del table[key]
                    for sub in _largest(expr, block_vars, skip_root=True):
                        table.setdefault(expr_key(sub), [sub, 0])[1] += count
                    changed = True
        exprs = [e for e, _ in table.values()]
        return sorted(exprs, key=lambda e: -_size(e))  # stable: first appearance breaks ties

    def _index_stage(self, tree, k: int, expr, bindings, loops, storage_scope: str, names: list):
        """The loop nest filling ``index_var_<k>`` with ``expr`` over the block iterators it uses, the
        buffer, and those iterators (the indices the block reads it with)."""
        used = [v for v in collect_vars(expr) if id(v) in bindings]
        loop_vars = []
        for v in used:
            for lv in collect_vars(bindings[id(v)]):
                if id(lv) in loops and all(lv is not x for x in loop_vars):
                    loop_vars.append(lv)
        ana = make_analyzer([loops[id(lv)] for lv in loop_vars])
        shape = [E.make_const("int32", ana.const_int_bound(bindings[id(v)]).max_value + 1) for v in used]
        buf = Buffer(E.Var(f"index_var_{k}", E.PointerType(expr.dtype, storage_scope)), expr.dtype, shape,
                     name=f"index_var_{k}")
        new_loop_vars = {lv: E.Var(f"ax{i}", lv.dtype) for i, lv in enumerate(loop_vars)}
        ivars = [E.IterVar(E.Range.from_min_extent(E.make_const(v.dtype, 0), s), E.Var(f"v{i}", v.dtype),
                           E.IterVar.DataPar) for i, (v, s) in enumerate(zip(used, shape))]
        values = [substitute(bindings[id(v)], new_loop_vars) for v in used]
        indices = [iv.var for iv in ivars]
        body = BufferStore(buf, substitute(expr, dict(zip(used, indices))), indices)
        name = unique_block_name(tree, f"index_{k}", names)
        names.append(name)
        block = Block(ivars, [], [BufferRegion.from_point(buf, indices)], name, body)
        stage = realize_in_loops(values, [], block, [(new_loop_vars[lv], loops[id(lv)].extent) for lv in loop_vars])
        return stage, buf, used

    @staticmethod
    def _rewrite(blk: Block, table: dict) -> Block:
        """``blk`` with each cached expression read from its buffer, and those reads among its regions."""
        def pre(node):
            if isinstance(node, E.PrimExpr) and not isinstance(node, _LEAVES):
                return table.get(expr_key(node))
            return None

        body = ir_transform(blk.body, pre, None)
        reads = list(blk.reads) + [BufferRegion.from_point(load.buffer, load.indices) for load in table.values()]
        return blk.replace(body=body, reads=tuple(reads))


__all__ = ["CacheIndex"]
