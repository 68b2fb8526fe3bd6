"""The cached flags TVM's ``ScheduleState`` keeps for each block: ``affine_binding``, ``region_cover``
and ``stage_pipeline``, computed as TVM computes them.

* ``affine_binding``: the block's bindings are affine in the loops between it and its scope block.
* ``region_cover`` (a block as a consumer): for every buffer it reads that blocks before it in its
  scope write, those writes cover what it reads, both taken over the loops below their lowest
  common ancestor (loops bound to threads count too for a ``shared``/``warp`` buffer, as TVM's
  storage scopes allow).
* ``stage_pipeline`` (a scope block): its child blocks have no write-after-read dependence and
  every consumer among them has ``region_cover``.

The written region is an under-estimate (only a write that detectably sweeps a whole box counts);
the read region an over-estimate: the check answers True only when coverage is certain.

>>> from tensorize.schedule.state_flags import CachedFlags
>>> CachedFlags(True, True, False).stage_pipeline
False
"""
from __future__ import annotations

from typing import NamedTuple

from ..arith import Analyzer
from ..arith.iter_map import detect_iter_map
from ..arith.linear import affine_lin
from ..arith.region import relax_region
from ..ir import expr as E
from ..ir.expr_build import max_value_expr, min_value_expr
from ..ir.functor import collect_vars, substitute
from ..ir.stmt import Block, BlockRealize, For, ForKind
from .analysis import is_affine_binding
from .tree import StmtIndex


class CachedFlags(NamedTuple):
    """The three flags of a block (TVM's ``CachedFlags``)."""

    affine_binding: bool
    region_cover: bool
    stage_pipeline: bool


def compute_flags(body) -> dict[int, CachedFlags]:
    """The flags of every block of a function body, by ``id`` of the Block.

    Parameters
    ----------
    body : Stmt
        A PrimFunc's body.

    Returns
    -------
    dict of int to CachedFlags
        The flags, by block identity.
    """
    index = StmtIndex(body)
    realizes = [r for found in index.blocks.values() for r in found]
    affine, cover, pipeline = {}, {}, {}
    for realize in realizes:
        scope = index.parent_block_realize(realize)
        affine[id(realize.block)] = True if scope is None and not realize.block.iter_vars else \
            is_affine_binding(realize, _loops_up_to(index, realize, scope))
        cover.setdefault(id(realize.block), True)
    for realize in realizes:
        pipeline[id(realize.block)] = _scope_pipeline(index, realize, cover)
    return {k: CachedFlags(affine[k], cover[k], pipeline[k]) for k in affine}


def _loops_up_to(index: StmtIndex, stmt, stop) -> list[For]:
    """The loops above ``stmt`` up to (not including) ``stop``, innermost first."""
    out = []
    for a in index.ancestors(stmt):
        if a is stop:
            break
        if isinstance(a, For):
            out.append(a)
    return out


def _scope_pipeline(index: StmtIndex, scope: BlockRealize, cover: dict) -> bool:
    children = index.child_block_realizes(scope)
    stage_pipeline = True
    readers: dict[int, list] = {}
    writers: dict[int, list] = {}
    raw: dict[int, list] = {}
    for child in children:
        blk = child.block
        deps = []
        for r in blk.reads:
            deps += writers.get(id(r.buffer), [])
        for w in blk.writes:
            if readers.get(id(w.buffer)):
                stage_pipeline = False  # write after read
        raw[id(child)] = list(dict.fromkeys(deps))
        for r in blk.reads:
            readers.setdefault(id(r.buffer), []).append(child)
        for w in blk.writes:
            writers.setdefault(id(w.buffer), []).append(child)
    for child in children:
        producers = raw[id(child)]
        if not producers:
            continue
        ok = _covers(index, scope, child, producers)
        cover[id(child.block)] = ok
        stage_pipeline = stage_pipeline and ok
    return stage_pipeline


def _covers(index: StmtIndex, scope: BlockRealize, consumer: BlockRealize, producers: list) -> bool:
    path = [consumer] + [a for a in index.ancestors(consumer)][: _depth_to(index, consumer, scope)]
    on_path = {id(p): p for p in path}
    by_lca: dict[int, list] = {}
    for producer in producers:
        for a in [producer] + index.ancestors(producer):
            if id(a) in on_path:
                by_lca.setdefault(id(a), []).append(producer)
                break
    read_bufs = {id(r.buffer) for r in consumer.block.reads}
    for lca in path:
        group = by_lca.get(id(lca))
        if not group:
            continue
        produced: dict[int, list] = {}
        for producer in group:
            for w in _unbound(producer, producer.block.writes):
                if id(w.buffer) in read_bufs:
                    produced.setdefault(id(w.buffer), []).append(_lower_bound(index, producer, lca, w))
        for r in _unbound(consumer, consumer.block.reads):
            boxes = produced.get(id(r.buffer))
            if not boxes:
                continue
            consumed = _upper_bound(index, consumer, lca, r)
            if not _box_covers(r.buffer, boxes, consumed):
                return False
    return True


