"""Schedule primitive: pad_einsum.

``pad_einsum(block, padding)`` rounds each iterator extent of an einsum-like block up to a multiple
of its padding factor, so that a fixed-size tensor intrinsic fits any shape (the TensorIR paper's
non-divisible shapes). Every buffer axis indexed by a padded iterator is padded: inputs are copied
into ``<name>_pad`` buffers by producer blocks that fill the padding with zeros, the block computes
into ``<output>_pad``, and a consumer block ``<output>_pad`` copies the valid part back.
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.functor import post_order_visit
from ...ir.op import if_then_else
from ...ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, Stmt
from ..base import ScheduleBase, primitive
from ...arith.loop_relax import make_analyzer
from ..surgery import removal_target, replace_buffers, replace_in_scope, seq
from ..rv import BlockRV
from .cache import new_buffer_like


def padded_extent(extent, factor: int, ana):
    """``extent`` rounded up to a multiple of ``factor`` (symbolic extents stay expressions).

    Parameters
    ----------
    extent : int or PrimExpr
        The extent.
    factor : int
        The multiple to round up to.
    ana : Analyzer
        The analyzer that simplifies symbolic extents.

    Returns
    -------
    int or PrimExpr
        The rounded-up extent.
    """
    if factor == 1:
        return extent
    if isinstance(extent, E.IntImm):
        return E.IntImm(extent.dtype, -(-extent.value // factor) * factor)
    return ana.simplify(E.mul(E.floordiv(E.add(extent, factor - 1), factor), factor))


def _accesses(blk: Block) -> list:
    """Every BufferLoad and BufferStore in the block's body and init."""
    found = []

    def collect(node):
        if isinstance(node, (E.BufferLoad, BufferStore)):
            found.append(node)

    post_order_visit(blk.body, collect)
    if blk.init is not None:
        post_order_visit(blk.init, collect)
    return found


def _vanishes(expr, zero_filled: set[int]) -> bool:
    """Whether ``expr`` is zero whenever the loads of buffers in ``zero_filled`` read padding."""
    if isinstance(expr, E.BufferLoad):
        return id(expr.buffer) in zero_filled
    if isinstance(expr, E.Mul):
        return _vanishes(expr.a, zero_filled) or _vanishes(expr.b, zero_filled)
    if isinstance(expr, (E.Add, E.Sub)):
        return _vanishes(expr.a, zero_filled) and _vanishes(expr.b, zero_filled)
    if isinstance(expr, E.Cast):
        return _vanishes(expr.value, zero_filled)
    return False


def _copy_nest(name: str, src: Buffer, dst: Buffer, shape, guard_shape=None) -> Stmt:
    """``dst[v] = src[v]`` over ``shape`` under loops ``i0, i1, ...``; with ``guard_shape`` the
    load is guarded (``v_k < guard_shape[k]``) and zero outside."""
    loops = [E.Var(f"i{k}", s.dtype) for k, s in enumerate(shape)]
    ivars = [E.IterVar(E.Range.from_min_extent(0, s), E.Var(f"v{k}", s.dtype), E.IterVar.DataPar)
             for k, s in enumerate(shape)]
    vs = [iv.var for iv in ivars]
    value = E.BufferLoad(src, vs)
    if guard_shape is not None:
        conds = [E.LT(v, g) for v, s, g in zip(vs, shape, guard_shape) if g is not s]
        cond = conds[0]
        for c in conds[1:]:
            cond = E.logical_and(cond, c)
        value = if_then_else(cond, value, E.make_const(src.dtype, 0))
    block = Block(ivars, [BufferRegion.from_point(src, vs)], [BufferRegion.from_point(dst, vs)], name,
                  BufferStore(dst, value, vs))
    stmt: Stmt = BlockRealize(loops, True, block)
    for var, ext in reversed(list(zip(loops, shape))):
        stmt = For(var, 0, ext, body=stmt)
    return stmt


