"""Schedule primitives: compute_at, reverse_compute_at (sample_compute_location: ``compute_location``).

``compute_at`` moves a producer under a loop of its consumers and regenerates loops that cover
exactly the region the consumers read in one iteration of that loop; ``reverse_compute_at`` moves a
consumer under a loop of its producers, covering what they write. ``sample_compute_location``
picks one of the loops where ``compute_at`` applies (or the special root/inline locations).
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir.stmt import Block, BlockRealize, For, Stmt
from ..base import ScheduleBase, primitive
from ...arith.loop_relax import block_region_in_loops, loop_dom, make_analyzer
from ...ir.functor import collect_vars
from .compute_at_domain import DomainError, block_var_domains, nd_union, region_sets
from ..tree import replace_many, replace_stmt
from .cache_placement import common_loop
from .compute_at_predicate import carried_predicate
from .compute_at_update import update_conflict
from ..surgery import children_of, conflicts, contains, realize_in_loops, removal_target, remove_stmt, seq
from ..rv import BlockRV, LoopRV

# The special locations TVM's sample_compute_location returns: "root" (leave the block where it is)
# and "inline" (compute_inline). compute_at accepts LoopRVs holding these marks.
ROOT_MARK = E.Var("root")
INLINE_MARK = E.Var("inline")


def root_location(func_name: str = "") -> LoopRV:
    """The LoopRV meaning "stay at the root" (TVM's ``LoopRV`` of index -1).

    Parameters
    ----------
    func_name : str
        The function the location belongs to.

    Returns
    -------
    LoopRV
        The root mark.
    """
    return LoopRV(ROOT_MARK, func_name)


def inline_location(func_name: str = "") -> LoopRV:
    """The LoopRV meaning "compute inline" (TVM's ``LoopRV`` of index -2).

    Parameters
    ----------
    func_name : str
        The function the location belongs to.

    Returns
    -------
    LoopRV
        The inline mark.
    """
    return LoopRV(INLINE_MARK, func_name)


def _iter_kinds_ok(block: Block, allow_reduction: bool) -> str | None:
    """Why ``block`` is neither complete nor (if allowed) a reduction block, or None."""
    kinds = {iv.iter_type for iv in block.iter_vars}
    if kinds - {E.IterVar.DataPar, E.IterVar.CommReduce}:
        return "has iterators that are neither spatial nor reduction"
    is_reduction = E.IterVar.CommReduce in kinds or block.init is not None
    if is_reduction:
        if not allow_reduction:
            return "is a reduction block; only a complete block (spatial iterators only) can be moved here"
        if block.init is None:
            return "has reduction iterators but no T.init()"
        return None
    written = {id(r.buffer) for r in block.writes}
    if any(id(r.buffer) in written for r in block.reads):
        return "reads a buffer it writes, so it is not a complete block"
    return None


class ComputeAt(ScheduleBase):
    """compute_at, reverse_compute_at, sample_compute_location."""

    @primitive
    def compute_at(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False, index: int = -1) -> None:
        """Move producer ``block`` under ``loop`` (a loop above its consumers), with new loops covering
        the region its consumers read in one iteration of ``loop``.

        ``index`` picks the position among the loop's children (-1: the last valid one, just before
        the first consumer; -2: the first valid one). A ``loop`` from ``sample_compute_location`` may
        also be the root mark (no change) or the inline mark (``compute_inline``).

        Parameters
        ----------
        block : BlockRV
            The producer block to move.
        loop : LoopRV
            The loop to move it under (or a mark from ``sample_compute_location``).
        preserve_unit_loops : bool
            Keep new loops of extent 1.
        index : int
            The position among the loop's children (-1: last valid, -2: first valid).

        Before::

            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for i, j in T.grid(128, 128):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = B[vi, vj] + T.float32(1)

        ``sch.compute_at(sch.get_block("B"), sch.get_loops(sch.get_block("C"))[0])``::

            for i in range(128):
                for ax0 in range(128):
                    with T.block("B"):
                        vi = T.axis.spatial(128, i)
                        vj = T.axis.spatial(128, ax0)
                        B[vi, vj] = A[vi, vj] * T.float32(2)
                for j in range(128):
                    with T.block("C"):
                        ...
        """
        if loop.var is ROOT_MARK:
            self._block(block)
            return
        if loop.var is INLINE_MARK:
            self.compute_inline(block)
            return
        self._move_block(block, loop, preserve_unit_loops, index, reverse=False)

    @primitive
    def reverse_compute_at(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False,
                           index: int = -1) -> None:
        """Move consumer ``block`` under ``loop`` (a loop above its producers), with new loops covering
        the region its producers write in one iteration of ``loop``.

        On the "Before" program of ``compute_at``,
        ``sch.reverse_compute_at(sch.get_block("C"), sch.get_loops(sch.get_block("B"))[0])`` gives::

            for i in range(128):
                for j in range(128):
                    with T.block("B"):
                        ...
                for ax0 in range(128):
                    with T.block("C"):
                        vi = T.axis.spatial(128, i)
                        vj = T.axis.spatial(128, ax0)
                        C[vi, vj] = B[vi, vj] + T.float32(1)

        Parameters
        ----------
        block : BlockRV
            The consumer block to move.
        loop : LoopRV
            The loop to move it under.
        preserve_unit_loops : bool
            Keep new loops of extent 1.
        index : int
            The position among the loop's children (-1: last valid, -2: first valid).
        """
        self._move_block(block, loop, preserve_unit_loops, index, reverse=True)

    # -- the shared implementation -------------------------------------------------------------
    def _move_block(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool, index: int,
                    reverse: bool) -> None:
        name = "reverse_compute_at" if reverse else "compute_at"
        func_name, tree, realize = self._block(block)
        loop_func, _, loop_stmt = self._loop(loop)
        if loop_func != func_name:
            raise self._error(f"{name}: block {block.name!r} and loop {loop.var.name} are in different functions")
        blk = realize.block
        if index_is_inside(tree, realize, loop_stmt):
            raise self._error(f"{name}: loop {loop.var.name} is inside block {blk.name_hint!r} (an ancestor of block "
                              f"{blk.name_hint!r}); the target loop must be outside the block", realize)
        if tree.is_ancestor(loop_stmt, realize):
            raise self._error(f"{name}: loop {loop.var.name} is an ancestor of block {blk.name_hint!r}; the target "
                              "loop must be a loop of the block's consumers (producers), not of the block itself",
                              loop_stmt)
        scope = tree.parent_block_realize(realize)
        init = scope.block.init if scope is not None else None
        if init is not None and (init is realize or tree.is_ancestor(init, realize)):
            raise self._error(f"{name}: block {blk.name_hint!r} is part of the init of block "
                              f"{scope.block.name_hint!r}, which runs once before all its updates; moving it "
                              "under a loop would run it again. Use decompose_reduction first", realize)
        if tree.parent_block_realize(loop_stmt) is not scope:
            raise self._error(f"{name}: block {blk.name_hint!r} and loop {loop.var.name} are not in the same block "
                              "scope; the loop must be directly in the block's scope (not inside another block)",
                              loop_stmt)
        why = _iter_kinds_ok(blk, allow_reduction=True)
        if why is not None:
            raise self._error(f"{name}: block {blk.name_hint!r} {why}", realize)
        siblings = tree.child_block_realizes(scope if scope is not None else tree.root)
        params = {id(b): b for b in self._func(func_name).buffer_map.values()}
        if not reverse:
            for w in blk.writes:
                if id(w.buffer) in params:
                    raise self._error(f"compute_at: block {blk.name_hint!r} is an output block (it writes the "
                                      f"function parameter {w.buffer.name!r}); compute_at would compute only what "
                                      "its consumers read. Use cache_write first, or move its consumer with "
                                      "reverse_compute_at", realize)
        # The blocks the moved one must follow (reverse) or precede (compute_at), and dependences.
        own = {id(r.buffer) for r in (blk.reads if reverse else blk.writes)}
        required = []
        for s in siblings:
            if s is realize:
                continue
            before = tree.precedes(s, realize)
            if reverse and before and any(id(r.buffer) in own for r in s.block.writes):
                required.append(s)
            if not reverse and not before and any(id(r.buffer) in own for r in s.block.reads):
                required.append(s)
        role = "producer" if reverse else "consumer"
        if not required:
            raise self._error(f"{name}: block {blk.name_hint!r} has no {role} block in its scope, so there is "
                              "no region to cover", realize)
        outside = [s.block.name_hint for s in required if not tree.is_ancestor(loop_stmt, s)]
        if outside:
            raise self._error(f"{name} requires all the {role}s of block {blk.name_hint!r} to be under the loop: "
                              f"all {role}s of block {blk.name_hint!r} must be under loop {loop.var.name}, but "
                              f"{outside} are not; pick a loop that encloses every {role}", loop_stmt)
        if (conflict := update_conflict(tree, realize, loop_stmt, siblings)) is not None:
            raise self._error(f"{name}: {conflict}", loop_stmt)
        target = removal_target(tree, realize, stop=loop_stmt)
        if target is loop_stmt or (isinstance(target, For) and target.loop_var is loop.var):
            raise self._error(f"{name}: loop {loop.var.name} contains only block {blk.name_hint!r}", loop_stmt)
        # Position among the loop's children.
        children = children_of(loop_stmt)
        lo, hi = 0, len(children)
        for pos, child in enumerate(children):
            for s in tree.child_block_realizes(child) if not isinstance(child, BlockRealize) else [child]:
                if s is realize or conflicts(s.block, blk) is None:
                    continue
                if tree.precedes(s, realize):
                    lo = max(lo, pos + 1)
                else:
                    hi = min(hi, pos)
        # Another block under the same loop of the scope writing what the moved block writes: that
        # subtree has no compact dataflow (TVM). Writers in separate subtrees (a concat) are fine.
        own_writes = {id(w.buffer) for w in blk.writes}
        for s in siblings:
            shared = [w.buffer.name for w in s.block.writes if id(w.buffer) in own_writes]
            if s is not realize and shared and common_loop(tree, s, realize) is not None:
                raise self._error(f"{name}: block {blk.name_hint!r} is not a complete block of its scope: block "
                                  f"{s.block.name_hint!r} also writes buffer {shared[0]!r}, so the scope does not "
                                  "have compact dataflow; merge the writers into one block first", realize)
        # Blocks outside the loop that the move would jump over must not depend on the moved block.
        for s in siblings:
            if s is realize or contains(tree, loop_stmt, s):
                continue
            jumped = (tree.precedes(realize, s) and tree.precedes(s, loop_stmt)) if not reverse else (
                tree.precedes(s, realize) and tree.precedes(loop_stmt, s))
            buf = conflicts(s.block, blk) if jumped else None
            if buf is not None:
                raise self._error(f"{name}: moving block {blk.name_hint!r} under loop {loop.var.name} would move it "
                                  f"past block {s.block.name_hint!r}, which depends on it through buffer "
                                  f"{buf.name!r}", loop_stmt)
        if lo > hi:
            raise self._error(f"{name}: no position under loop {loop.var.name} comes after every producer and "
                              f"before every consumer of block {blk.name_hint!r}", loop_stmt)
        index = self._int(index, "index")
        if index == -1:
            pos = hi
        elif index == -2:
            pos = lo
        elif lo <= index <= hi:
            pos = index
        else:
            raise self._error(f"{name}: index {index} is not a valid position under loop {loop.var.name}; valid "
                              f"positions are {lo}..{hi} (or -1 for the last, -2 for the first)", loop_stmt)
        new_stmt = self._regenerate(tree, realize, loop_stmt, required, preserve_unit_loops, reverse, name,
                                    func_name)
        # Build the new loop body, then splice it in (the removal may be inside or outside the loop).
        new_children = []
        for p, child in enumerate(children):
            if p == pos:
                new_children.append(new_stmt)
            if child is target:
                continue
            if contains(tree, child, target):
                child = remove_stmt(child, target)
            new_children.append(child)
        if pos == len(children):
            new_children.append(new_stmt)
        new_loop = loop_stmt.replace(body=seq(new_children))
        if contains(tree, loop_stmt, target):
            body = replace_stmt(tree, loop_stmt, new_loop)
        else:
            body = replace_many(tree.root, {id(target): None, id(loop_stmt): new_loop})
        self._set_body(func_name, body)

    def _regenerate(self, tree, realize: BlockRealize, loop_stmt: For, others: list[BlockRealize],
                    preserve_unit_loops: bool, reverse: bool, name: str, func_name: str) -> Stmt:
        """The moved block under fresh loops covering what ``others`` consume (produce) per iteration."""
        blk = realize.block
        outer = tree.loops_of(loop_stmt) + [loop_stmt]
        ana = make_analyzer(outer)
        for f in outer:  # as TVM's analyzer: a serial loop of extent 1 stands for its min
            if _const(f.extent) == 1 and not f.thread_tag:
                ana.bind(f.loop_var, f.min)
        _mark_shape_vars_nonneg(ana, self._func(func_name))
        provided, buffers = {}, {}
        for region in (blk.reads if reverse else blk.writes):
            key = id(region.buffer)
            buffers[key] = region.buffer
            provided[key] = nd_union(provided.get(key), region_sets(region.region), ana)
        required = self._required_regions(tree, loop_stmt, outer, others, buffers, reverse, ana)
        try:
            solved: set = set()
            doms = block_var_domains(blk.iter_vars, provided, required, buffers, ana, solved)
        except DomainError as err:
            raise self._error(f"{name}: cannot solve the iterator domains of block {blk.name_hint!r}: {err}; the "
                              "moved block must access the buffer at iterators (times or plus constants)",
                              realize) from None
        if reverse:
            self._check_determined(blk, solved, name, realize)
        kept = {id(f) for f in outer}
        removed = {id(f.loop_var) for f in tree.loops_of(realize) if id(f) not in kept}
        return self._make_loops(blk, doms, ana, preserve_unit_loops, name, realize, removed)

    @staticmethod
    def _required_regions(tree, loop_stmt: For, outer: list, others: list[BlockRealize], buffers: dict,
                          reverse: bool, ana) -> dict:
        """``id(buffer) -> intervals``: what ``others`` read (write) of ``buffers`` per iteration of the loop."""
        required: dict = {}
        for s in others:
            inner = [f for f in tree.loops_of(s) if tree.is_ancestor(loop_stmt, f)]
            dom = loop_dom(inner)
            for region in (s.block.writes if reverse else s.block.reads):
                if id(region.buffer) not in buffers:
                    continue
                # As TVM: storage the threads share is filled for all of them, so the thread loops above
                # the target loop are relaxed too (a shared tile covers the thread block, not one warp).
                visible = [] if reverse else _thread_visible_loops(outer, region.buffer.scope())
                rng = block_region_in_loops(s, region, {**loop_dom(visible), **dom} if visible else dom, ana)
                key = id(region.buffer)
                required[key] = nd_union(required.get(key), region_sets(rng), ana)
        return required

    def _check_determined(self, blk: Block, solved: set, name: str, realize: BlockRealize) -> None:
        """reverse_compute_at: every iterator the block reads with must be fixed by the produced region."""
        for iv in blk.iter_vars:
            if iv.var not in solved and any(_uses_ivars(r.min, {id(iv.var): iv}) for reg in blk.reads
                                            for r in reg.region):
                raise self._error(f"{name}: iterator {iv.var.name} of block {blk.name_hint!r} is not "
                                  "determined by the produced region", realize)

    def _make_loops(self, blk: Block, doms: list, ana, preserve_unit_loops: bool, name: str,
                    realize: BlockRealize, removed: set) -> Stmt:
        """New loops and bindings, in iterator order, with predicates clipping to the bounds."""
        bindings, loops, preds = [], [], []
        for iv, info in zip(blk.iter_vars, doms):
            lo = ana.simplify(info.dom.min_value)
            extent = ana.simplify(E.sub(E.add(info.dom.max_value, 1), lo))
            if _const(extent) == 1 and not preserve_unit_loops:
                value = lo
                b = ana.const_int_bound(value)
                if b.min_value == b.max_value:  # as TVM: i0 of a unit loop is the constant 0
                    value = E.make_const(value.dtype, b.min_value)
            else:
                dtype = _wider(lo.dtype, extent.dtype)
                var = E.Var(f"ax{len(loops)}", dtype)
                if _const(extent) is None and ana.const_int_bound(extent).max_value > (1 << 40) and \
                        not collect_vars(extent):
                    raise self._error(f"{name}: the region of iterator {iv.var.name} has the unbounded extent "
                                      f"{extent}", realize)
                loops.append((var, extent))
                ana.bind(var, E.Range.from_min_extent(E.make_const(dtype, 0), extent))
                if _const(extent) == 1:
                    ana.bind(var, E.make_const(dtype, 0))  # as TVM's analyzer: a unit loop is its min
                value = var if _const(lo) == 0 else E.add(lo, var)  # TVM's form: min + ax
            bindings.append(value)
            if info.bound is not None:
                preds += self._bound_preds(ana, value, info.bound)
        carried, stuck = carried_predicate(realize, bindings, removed)  # the block's own T.where follows it
        if stuck is not None:
            raise self._error(f"{name}: block {blk.name_hint!r} has the predicate {realize.predicate}, whose part "
                              f"{stuck} reads the loops it leaves through bindings that are not plain loop "
                              "variables; move the block before splitting its loops", realize)
        preds += carried
        return realize_in_loops(bindings, preds, blk, loops)

    @staticmethod
    def _bound_preds(ana, value, bound) -> list:
        """``bound.min <= value`` and ``value <= bound.max`` where not provable."""
        out = []
        if bound.has_lower_bound() and not ana.can_prove(E.GE(value, bound.min_value)):
            out.append(_bound_pred(ana, value, bound.min_value, lower=True))
        if bound.has_upper_bound():
            limit = ana.simplify(E.add(bound.max_value, 1))
            if not _prove_lt(ana, value, limit):
                out.append(_bound_pred(ana, value, limit, lower=False))
        return out


def _thread_visible_loops(loops: list, scope: str) -> list:
    """The loops among ``loops`` bound to threads that all see one buffer of ``scope``: ``threadIdx.*``
    for ``shared``, ``threadIdx.x`` (the lanes) for ``warp``, none otherwise. (TVM's
    ``CanRelaxStorageUnderThread`` also relaxes vthread loops for ``shared``; the lowering here does not
    yet compact shared tiles whose bindings drop the vthread, so they stay unrelaxed.)"""
    if scope.startswith("shared"):
        prefixes = ("threadIdx",)
    elif scope in ("warp", "warp.group"):
        prefixes = ("threadIdx.x",)
    else:
        return []
    return [f for f in loops if f.thread_tag.startswith(prefixes)]


def index_is_inside(tree, realize: BlockRealize, loop_stmt: For) -> bool:
    """Whether the block ``realize`` lies under the loop ``loop_stmt``.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    realize : BlockRealize
        The block.
    loop_stmt : For
        The loop.

    Returns
    -------
    bool
        True when ``loop_stmt`` is an ancestor of ``realize``.
    """
    return tree.is_ancestor(realize, loop_stmt)


def _is_one(expr) -> bool:
    return isinstance(expr, E.IntImm) and expr.value == 1


def _const(expr) -> int | None:
    return expr.value if isinstance(expr, E.IntImm) else None


def _bound_pred(ana, value, bound, lower: bool):
    """``bound <= value`` or ``value < bound`` in TVM's form: the constant of ``value`` moves to the
    bound (``hh * 8 - 1 + ax >= 0`` is ``1 <= hh * 8 + ax``)."""
    v = ana.simplify(value)
    offset = 0
    if isinstance(v, E.Add) and isinstance(v.b, E.IntImm):
        v, offset = v.a, v.b.value
    elif isinstance(v, E.Sub) and isinstance(v.b, E.IntImm):
        v, offset = v.a, -v.b.value
    b = _const(bound)
    if b is None:
        return E.GE(value, bound) if lower else E.LT(value, bound)
    limit = E.make_const(v.dtype, b - offset)
    return E.LE(limit, v) if lower else E.LT(v, limit)


def _var_plus_const(expr):
    """``(var, c)`` when ``expr`` is ``var + c`` (or ``var``), else ``(None, 0)``."""
    if isinstance(expr, E.Var):
        return expr, 0
    if isinstance(expr, E.Add) and isinstance(expr.a, E.Var) and isinstance(expr.b, E.IntImm):
        return expr.a, expr.b.value
    if isinstance(expr, E.Sub) and isinstance(expr.a, E.Var) and isinstance(expr.b, E.IntImm):
        return expr.a, -expr.b.value
    return None, 0


def _uses_ivars(expr, ivars) -> bool:
    from ...ir.functor import collect_vars

    return any(id(v) in ivars for v in collect_vars(expr))


def _wider(a: str, b: str) -> str:
    """The wider of two integer dtypes (TVM: the new loop variable holds both its min and extent)."""
    return a if int(a[3:] or 32) >= int(b[3:] or 32) else b


def _mark_shape_vars_nonneg(ana, func) -> None:
    """As TVM's ``AddShapeVarBounds``: the variables in the parameter buffers' shapes are non-negative."""
    from ...arith.bound import ConstIntBound

    for buf in func.buffer_map.values():
        for dim in buf.shape:
            if isinstance(dim, E.Var):
                lo, hi = ana.const_int_bound(dim).min_value, ana.const_int_bound(dim).max_value
                if lo < 0:
                    ana.update(dim, ConstIntBound(0, hi))


def _prove_lt(ana, value, limit) -> bool:
    """``value < limit``, also through a symbolic divisor ``y >= 0`` (TVM proves these with its
    symbolic-bound strength): ``x % y < y``, and ``x // y < c`` from ``x < c * y``. A zero divisor
    cannot occur where the block runs: the loop over ``x`` is then empty."""
    if ana.can_prove(E.LT(value, limit)):
        return True
    v = ana.simplify(value)
    if type(v) not in (E.FloorMod, E.FloorDiv) or isinstance(v.b, E.IntImm) or not ana.can_prove(E.GE(v.b, 0)):
        return False
    if isinstance(v, E.FloorMod):
        return ana.can_prove_equal(v.b, limit)
    return ana.can_prove(E.LT(v.a, E.mul(limit, v.b)))
