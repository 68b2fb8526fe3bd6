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
from ...arith.loop_relax import block_region_in_loops, hull, loop_dom, make_analyzer
from ..tree import replace_many, replace_stmt
from .cache_placement import common_loop
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
        new_stmt = self._regenerate(tree, realize, loop_stmt, required, preserve_unit_loops, reverse, name)
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
                    preserve_unit_loops: bool, reverse: bool, name: str) -> Stmt:
        """The moved block under fresh loops covering what ``others`` consume (produce) per iteration."""
        blk = realize.block
        outer = tree.loops_of(loop_stmt) + [loop_stmt]
        ana = make_analyzer(outer)
        # Region of each buffer needed (compute_at) or provided (reverse) per iteration of the loop.
        needed: dict[int, list[E.Range]] = {}
        own = {id(r.buffer) for r in (blk.reads if reverse else blk.writes)}
        for s in others:
            inner = [f for f in tree.loops_of(s) if tree.is_ancestor(loop_stmt, f)]
            dom = loop_dom(inner)
            for region in (s.block.writes if reverse else s.block.reads):
                if id(region.buffer) not in own:
                    continue
                # As TVM: storage the threads share is filled for all of them, so the thread loops above
                # the target loop are relaxed too (a shared tile covers the thread block, not one warp).
                visible = _thread_visible_loops(outer, region.buffer.scope())
                rng = block_region_in_loops(s, region, {**loop_dom(visible), **dom} if visible else dom, ana)
                key = id(region.buffer)
                needed[key] = rng if key not in needed else hull(needed[key], rng, ana)
        # Solve the moved block's iterator ranges from its own accesses of those buffers.
        ranges: dict[int, E.Range] = {}
        ivars = {id(iv.var): iv for iv in blk.iter_vars}
        for region in (blk.reads if reverse else blk.writes):
            req = needed.get(id(region.buffer))
            if req is None:
                continue
            for axis, (acc, want) in enumerate(zip(region.region, req)):
                var, offset = _var_plus_const(acc.min)
                sign = 1
                if var is None and isinstance(acc.min, E.Sub) and isinstance(acc.min.a, E.IntImm) and isinstance(
                        acc.min.b, E.Var):  # c - v: a reversed axis (TVM solves it too)
                    var, offset, sign = acc.min.b, acc.min.a.value, -1
                if var is None or id(var) not in ivars or not _is_one(acc.extent):
                    if reverse and _uses_ivars(acc.min, ivars):
                        raise self._error(f"{name}: block {blk.name_hint!r} accesses {region.buffer.name!r} on axis "
                                          f"{axis} with the index {acc.min}, which is not an iterator plus a "
                                          "constant; its range cannot be matched to the produced region", realize)
                    continue
                if sign == 1:
                    new = E.Range.from_min_extent(ana.simplify(E.sub(want.min, offset)), want.extent)
                else:  # v = c - index over [min, min + extent)
                    lo = E.sub(E.sub(E.make_const(want.min.dtype, offset + 1), want.min), want.extent)
                    new = E.Range.from_min_extent(ana.simplify(lo), want.extent)
                old = ranges.get(id(var))
                if old is None:
                    ranges[id(var)] = new
                elif reverse:
                    if not (ana.can_prove_equal(old.min, new.min) and ana.can_prove_equal(old.extent, new.extent)):
                        raise self._error(f"{name}: block {blk.name_hint!r} reads {region.buffer.name!r} with "
                                          f"iterator {var.name} in several places needing different ranges", realize)
                else:
                    ranges[id(var)] = hull([old], [new], ana)[0]
        if reverse:
            for iv in blk.iter_vars:
                if id(iv.var) not in ranges and any(_uses_ivars(r.min, {id(iv.var): iv}) for reg in blk.reads
                                                    if id(reg.buffer) in own for r in reg.region):
                    raise self._error(f"{name}: iterator {iv.var.name} of block {blk.name_hint!r} is not "
                                      "determined by the produced region", realize)
        # New loops and bindings, in iterator order.
        bindings, loops, preds = [], [], []
        n_loops = 0
        for iv in blk.iter_vars:
            rng = ranges.get(id(iv.var), iv.dom)
            dom_lo, dom_hi = iv.dom.min, E.add(iv.dom.min, iv.dom.extent)
            if rng is not iv.dom and ana.can_prove(E.LE(rng.min, dom_lo)) and ana.can_prove(
                    E.GE(E.add(rng.min, rng.extent), dom_hi)):
                rng = iv.dom  # as TVM: a region wider than the iterator's domain is the domain
            extent = ana.simplify(rng.extent)
            ext_c = _const(extent)
            if ext_c is None:
                bound = ana.const_int_bound(extent).max_value
                if bound > (1 << 40):
                    raise self._error(f"{name}: the region of iterator {iv.var.name} has the unbounded extent "
                                      f"{extent}", realize)
                ext_c = bound
            if ext_c == 1 and not preserve_unit_loops:
                value = ana.simplify(rng.min)
                b = ana.const_int_bound(value)
                if b.min_value == b.max_value:  # as TVM: i0 of a unit loop is the constant 0
                    value = E.make_const(value.dtype, b.min_value)
            else:
                var = E.Var(f"ax{n_loops}", iv.var.dtype)
                n_loops += 1
                loops.append((var, ext_c))
                lo_s = ana.simplify(rng.min)
                value = var if _const(lo_s) == 0 else E.add(lo_s, var)  # TVM's form: min + ax
                if _const(extent) is None:
                    preds.append(E.LT(var, extent))
            lo_ok = ana.can_prove(E.GE(rng.min, dom_lo))
            hi_ok = ana.can_prove(E.LE(E.add(rng.min, extent), dom_hi))
            if not lo_ok:
                preds.append(_bound_pred(ana, value, dom_lo, lower=True))
            if not hi_ok:
                preds.append(_bound_pred(ana, value, dom_hi, lower=False))
            bindings.append(value)
        return realize_in_loops(bindings, preds, blk, loops)


def _thread_visible_loops(loops: list, scope: str) -> list:
    """The loops among ``loops`` bound to threads that all see one buffer of ``scope``: ``threadIdx.*`` for
    ``shared``, ``threadIdx.x`` (the lanes) for ``warp``, none otherwise."""
    if scope.startswith("shared"):
        prefix = "threadIdx"
    elif scope == "warp":
        prefix = "threadIdx.x"
    else:
        return []
    return [f for f in loops if f.thread_tag.startswith(prefix)]


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