class PadEinsum(ScheduleBase):
    """pad_einsum."""

    @primitive
    def pad_einsum(self, block: BlockRV, padding) -> None:
        """Pad the iteration domain of the einsum-like ``block`` so that the extent of iterator ``k``
        becomes a multiple of ``padding[k]``. Every buffer index of the block must be one of its
        iterators (or a constant), its loops must bind the iterators one to one and wrap only it.
        Padded inputs get zero-filled copies ``<name>_pad``; the output is computed into
        ``<name>_pad`` and copied back by a block of the same name. A padded reduction iterator
        needs an update ``C = C + x`` where ``x`` is zero when a padded input is.

        Parameters
        ----------
        block : BlockRV
            The einsum-like block.
        padding : list of int
            One multiple per block iterator.

        Before::

            for i, j, k in T.grid(127, 127, 127):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

        ``sch.pad_einsum(sch.get_block("C"), [32, 32, 32])``::

            A_pad = T.alloc_buffer((128, 128))
            B_pad = T.alloc_buffer((128, 128))
            C_pad = T.alloc_buffer((128, 128))
            for i0, i1 in T.grid(128, 128):
                with T.block("A_pad"):
                    v0, v1 = T.axis.remap("SS", [i0, i1])
                    A_pad[v0, v1] = T.if_then_else(v0 < 127 and v1 < 127, A[v0, v1], T.float32(0))
            for i0, i1 in T.grid(128, 128):
                with T.block("B_pad"):
                    ...
            for i, j, k in T.grid(128, 128, 128):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C_pad[vi, vj] = T.float32(0)
                    C_pad[vi, vj] = C_pad[vi, vj] + A_pad[vi, vk] * B_pad[vk, vj]
            for i0, i1 in T.grid(127, 127):
                with T.block("C_pad"):
                    v0, v1 = T.axis.remap("SS", [i0, i1])
                    C[v0, v1] = C_pad[v0, v1]
        """
        func_name, tree, realize = self._block(block)
        blk = realize.block
        name = blk.name_hint
        pads = [self._int(p, "padding") for p in padding]
        if len(pads) != len(blk.iter_vars):
            raise self._error(f"pad_einsum: block {name!r} has {len(blk.iter_vars)} iterators but {len(pads)} "
                              "padding factors were given; pass one factor per iterator", realize)
        if any(p <= 0 for p in pads):
            raise self._error(f"pad_einsum: padding factors must be positive, got {pads}", realize)
        scope = tree.parent_block_realize(realize)
        if scope is not None and tree.parent_block_realize(scope) is not None:
            raise self._error(f"pad_einsum: block {name!r} is inside block {scope.block.name_hint!r}, whose declared "
                              "regions would not cover the padded buffers; pad the block before blockize", realize)
        loops = tree.loops_of(realize)
        self._check_trivial_binding(tree, realize, loops)
        ana = make_analyzer(loops)
        new_ext = {id(iv.var): padded_extent(iv.dom.extent, p, ana) for iv, p in zip(blk.iter_vars, pads)}
        padded_iters = {k for k, iv in zip(new_ext, blk.iter_vars) if new_ext[k] is not iv.dom.extent}
        if not padded_iters:
            return
        new_shapes = self._padded_shapes(realize, new_ext, ana)
        written = {id(w.buffer) for w in blk.writes}
        padded = {k: v for k, v in new_shapes.items() if any(a is not b for a, b in zip(v[1], v[0].shape))}
        # Inputs that need a zero-filled copy: padded reads, except the output's own update under an init.
        fill = [r.buffer for r in blk.reads if id(r.buffer) in padded
                and not (id(r.buffer) in written and blk.init is not None)]
        fill = list({id(b): b for b in fill}.values())
        self._check_reduction(realize, padded_iters, {id(b) for b in fill}, padded)
        new_bufs, swap, producers, consumers = [], {}, [], []
        taken = set(tree.blocks)
        order = [r.buffer for r in blk.reads] + [w.buffer for w in blk.writes]
        rank = {}
        for k, b in enumerate(order):
            rank.setdefault(id(b), k)
        for key, (buf, shape) in sorted(padded.items(), key=lambda kv: rank.get(kv[0], len(order))):
            new = new_buffer_like(buf, f"{buf.name}_pad", buf.scope(), shape=list(shape))
            new_bufs.append(new)
            swap[key] = new
        for buf in fill:
            block_name = _fresh(taken, f"{buf.name}_pad")
            producers.append(_copy_nest(block_name, buf, swap[id(buf)], padded[id(buf)][1], buf.shape))
        for w in blk.writes:
            if id(w.buffer) in padded and not any(c[0] is w.buffer for c in consumers):
                block_name = _fresh(taken, f"{w.buffer.name}_pad")
                consumers.append((w.buffer, _copy_nest(block_name, swap[id(w.buffer)], w.buffer, w.buffer.shape)))
        new_ivars = tuple(iv.replace(dom=E.Range.from_min_extent(iv.dom.min, new_ext[id(iv.var)]))
                          for iv in blk.iter_vars)
        new_realize = replace_buffers(realize.replace(block=blk.replace(iter_vars=new_ivars)), swap)
        ext_of_loop = {id(v): new_ext[id(iv.var)] for iv, v in zip(blk.iter_vars, realize.iter_values)
                       if isinstance(v, E.Var)}
        stmt: Stmt = new_realize
        for loop in reversed(loops):
            stmt = loop.replace(extent=ext_of_loop.get(id(loop.loop_var), loop.extent), body=stmt)
        target = loops[0] if loops else realize
        new_nest = seq(producers + [stmt] + [c[1] for c in consumers])
        self._set_body(func_name, replace_in_scope(tree, target, {id(target): new_nest}, new_bufs))

    # -- checks --------------------------------------------------------------------------------
    def _check_trivial_binding(self, tree, realize: BlockRealize, loops: list[For]) -> None:
        blk = realize.block
        if not (isinstance(realize.predicate, E.IntImm) and realize.predicate.value):
            raise self._error(f"pad_einsum: block {blk.name_hint!r} has a predicate; it needs loops that bind its "
                              "iterators exactly", realize)
        loop_of = {id(f.loop_var): f for f in loops}
        used = set()
        for iv, value in zip(blk.iter_vars, realize.iter_values):
            ok = isinstance(value, E.Var) and id(value) in loop_of and id(value) not in used
            if ok:
                f = loop_of[id(value)]
                ok = (isinstance(f.min, E.IntImm) and f.min.value == 0 and isinstance(iv.dom.min, E.IntImm)
                      and iv.dom.min.value == 0 and make_analyzer({}).can_prove_equal(f.extent, iv.dom.extent))
            if not ok:
                raise self._error(f"pad_einsum: iterator {iv.var.name} of block {blk.name_hint!r} is bound to "
                                  f"{value}; every iterator must be bound to its own loop of the same extent "
                                  "starting at 0 (trivial binding)", realize)
            used.add(id(value))
        unbound = [f.loop_var.name for f in loops if id(f.loop_var) not in used]
        if unbound:
            raise self._error(f"pad_einsum: loops {unbound} around block {blk.name_hint!r} bind none of its "
                              "iterators; apply pad_einsum before compute_at or blockize", realize)
        if loops and removal_target(tree, realize) is not loops[0]:
            raise self._error(f"pad_einsum: the loops of block {blk.name_hint!r} must wrap only that block",
                              realize)

    def _padded_shapes(self, realize, new_ext, ana) -> dict[int, tuple[Buffer, list]]:
        """``{id(buffer): (buffer, new shape)}`` for every buffer the block accesses."""
        blk = realize.block
        out: dict[int, tuple[Buffer, list]] = {}
        for acc in _accesses(blk):
            buf = acc.buffer
            shape = []
            for axis, index in enumerate(acc.indices):
                if isinstance(index, E.IntImm):
                    shape.append(buf.shape[axis])
                    continue
                if not (isinstance(index, E.Var) and id(index) in new_ext):
                    raise self._error(f"pad_einsum: block {blk.name_hint!r} indexes {buf.name!r} on axis {axis} "
                                      f"with {index}; an einsum block indexes buffers only by its iterators or "
                                      "constants", realize)
                iv = next(iv for iv in blk.iter_vars if iv.var is index)
                if new_ext[id(index)] is iv.dom.extent:
                    shape.append(buf.shape[axis])
                    continue
                if not ana.can_prove_equal(buf.shape[axis], iv.dom.extent):
                    raise self._error(f"pad_einsum: axis {axis} of {buf.name!r} has extent {buf.shape[axis]} but is "
                                      f"indexed by iterator {index.name} of extent {iv.dom.extent}; padding needs "
                                      "them equal", realize)
                shape.append(new_ext[id(index)])
            prev = out.get(id(buf))
            if prev is not None and any(not ana.can_prove_equal(a, b) for a, b in zip(prev[1], shape)):
                raise self._error(f"pad_einsum: block {blk.name_hint!r} accesses {buf.name!r} with index patterns "
                                  "that need different paddings", realize)
            out[id(buf)] = (buf, shape)
        return out

    def _check_reduction(self, realize, padded_iters, zero_filled, padded) -> None:
        blk = realize.block
        red = [iv for iv in blk.iter_vars if iv.iter_type == E.IterVar.CommReduce and id(iv.var) in padded_iters]
        if not red:
            return
        body = blk.body
        why = None
        if not isinstance(body, BufferStore) or not isinstance(body.value, E.Add):
            why = "its body is not an update C[...] = C[...] + x"
        else:
            a, b = body.value.a, body.value.b
            same = (lambda e: isinstance(e, E.BufferLoad) and e.buffer is body.buffer
                    and all(x is y for x, y in zip(e.indices, body.indices)))
            x = b if same(a) else a if same(b) else None
            if x is None:
                why = "its body is not an update C[...] = C[...] + x"
            elif not _vanishes(x, zero_filled):
                why = f"the added term {x} is not zero when a zero-padded input is"
        if why is not None:
            raise self._error(f"pad_einsum: padding reduction iterator {red[0].var.name} of block "
                              f"{blk.name_hint!r} would add the padding into the result: {why}", realize)


def _fresh(taken: set[str], base: str) -> str:
    name = base
    n = 1
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    taken.add(name)
    return name
