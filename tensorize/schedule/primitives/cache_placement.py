"""Where a cache stage goes and what it copies (the analysis behind ``cache_read``/``cache_write``).

TensorIR places a cache copy as TVM does:

* a buffer written inside the scope (an intermediate buffer, or an output for ``cache_write``): at the
  lowest loop (or the scope root) that holds both the writer and the first of the *related* blocks
  (the consumers that will read through the copy for ``cache_read``; the consumers that keep reading
  the original buffer for ``cache_write``), right before the child of that loop holding the related
  block. The copied region is the writer's write region relaxed over the loops *below* that
  position only, i.e. what one iteration of the enclosing loops produces;
* a buffer only read in the scope (a function input): at the start of the scope, copying the region
  the scope block declares it reads (the whole buffer at a function's root block);
* a written buffer nobody else reads: at the end of the scope.

For example::

    loc, pos = stage_location(tree, scope, writer, first_consumer)
    region = relax_below(tree, writer, writer_region, loc)
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir.buffer import Buffer
from ...ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, Stmt, stmt_list
from ...arith import Analyzer
from ...arith.loop_relax import block_region_in_loops, loop_dom
from ..tree import StmtIndex, replace_many
from ..surgery import realize_in_loops, rebuild_scope, seq, top_child

# The storage ranks TVM's runtime knows (``runtime::StorageScope``); a tag may follow after a dot.
_STORAGE_RANKS = ("global", "shared", "warp", "local", "wmma", "m16n8k8", "mma", "texture", "metal")


class PlacementError(ValueError):
    """The cache stage has no valid position; the message says why (the primitive adds the IR)."""


def storage_scope_error(scope) -> str | None:
    """Why ``scope`` is not a storage scope TVM accepts (``"global"``, ``"shared"``, ``"shared.dyn"``,
    ``"local"``, ``"warp"``, ``"wmma.matrix_a"``, ``"global.texture"`` ...), or None.

    Parameters
    ----------
    scope : str
        The storage scope to check.

    Returns
    -------
    str or None
        The error message, or None for a valid scope.
    """
    if not isinstance(scope, str) or not scope:
        return f"the storage scope must be a non-empty string, got {scope!r}"
    rank = scope.split(".", 1)[0]
    if rank not in _STORAGE_RANKS:
        return (f"unknown storage scope {scope!r}; the scope's first part must be one of "
                f"{', '.join(_STORAGE_RANKS)} (e.g. \"shared\", \"local\", \"wmma.matrix_a\")")
    return None


def reads_buffer(realize: BlockRealize, buf: Buffer) -> bool:
    """Whether block ``realize`` reads ``buf``.

    Parameters
    ----------
    realize : BlockRealize
        The block.
    buf : Buffer
        The buffer.

    Returns
    -------
    bool
        True when ``buf`` is among the block's reads.
    """
    return any(r.buffer is buf for r in realize.block.reads)


def writes_buffer(realize: BlockRealize, buf: Buffer) -> bool:
    """Whether block ``realize`` writes ``buf``.

    Parameters
    ----------
    realize : BlockRealize
        The block.
    buf : Buffer
        The buffer.

    Returns
    -------
    bool
        True when ``buf`` is among the block's writes.
    """
    return any(r.buffer is buf for r in realize.block.writes)


def region_of(regions, buf: Buffer) -> BufferRegion | None:
    """The region of ``buf`` among ``regions``, or None.

    Parameters
    ----------
    regions : list of BufferRegion
        A block's reads or writes.
    buf : Buffer
        The buffer.

    Returns
    -------
    BufferRegion or None
        The first region of ``buf``.
    """
    for r in regions:
        if r.buffer is buf:
            return r
    return None


# -- the insertion position -----------------------------------------------------------------------
def scope_children(tree: StmtIndex, scope: BlockRealize | None, loc: For | None) -> list[Stmt]:
    """The statements of the body the stage goes into: the loop ``loc``'s, or the scope's.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    scope : BlockRealize or None
        The scope block (None: a function without a root block).
    loc : For or None
        The loop whose body holds the stage (None: the scope's body).

    Returns
    -------
    list of Stmt
        The statements of that body.
    """
    if loc is not None:
        return stmt_list(loc.body)
    return stmt_list(scope.block.body if scope is not None else tree.root)


def stage_location(tree: StmtIndex, scope: BlockRealize | None, writer: BlockRealize,
                   related: BlockRealize) -> tuple[For | None, int]:
    """``(loc, pos)``: the lowest loop holding both ``writer`` and ``related`` (None: the scope root)
    and the index, among its body's statements, of the one holding ``related``; the stage goes
    there, after the writer's statement. ``related`` must follow ``writer`` in program order.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    scope : BlockRealize or None
        The scope block (None: a function without a root block).
    writer : BlockRealize
        The block writing the buffer.
    related : BlockRealize
        The block the stage must precede.

    Returns
    -------
    tuple of (For or None, int)
        The loop and the position in its body.
    """
    writer_anc = {id(a) for a in tree.ancestors(writer)}
    common = None
    for anc in tree.ancestors(related):
        if id(anc) in writer_anc:
            common = anc
            break
    loc = common
    while loc is not None and not isinstance(loc, For):
        if isinstance(loc, (Block, BlockRealize)):
            loc = None
            break
        loc = tree.parent_of(loc)
    children = scope_children(tree, scope, loc)
    pos = top_child(tree, children, related)
    wpos = top_child(tree, children, writer)
    if wpos >= pos:
        what = f"loop {loc.loop_var.name}" if loc is not None else "the scope"
        raise PlacementError(f"block {writer.block.name_hint!r} and block {related.block.name_hint!r} sit in the same "
                             f"statement of {what} (under a condition or let), so no position separates them")
    return loc, pos


def after_stage(tree: StmtIndex, loc: For | None, children: list[Stmt], pos: int, stmt: Stmt) -> bool:
    """Whether ``stmt`` runs after a stage inserted at ``pos`` of ``loc``'s body (in every iteration).

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    loc : For or None
        The loop whose body holds the stage (None: the scope's body).
    children : list of Stmt
        The statements of that body.
    pos : int
        The position of the stage.
    stmt : Stmt
        The statement.

    Returns
    -------
    bool
        True when ``stmt`` runs after the stage.
    """
    if loc is None:
        return top_child(tree, children, stmt) >= pos
    if tree.is_ancestor(loc, stmt):
        return top_child(tree, children, stmt) >= pos
    return tree.precedes(loc, stmt)


def common_loop(tree: StmtIndex, a: Stmt, b: Stmt) -> For | None:
    """The innermost loop around both ``a`` and ``b`` (within their scope block), or None.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    a : Stmt
        A statement.
    b : Stmt
        Another statement.

    Returns
    -------
    For or None
        The innermost common loop.
    """
    loops_a = {id(f) for f in tree.loops_of(a)}
    for f in reversed(tree.loops_of(b)):
        if id(f) in loops_a:
            return f
    return None


# -- the copied region ----------------------------------------------------------------------------
def context_analyzer(tree: StmtIndex, stmt: Stmt | None) -> Analyzer:
    """An analyzer knowing the ranges of every loop around ``stmt`` (``stmt`` included when it is a
    loop) and of the iterators of every block around it (inside a blockized scope the outer block's
    iterators appear in the indices).

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    stmt : Stmt or None
        The statement (None: an empty analyzer).

    Returns
    -------
    Analyzer
        The analyzer with the bounds bound.
    """
    ana = Analyzer()
    if stmt is None:
        return ana
    for node in [stmt] + tree.ancestors(stmt):
        if isinstance(node, For):
            ana.bind(node.loop_var, E.Range.from_min_extent(node.min, node.extent))
        elif isinstance(node, Block):
            for iv in node.iter_vars:
                ana.bind(iv.var, iv.dom)
    return ana


def stage_analyzer(tree: StmtIndex, scope: BlockRealize | None, loc: For | None) -> Analyzer:
    """The analyzer for a stage inserted into ``loc``'s body (the scope's body when ``loc`` is None).

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    scope : BlockRealize or None
        The scope block (None: a function without a root block).
    loc : For or None
        The loop whose body holds the stage (None: the scope's body).

    Returns
    -------
    Analyzer
        The analyzer.
    """
    return context_analyzer(tree, loc if loc is not None else (scope.block if scope is not None else None))


def relax_below(tree: StmtIndex, realize: BlockRealize, region: BufferRegion, loc: For | None) -> list[E.Range]:
    """``region`` of block ``realize`` relaxed over the loops between the block and ``loc`` (all its
    loops when ``loc`` is None): the part of the buffer one iteration of ``loc`` touches.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    realize : BlockRealize
        The block.
    region : BufferRegion
        One of its regions.
    loc : For or None
        The loop to relax up to.

    Returns
    -------
    list of Range
        The relaxed region, one range per buffer axis.
    """
    loops = tree.loops_of(realize)
    inner = loops if loc is None else [f for f in loops if f is not loc and tree.is_ancestor(loc, f)]
    ana = context_analyzer(tree, realize)
    relaxed = block_region_in_loops(realize, region, loop_dom(inner), ana)
    # Loop relaxation ignores the block predicate (an uneven split): clip constant ranges to the buffer.
    out = []
    for rng, dim in zip(relaxed, region.buffer.shape):
        lo, ext = rng.min, rng.extent
        if isinstance(lo, E.IntImm) and isinstance(ext, E.IntImm) and isinstance(dim, E.IntImm):
            start, stop = max(lo.value, 0), min(lo.value + ext.value, dim.value)
            if (start, stop) != (lo.value, lo.value + ext.value) and stop > start:
                rng = E.Range.from_min_extent(E.make_const(lo.dtype, start), E.make_const(ext.dtype, stop - start))
        out.append(rng)
    return out


def full_region(buf: Buffer) -> list[E.Range]:
    """The whole of ``buf``: ``[0, extent)`` on every axis.

    Parameters
    ----------
    buf : Buffer
        The buffer.

    Returns
    -------
    list of Range
        One range per axis.
    """
    return [E.Range.from_min_extent(0, s) for s in buf.shape]


def compact_copy_stage(name: str, src: Buffer, dst: Buffer, region: list[E.Range], local: str) -> Stmt:
    """Loops over the constant extents of ``region`` around block ``name`` copying between a buffer and
    its compact cache shaped like ``region`` (TVM's cache inside a non-root scope block): iterators
    ``v0, v1, ...`` over ``[0, extent)`` bound to the loops; the cache (``local``: ``"dst"`` for a read
    cache, ``"src"`` for a write cache) is indexed by ``v`` and the other buffer by ``region.min + v``.

    Parameters
    ----------
    name : str
        The copy block's name.
    src, dst : Buffer
        The buffers read and written.
    region : list of Range
        The region of the full buffer the cache holds (constant extents).
    local : str
        ``"dst"`` or ``"src"``: which of the two is the compact cache.

    Returns
    -------
    Stmt
        The loop nest.
    """
    loops, ivars, values = [], [], []
    for axis, rng in enumerate(region):
        ext = rng.extent
        var = E.Var(f"ax{axis}", ext.dtype)
        loops.append((var, ext))
        ivars.append(E.IterVar(E.Range.from_min_extent(E.make_const(ext.dtype, 0), ext), E.Var(f"v{axis}", ext.dtype),
                               E.IterVar.DataPar))
        values.append(var)
    vs = [iv.var for iv in ivars]
    full = [E.add(r.min, v) for r, v in zip(region, vs)]
    src_idx, dst_idx = (full, vs) if local == "dst" else (vs, full)
    body = BufferStore(dst, E.BufferLoad(src, src_idx), dst_idx)
    block = Block(ivars, [BufferRegion.from_point(src, src_idx)], [BufferRegion.from_point(dst, dst_idx)], name, body)
    return realize_in_loops(values, [], block, loops)


def copy_stage(name: str, src: Buffer, dst: Buffer, region: list[E.Range], ana: Analyzer) -> Stmt:
    """Loops ``ax0, ax1, ...`` over ``region`` around block ``name`` doing ``dst[v] = src[v]``, with
    spatial iterators ``v0, v1, ...`` over the buffers' shape and bindings ``region.min + ax``.

    ``ana`` knows the variables around the stage (see ``stage_analyzer``); ``region`` may use them.
    An extent that is not a constant becomes its upper bound plus a predicate, and a region that may
    leave the buffer is guarded, so the stage never touches memory outside ``src``/``dst``.

    Parameters
    ----------
    name : str
        The copy block's name.
    src : Buffer
        The buffer read.
    dst : Buffer
        The buffer written.
    region : list of Range
        The region copied.
    ana : Analyzer
        Knows the variables around the stage.

    Returns
    -------
    Stmt
        The loop nest.
    """
    shape = dst.shape
    loops, ivars, values, preds = [], [], [], []
    for axis, rng in enumerate(region):
        lo, ext = ana.simplify(rng.min), ana.simplify(rng.extent)
        loop_ext, guard_ext = ext, False
        if not isinstance(ext, E.IntImm):
            bound = ana.const_int_bound(ext).max_value
            if bound > (1 << 40):  # unbounded: copy the whole axis
                lo, loop_ext = E.make_const(lo.dtype, 0), shape[axis]
            else:
                loop_ext, guard_ext = E.make_const(ext.dtype, bound), True
        var = E.Var(f"ax{axis}", loop_ext.dtype)
        loops.append((var, loop_ext))
        value = ana.simplify(E.add(lo, var))
        if guard_ext:
            preds.append(var < ext)
        if not ana.can_prove(lo >= 0):
            preds.append(value >= 0)
        if not ana.can_prove(E.add(lo, loop_ext) <= shape[axis]):
            preds.append(value < shape[axis])
        dim = shape[axis]
        ivars.append(E.IterVar(E.Range.from_min_extent(E.make_const(dim.dtype, 0), dim),
                               E.Var(f"v{axis}", dim.dtype), E.IterVar.DataPar))
        values.append(value)
    vs = [iv.var for iv in ivars]
    body = BufferStore(dst, E.BufferLoad(src, vs), vs)
    block = Block(ivars, [BufferRegion.from_point(src, vs)], [BufferRegion.from_point(dst, vs)], name, body)
    return realize_in_loops(values, preds, block, loops)


# -- rewriting the scope --------------------------------------------------------------------------
def insert_stage(tree: StmtIndex, scope: BlockRealize | None, loc: For | None, pos: int, stage: Stmt,
                 replacements: dict[int, Stmt], new_buffers) -> Stmt:
    """The function body with ``replacements`` (``{id(old): new}``) applied in the scope, ``stage``
    inserted at ``pos`` of ``loc``'s body (the scope's body when ``loc`` is None) and
    ``new_buffers`` allocated in the scope block.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    scope : BlockRealize or None
        The scope block (None: a function without a root block).
    loc : For or None
        The loop whose body holds the stage (None: the scope's body).
    pos : int
        Where the stage goes in that body.
    stage : Stmt
        The copy stage.
    replacements : dict of int to Stmt
        ``{id(old): new}`` statements to replace in the scope.
    new_buffers : list of Buffer
        Buffers to allocate in the scope block.

    Returns
    -------
    Stmt
        The new function body.
    """
    children = [replace_many(c, replacements) for c in scope_children(tree, scope, loc)]
    children.insert(pos, stage)
    if loc is None:
        return rebuild_scope(tree, scope, children, new_buffers)
    repl = dict(replacements)
    repl[id(loc)] = loc.replace(body=seq(children))
    body = scope.block.body if scope is not None else tree.root
    return rebuild_scope(tree, scope, stmt_list(replace_many(body, repl)), new_buffers)


__all__ = ["compact_copy_stage",
           "PlacementError", "storage_scope_error", "stage_location", "after_stage", "common_loop", "relax_below",
           "full_region", "copy_stage", "insert_stage", "stage_analyzer", "context_analyzer", "scope_children", "reads_buffer",
           "writes_buffer", "region_of"]
