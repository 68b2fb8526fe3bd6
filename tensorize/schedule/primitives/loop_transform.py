"""Schedule primitives that restructure loops: split, fuse, reorder, merge, add_unit_loop."""
from __future__ import annotations

from typing import Sequence

from ...ir import expr as E
from ...ir.stmt import For, ForKind, SeqStmt, Stmt
from ..analysis import (
    COMM_REDUCE, DATA_PAR, block_realizes_under, const_value, is_affine_binding, iter_kind_name, simplify,
    uses_any,
)
from ..base import ScheduleBase, primitive
from ..rv import BlockRV, LoopRV
from ..tree import replace_many
from ..surgery import substitute_in_nest
from .loop_exprs import _add_predicate, _as_expr, _product, _wider_dtype


class LoopTransform(ScheduleBase):
    """split, fuse, reorder, merge, add_unit_loop."""

    # -- split ----------------------------------------------------------------------------------
    def _check_plain_loop(self, for_node, prim: str) -> None:
        """As TVM: split and fuse take loops without annotations or a thread binding."""
        if for_node.annotations or for_node.thread_binding is not None:
            what = "annotations" if for_node.annotations else f"a binding to {for_node.thread_binding.thread_tag}"
            raise self._error(f"{prim}: loop {for_node.loop_var.name} has {what}; {prim} takes loops without "
                              "annotations or thread bindings (apply them after the loop transformations)", for_node)

    @primitive
    def split(self, loop: LoopRV, factors: Sequence, preserve_unit_iters: bool = True,
              disable_predication: bool = False) -> list[LoopRV]:
        """Split a loop into a nest of loops with extents ``factors`` (outermost first).

        At most one factor may be ``None``; it is inferred as ``ceil(extent / product(others))``.
        When the product of the factors exceeds the extent, the blocks under the loop get a
        ``T.where`` predicate that masks the extra iterations (unless ``disable_predication``,
        which is only correct when the extra iterations are harmless). New loops are named
        ``<loop>_0, <loop>_1, ...``.

        Parameters
        ----------
        loop : LoopRV
            The loop to split.
        factors : list of int, ExprRV or None
            The extents of the new loops, outermost first: ints, ExprRVs (from
            ``sample_perfect_tile``) or at most one ``None``.
        preserve_unit_iters : bool
            Keep unit loops in block bindings.
        disable_predication : bool
            Add no ``T.where`` for the extra iterations of an imperfect split.

        Returns
        -------
        list of LoopRV
            The new loops, outermost first.

        Examples
        --------
        ::


            # before
            for i in range(8):
                with T.block("B"):
                    vi = T.axis.spatial(8, i)
                    B[vi] = A[vi] + T.float32(1)

            i_0, i_1, i_2 = sch.split(i, factors=[2, 2, 2])

            # after
            for i_0, i_1, i_2 in T.grid(2, 2, 2):
                with T.block("B"):
                    vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
                    B[vi] = A[vi] + T.float32(1)
        """
        func_name, index, for_node = self._loop(loop)
        self._check_plain_loop(for_node, "split")
        if not isinstance(factors, (list, tuple)) or not factors:
            raise self._error(f"split needs a non-empty list of factors, got {factors!r}")
        values: list = []
        for f in factors:
            if f is None:
                values.append(None)
            elif isinstance(f, E.PrimExpr) and const_value(f) is None:
                values.append(f)  # a symbolic factor (TVM accepts them)
            else:
                v = self._int(f, "a split factor")
                if v <= 0:
                    raise self._error(f"split factors must be positive, got {v} in {list(factors)!r}", for_node)
                values.append(v)
        n_none = values.count(None)
        if n_none > 1:
            raise self._error(f"at most one split factor may be None, got {list(factors)!r}", for_node)
        var = for_node.loop_var
        extent = const_value(for_node.extent)
        if extent is not None and extent <= 0:
            raise self._error(f"cannot split loop {for_node.loop_var.name}: its extent is {extent}", for_node)
        sym_extent = extent if extent is not None else for_node.extent
        known = 1
        for v in values:
            if v is not None:
                known = _product(known, v, var.dtype)
        if n_none:
            if isinstance(sym_extent, int) and isinstance(known, int):
                inferred = -(-sym_extent // known)
            else:
                inferred = simplify(E.floordiv(E.add(_as_expr(sym_extent, var.dtype), _as_expr(known, var.dtype) - 1),
                                               _as_expr(known, var.dtype)))
                inferred = const_value(inferred) if const_value(inferred) is not None else inferred
            values[values.index(None)] = inferred
        total = 1
        for v in values:
            total = _product(total, v, var.dtype)
        if isinstance(total, int) and isinstance(sym_extent, int) and total < sym_extent:
            raise self._error(f"the product of the split factors {values} is {total}, smaller than the extent "
                              f"{extent} of loop {for_node.loop_var.name}; give factors whose product covers it "
                              "(or one None factor to infer)", for_node)

        new_vars = [E.Var(f"{var.name}_{k}", var.dtype) for k in range(len(values))]
        fused: E.PrimExpr | None = None
        strides, stride = [], 1
        for f in reversed(values):
            strides.append(stride)
            stride = _product(stride, f, var.dtype)
        strides.reverse()
        for v, f, st in zip(new_vars, values, strides):
            if isinstance(f, int) and f == 1 and not preserve_unit_iters:
                continue
            term = v if isinstance(st, int) and st == 1 else E.mul(v, _as_expr(st, var.dtype))
            fused = term if fused is None else E.add(fused, term)
        if fused is None:
            fused = E.make_const(var.dtype, 0)
        if const_value(for_node.min) != 0:
            fused = E.add(fused, for_node.min)
        body = substitute_in_nest(for_node.body, {var: fused})
        exact = (total == extent) if isinstance(total, int) else const_value(
            simplify(E.sub(_as_expr(total, var.dtype), for_node.extent))) == 0
        if not exact and not disable_predication:
            limit = E.add(for_node.min, for_node.extent) if const_value(for_node.min) != 0 else for_node.extent
            body = _add_predicate(body, E.LT(fused, E.make_const(var.dtype, const_value(limit)))
                                  if const_value(limit) is not None else fused < limit)
        for v, f in reversed(list(zip(new_vars, values))):
            body = For(v, E.make_const(var.dtype, 0), _as_expr(f, var.dtype), ForKind.SERIAL, body)
        self._replace(func_name, for_node, body)
        return [LoopRV(v, func_name) for v in new_vars]

    # -- fuse -----------------------------------------------------------------------------------
    @primitive
    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        """Fuse consecutive loops (each the only child of the one before) into one loop.

        The fused loop is named after the loops, ``<i>_<j>_fused``, and has the product of their
        extents; block bindings use ``fused // extent_j`` and ``fused % extent_j``.

        Parameters
        ----------
        *loops : LoopRV
            The loops to fuse, outermost first.
        preserve_unit_iters : bool
            Keep unit loops in block bindings.

        Returns
        -------
        LoopRV
            The fused loop.

        Examples
        --------
        ::


            # before
            for i, j in T.grid(128, 128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)

            ij = sch.fuse(i, j)

            # after
            for i_j_fused in range(16384):
                with T.block("B"):
                    vi = T.axis.spatial(128, i_j_fused // 128)
                    vj = T.axis.spatial(128, i_j_fused % 128)
                    B[vi, vj] = A[vi, vj] * T.float32(2)
        """
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = tuple(loops[0])
        if not loops:
            raise self._error("fuse needs at least one loop")
        resolved = [self._loop(rv) for rv in loops]
        func_name = resolved[0][0]
        fors = [r[2] for r in resolved]
        if len({id(f) for f in fors}) != len(fors):
            raise self._error("fuse got the same loop twice; pass each loop once, outermost first", fors[0])
        for f in fors:
            self._check_plain_loop(f, "fuse")
        for outer, inner in zip(fors, fors[1:]):
            if outer.body is not inner:
                raise self._error(f"fuse needs consecutive loops, each the only child of the one before: loop "
                                  f"{inner.loop_var.name} is not the direct and only child of loop "
                                  f"{outer.loop_var.name}", outer)
        extents = [const_value(f.extent) if const_value(f.extent) is not None else f.extent for f in fors]
        outer_ids = set()
        for f in fors:
            if uses_any(f.extent, outer_ids) or uses_any(f.min, outer_ids):
                raise self._error(f"fuse: loop {f.loop_var.name}'s range depends on an outer loop being fused; "
                                  "fuse takes loops whose ranges are independent of each other", f)
            outer_ids.add(id(f.loop_var))
        dtype = _wider_dtype([f.loop_var.dtype for f in fors])
        fused = E.Var("_".join(f.loop_var.name for f in fors) + "_fused", dtype)
        kept = [k for k, e in enumerate(extents) if not (isinstance(e, int) and e == 1) or preserve_unit_iters]
        vmap: dict[E.Var, E.PrimExpr] = {}
        stride = 1
        for pos in range(len(fors) - 1, -1, -1):
            f = fors[pos]
            if pos not in kept:
                value: E.PrimExpr = E.make_const(dtype, 0)
            else:
                value = fused  # TVM's form: fused % (stride * extent) // stride
                if pos != kept[0]:
                    value = E.floormod(value, _as_expr(_product(stride, extents[pos], dtype), dtype))
                if not (isinstance(stride, int) and stride == 1):
                    value = E.floordiv(value, _as_expr(stride, dtype))
                stride = _product(extents[pos], stride, dtype)
            if const_value(f.min) != 0:
                value = E.add(value, f.min)
            if f.loop_var.dtype != dtype:
                value = E.cast(f.loop_var.dtype, value)
            vmap[f.loop_var] = value
        body = substitute_in_nest(fors[-1].body, vmap)
        new_loop = For(fused, E.make_const(dtype, 0), _as_expr(stride, dtype), ForKind.SERIAL, body)
        self._replace(func_name, fors[0], new_loop)
        return LoopRV(fused, func_name)

    # -- reorder --------------------------------------------------------------------------------
    @primitive
    def reorder(self, *ordered_loops: LoopRV) -> None:
        """Reorder loops of one loop nest: the given loops take the positions they occupy now, in
        the given order; loops not given stay where they are.

        The loops must lie on one chain (each loop between the outermost and the innermost given
        has exactly one child, and no block sits between them); blocks under them must not have
        opaque iterators bound to them, and no loop's range may depend on a loop that moves
        inside it.

        Parameters
        ----------
        *ordered_loops : LoopRV
            The loops in their new order, outermost first.

        Examples
        --------
        ::


            # before
            for i_0, i_1, i_2 in T.grid(2, 2, 2):
                with T.block("B"):
                    vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
                    B[vi] = A[vi] + T.float32(1)

            sch.reorder(i_0, i_2, i_1)

            # after
            for i_0, i_2, i_1 in T.grid(2, 2, 2):
                with T.block("B"):
                    vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
                    B[vi] = A[vi] + T.float32(1)
        """
        if len(ordered_loops) == 1 and isinstance(ordered_loops[0], (list, tuple)):
            ordered_loops = tuple(ordered_loops[0])
        if not ordered_loops:
            return
        resolved = [self._loop(rv) for rv in ordered_loops]
        func_name, index = resolved[0][0], resolved[0][1]
        fors = [r[2] for r in resolved]
        if len({id(f) for f in fors}) != len(fors):
            raise self._error("reorder got the same loop twice; pass each loop once", fors[0])
        if len(fors) == 1:
            return
        given = {id(f) for f in fors}
        # The innermost given loop is the one with the most given loops among its ancestors.
        depth = {id(f): sum(1 for a in index.ancestors(f) if id(a) in given) for f in fors}
        bottom = max(fors, key=lambda f: depth[id(f)])
        path = [bottom]
        for a in index.ancestors(bottom):
            if sum(1 for p in path if id(p) in given) == len(fors):
                break
            path.append(a)
        path.reverse()
        if sum(1 for p in path if id(p) in given) != len(fors):
            raise self._error("reorder needs loops of one loop nest, each inside the other; these loops are in "
                              "different branches of the program", index.root)
        for outer, inner in zip(path, path[1:]):
            if not isinstance(outer, For):
                raise self._error(f"reorder cannot move loops across a {type(outer).__name__}: there is one "
                                  f"between the loops to reorder", outer)
            if outer.body is not inner:
                raise self._error(f"reorder needs a single-branch loop nest: loop {outer.loop_var.name} has more "
                                  f"than one child between the loops to reorder", outer)
        # Blocks under the nest: opaque iterators must not be bound to a moving loop.
        chain_ids = {id(p.loop_var) for p in path}
        for realize in block_realizes_under(bottom.body):
            for iv, value in zip(realize.block.iter_vars, realize.iter_values):
                if iv.iter_type not in (DATA_PAR, COMM_REDUCE) and uses_any(value, chain_ids):
                    raise self._error(f"block {realize.block.name_hint!r} has the {iter_kind_name(iv.iter_type)} "
                                      f"iterator {iv.var.name} bound to a loop being reordered; only spatial and "
                                      "reduction iterators can be reordered", realize)
            loops = index.loops_of(realize)
            if not is_affine_binding(realize, loops):
                moving = [f for f in loops if f is path[0] or index.is_ancestor(path[0], f)]
                if not is_affine_binding(realize, moving):
                    raise self._error(f"reorder: block {realize.block.name_hint!r} has bindings that are not affine "
                                      f"in the loops being reordered ({', '.join(map(str, realize.iter_values))}); "
                                      "reorder keeps only affine bindings valid", realize)
        positions = [k for k, p in enumerate(path) if id(p) in given]
        new_path = list(path)
        for pos, f in zip(positions, fors):
            new_path[pos] = f
        self._check_init_order(bottom, path, new_path)
        seen: set[int] = set()
        for f in new_path:
            if uses_any(f.min, chain_ids - seen) or uses_any(f.extent, chain_ids - seen):
                raise self._error(f"the range of loop {f.loop_var.name} depends on a loop that would move inside "
                                  "it; reorder cannot apply", f)
            seen.add(id(f.loop_var))
        body = bottom.body
        for f in reversed(new_path):
            body = f.replace(body=body)
        self._replace(func_name, path[0], body)

    def _check_init_order(self, bottom, path, new_path) -> None:
        """Reject a reorder that swaps two loops which each carry both a spatial and a reduction iterator
        of a block with an init (a fused spatial-reduction loop, split): the reduction instances of one
        output would no longer run in order, so its init (run at the first instance) could come after
        updates and wipe them. Such loops keep their relative order; other loops move freely."""
        for realize in block_realizes_under(bottom.body):
            if realize.block.init is None:
                continue
            kinds: dict[int, set] = {}
            for iv, value in zip(realize.block.iter_vars, realize.iter_values):
                for p in path:
                    if uses_any(value, {id(p.loop_var)}):
                        kinds.setdefault(id(p), set()).add(iv.iter_type)
            mixed = [id(p) for p in path if kinds.get(id(p), set()) >= {DATA_PAR, COMM_REDUCE}]
            if [i for i in map(id, new_path) if i in mixed] != mixed:
                names = ", ".join(p.loop_var.name for p in path if id(p) in mixed)
                raise self._error(f"reorder would change the order of loops {names}, which each carry both spatial "
                                  f"and reduction iterators of block {realize.block.name_hint!r}: its init would no "
                                  "longer run before all updates of an output; keep their order, or "
                                  "decompose_reduction first", realize)

    # -- merge ----------------------------------------------------------------------------------
    @primitive
    def merge(self, *loops: LoopRV) -> LoopRV:
        """Merge loop nests that run one after another into one nest running their bodies in turn.

        The given loops must sit at the same depth below their lowest common ancestor, start at
        0, have equal extents, and each loop on the way up must be the only child of its parent;
        loops on those paths must be serial without annotations.

        Parameters
        ----------
        *loops : LoopRV
            One loop of each nest, all at the same depth.

        Returns
        -------
        LoopRV
            The merged loop (the first nest's loop, whose variables are kept).

        Examples
        --------
        ::


            # before
            for i, j in T.grid(128, 128):
                with T.block("C"):
                    ...
            for i, j in T.grid(128, 128):
                with T.block("D"):
                    ...

            sch.merge(j_c, j_d)

            # after
            for i, j in T.grid(128, 128):
                with T.block("C"):
                    ...
                with T.block("D"):
                    ...
        """
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = tuple(loops[0])
        if len(loops) < 2:
            raise self._error("merge needs at least two loops")
        resolved = [self._loop(rv) for rv in loops]
        func_name, index = resolved[0][0], resolved[0][1]
        fors = [r[2] for r in resolved]
        if len({id(f) for f in fors}) != len(fors):
            raise self._error("merge got the same loop twice; pass each loop to merge once")
        ancestor_sets = [{id(a) for a in index.ancestors(f)} for f in fors]
        common = set.intersection(*ancestor_sets)
        lca = next((a for a in index.ancestors(fors[0]) if id(a) in common), None)
        if lca is None:
            raise self._error("merge needs loops with a common ancestor in one function")
        paths = []
        for f in fors:
            path = [f]
            for a in index.ancestors(f):
                if a is lca:
                    break
                path.append(a)
            path.reverse()
            paths.append(path)
        depth = len(paths[0])
        for f, path in zip(fors, paths):
            if len(path) != depth:
                raise self._error(f"merge needs loops at the same depth below their common ancestor; loop "
                                  f"{f.loop_var.name} is at depth {len(path)}, the first at {depth}", f)
            for outer, inner in zip(path, path[1:]):
                if not isinstance(outer, For) or outer.body is not inner:
                    raise self._error("merge needs single-branch loop nests below the common ancestor: "
                                      f"{type(outer).__name__} has more than one child", outer)
            for node in path:
                if not isinstance(node, For):
                    raise self._error(f"merge cannot merge across a {type(node).__name__}", node)
                if node.kind != ForKind.SERIAL or node.annotations or node.thread_binding is not None:
                    raise self._error(f"merge needs serial loops without annotations; loop {node.loop_var.name} "
                                      "is not", node)
                if const_value(node.min) != 0:
                    raise self._error(f"merge needs loops starting at 0; loop {node.loop_var.name} starts at "
                                      f"{node.min}", node)
        for level in range(depth):
            extents = {const_value(p[level].extent) for p in paths}
            if len(extents) != 1 or None in extents:
                raise self._error(f"merge needs equal constant extents at each level; got "
                                  f"{[str(p[level].extent) for p in paths]}", paths[0][level])
        bodies = [paths[0][-1].body]
        for path in paths[1:]:
            vmap = {node.loop_var: ref.loop_var for node, ref in zip(path, paths[0])}
            bodies.append(substitute_in_nest(path[-1].body, vmap))
        body: Stmt = SeqStmt.flatten(*bodies)
        for node in reversed(paths[0]):
            body = node.replace(body=body)
        replacements = {id(paths[0][0]): body}
        for path in paths[1:]:
            replacements[id(path[0])] = None
        self._set_body(func_name, replace_many(index.root, replacements))
        return LoopRV(fors[0].loop_var, func_name)

    # -- add_unit_loop --------------------------------------------------------------------------
    @primitive
    def add_unit_loop(self, block_or_loop) -> LoopRV:
        """Wrap a block or a loop in a new loop of extent 1, named ``u``.

        Parameters
        ----------
        block_or_loop : BlockRV or LoopRV
            What the new loop wraps.

        Returns
        -------
        LoopRV
            The new loop.

        Examples
        --------
        ::


            # before
            with T.block("C"):
                C[()] = A[()] + B[()]

            u = sch.add_unit_loop(sch.get_block("C"))

            # after
            for u in range(1):
                with T.block("C"):
                    C[()] = A[()] + B[()]
        """
        if isinstance(block_or_loop, BlockRV):
            func_name, index, stmt = self._block(block_or_loop)
            if index.parent_of(stmt) is None:
                raise self._error("add_unit_loop cannot wrap the root block of a function", stmt)
        elif isinstance(block_or_loop, LoopRV):
            func_name, index, stmt = self._loop(block_or_loop)
        else:
            raise TypeError(f"add_unit_loop takes a BlockRV or LoopRV, got {type(block_or_loop).__name__}")
        var = E.Var("u", "int32")
        self._replace(func_name, stmt, For(var, 0, 1, ForKind.SERIAL, stmt))
        return LoopRV(var, func_name)