def _depth_to(index: StmtIndex, stmt, scope) -> int:
    """How many ancestors of ``stmt`` lie below ``scope`` (the scope itself included)."""
    n = 0
    for a in index.ancestors(stmt):
        n += 1
        if a is scope:
            break
    return n


def _unbound(realize: BlockRealize, regions):
    """The regions with the block's iterators replaced by their bindings."""
    vmap = {iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    return [r.replace(region=[E.Range.from_min_extent(substitute(x.min, vmap), x.extent) for x in r.region])
            for r in regions]


def _relaxed_loops(index: StmtIndex, realize, lca, buffer) -> list[For]:
    loops = _loops_up_to(index, realize, lca)
    scope = buffer.scope()
    if scope in ("shared", "warp") or str(scope).startswith(("shared.", "warp.")):
        for a in [lca] + index.ancestors(lca):
            if isinstance(a, For) and a.kind == ForKind.THREAD_BINDING and a.thread_binding is not None:
                tag = a.thread_binding.thread_tag
                if tag.startswith("threadIdx") and (not str(scope).startswith("warp") or tag == "threadIdx.x"):
                    loops.append(a)
    return loops


def _upper_bound(index, realize, lca, region):
    loops = _relaxed_loops(index, realize, lca, region.buffer)
    dom = {f.loop_var: E.Range.from_min_extent(f.min, f.extent) for f in loops}
    return relax_region(region.region, dom, Analyzer())


def _lower_bound(index, realize, lca, region):
    """The box a write sweeps over the relaxed loops, or None when it may leave holes."""
    loops = _relaxed_loops(index, realize, lca, region.buffer)
    dom = {f.loop_var: E.Range.from_min_extent(f.min, f.extent) for f in loops}
    if not dom:
        return [x for x in region.region]
    iters = dict(dom)
    indices = []
    for k, x in enumerate(region.region):
        if isinstance(x.extent, E.IntImm) and x.extent.value == 1:
            indices.append(x.min)
        elif isinstance(x.extent, E.IntImm):
            extra = E.Var(f"_region{k}", x.min.dtype)
            iters[extra] = E.Range.from_min_extent(0, x.extent)
            indices.append(E.add(x.min, extra))
        else:
            return None
    # Variables of outer loops are constants here; the iterator map sees them as one-point iterators,
    # so only the shape of the sweep over the relaxed loops decides.
    known = {id(v) for v in iters}
    zero = {}
    for k, index in enumerate(indices):
        free = [v for v in collect_vars(index) if id(v) not in known]
        if free and affine_lin(index) is not None:  # a linear index: the outer terms only shift the sweep
            indices[k] = substitute(index, {v: E.make_const(v.dtype, 0) for v in free})
            continue
        for var in free:
            zero.setdefault(id(var), var)
    for var in zero.values():
        iters[var] = E.Range.from_min_extent(0, 1)
    try:
        res = detect_iter_map(indices, iters, True, "surjective", simplify_trivial_iterators=False)
    except (ValueError, TypeError):
        return None
    if res.errors:
        return None
    return relax_region(region.region, dom, Analyzer())


def _box_covers(buffer, boxes, consumed) -> bool:
    if any(b is None for b in boxes):
        return False
    ana = Analyzer()
    for axis, need in enumerate(consumed):
        shape = buffer.shape[axis]
        lo_need = max_value_expr(need.min, 0)
        hi_need = min_value_expr(E.add(need.min, need.extent), shape)
        intervals = sorted(((b[axis].min, E.add(b[axis].min, b[axis].extent)) for b in boxes),
                           key=lambda iv: _const_or(iv[0], 0))
        # the union of the produced intervals, when they chain without gaps
        lo, hi = intervals[0]
        for nlo, nhi in intervals[1:]:
            if not ana.can_prove(nlo <= hi):
                break
            hi = max_value_expr(hi, nhi)
        lo, hi = max_value_expr(lo, 0), min_value_expr(hi, shape)
        if not (ana.can_prove(lo <= lo_need) and ana.can_prove(hi_need <= hi)):
            return False
    return True


def _const_or(e, default):
    return e.value if isinstance(e, E.IntImm) else default
