"""Statement surgery the schedule primitives share, built on ``tree.StmtIndex``.

Removing a block with the loops that only wrap it, rebuilding a scope block with new children,
replacing buffers everywhere, substituting loop variables in a nest, and the sibling-block
dependence test (``conflicts``) of the compute-location primitives.

For example::

    index = StmtIndex(func.body)
    body = remove_stmt(index.root, removal_target(index, index.block("B")))
"""
from __future__ import annotations

from typing import Mapping

from ..ir import expr as E
from ..ir.buffer import Buffer
from ..ir.functor import StmtExprMutator, uses_any
from ..ir.stmt import Block, BlockRealize, BufferRegion, For, SeqStmt, Stmt, stmt_list
from .analysis import simplify
from .tree import StmtIndex, replace_many, replace_stmt


# -- dependences between sibling blocks -----------------------------------------------------------
def buffer_ids(regions) -> set[int]:
    """The ``id`` of the buffer of each region.

    Parameters
    ----------
    regions : list of BufferRegion
        The regions.

    Returns
    -------
    set of int
        The buffer ids.
    """
    return {id(r.buffer) for r in regions}


def conflicts(a: Block, b: Block) -> Buffer | None:
    """A buffer through which ``a`` and ``b`` depend on each other (read-after-write, write-after-read
    or write-after-write), or None.

    Parameters
    ----------
    a : Block
        A block.
    b : Block
        Another block.

    Returns
    -------
    Buffer or None
        A buffer of the dependence.
    """
    wa, wb = {id(r.buffer): r.buffer for r in a.writes}, {id(r.buffer): r.buffer for r in b.writes}
    ra, rb = buffer_ids(a.reads), buffer_ids(b.reads)
    for k, buf in wa.items():
        if k in rb or k in wb:
            return buf
    for k, buf in wb.items():
        if k in ra:
            return buf
    return None


# -- statement surgery ----------------------------------------------------------------------------
def removal_target(index: StmtIndex, realize: BlockRealize, stop: Stmt | None = None) -> Stmt:
    """The statement to remove to take ``realize`` out: the block with the loops that wrap only it
    (never ``stop`` itself nor anything above it).

    Parameters
    ----------
    index : StmtIndex
        The index of the function body.
    realize : BlockRealize
        The block.
    stop : Stmt, optional
        A statement the removal must not reach.

    Returns
    -------
    Stmt
        The statement to remove.
    """
    target: Stmt = realize
    parent = index.parent_of(target)
    while isinstance(parent, For) and parent is not stop and parent.body is target:
        target = parent
        parent = index.parent_of(target)
    return target


def remove_stmt(root: Stmt, target: Stmt) -> Stmt:
    """``root`` without ``target`` (a statement inside a sequence, or a loop nest wrapping it).

    Parameters
    ----------
    root : Stmt
        The statement to rewrite.
    target : Stmt
        The statement to remove.

    Returns
    -------
    Stmt
        The new root.
    """
    return replace_many(root, {id(target): None})


def children_of(loop: For) -> list[Stmt]:
    """The statements of a loop's body.

    Parameters
    ----------
    loop : For
        The loop.

    Returns
    -------
    list of Stmt
        The body's top-level statements.
    """
    return stmt_list(loop.body)


def contains(index: StmtIndex, ancestor: Stmt, stmt: Stmt) -> bool:
    """Whether ``stmt`` is ``ancestor`` or lies under it.

    Parameters
    ----------
    index : StmtIndex
        The index of the function body.
    ancestor : Stmt
        The outer statement.
    stmt : Stmt
        The statement.

    Returns
    -------
    bool
        True when ``ancestor`` contains ``stmt``.
    """
    return ancestor is stmt or index.is_ancestor(ancestor, stmt)


class BufferReplacer(StmtExprMutator):
    """Replaces buffers (by identity) everywhere: loads, stores, regions, allocations, match_buffers."""

    def __init__(self, buffer_map: Mapping[int, Buffer]):
        self.buffer_map = buffer_map

    def _buf(self, buf):
        return self.buffer_map.get(id(buf), buf)

    def visit_buffer_load_(self, op):
        new = super().visit_buffer_load_(op)
        buf = self._buf(new.buffer)
        return new if buf is new.buffer else new.replace(buffer=buf)

    def visit_buffer_store_(self, op):
        new = super().visit_buffer_store_(op)
        buf = self._buf(new.buffer)
        return new if buf is new.buffer else new.replace(buffer=buf)

    def visit_buffer_region(self, region):
        new = super().visit_buffer_region(region)
        buf = self._buf(new.buffer)
        return new if buf is new.buffer else BufferRegion(buf, new.region)

    def visit_block_(self, op):
        new = super().visit_block_(op)
        allocs = tuple(self._buf(b) for b in new.alloc_buffers)
        matches = tuple(m.replace(buffer=self._buf(m.buffer), source=self.visit_buffer_region(m.source))
                        for m in new.match_buffers)
        if all(a is b for a, b in zip(allocs, new.alloc_buffers)) and all(
                a.source is b.source and a.buffer is b.buffer for a, b in zip(matches, new.match_buffers)):
            return new
        return new.replace(alloc_buffers=allocs, match_buffers=matches)


def replace_buffers(stmt: Stmt, buffer_map: Mapping[int, Buffer]) -> Stmt:
    """``stmt`` with buffers swapped per ``{id(old): new}``.

    Parameters
    ----------
    stmt : Stmt
        The statement.
    buffer_map : dict of int to Buffer
        ``{id(old): new}``.

    Returns
    -------
    Stmt
        The new statement.
    """
    return BufferReplacer(buffer_map).visit(stmt)


def realize_in_loops(bindings, preds, block: Block, loops) -> Stmt:
    """``block`` realized with ``bindings`` under the conjunction of ``preds``, wrapped in serial
    loops ``for var in range(extent)`` for ``(var, extent)`` in ``loops`` (outermost first).

    Parameters
    ----------
    bindings : list of PrimExpr
        One binding per block iterator.
    preds : list of PrimExpr
        Predicates to conjoin.
    block : Block
        The block.
    loops : list of (Var, PrimExpr)
        The loops, outermost first.

    Returns
    -------
    Stmt
        The loop nest.
    """
    pred = E.convert(True)
    for p in preds:
        pred = E.logical_and(pred, p)
    stmt: Stmt = BlockRealize(bindings, pred, block)
    for var, ext in reversed(loops):
        stmt = For(var, 0, ext, body=stmt)
    return stmt


def seq(stmts: list[Stmt]) -> Stmt:
    """The statements as one statement (nested sequences flattened).

    Parameters
    ----------
    stmts : list of Stmt
        The statements.

    Returns
    -------
    Stmt
        A SeqStmt, or the single statement.
    """
    return SeqStmt.flatten(*stmts)


# -- the scope block of a block: its body as a list of top-level statements ----------------------
def scope_parts(tree: StmtIndex, realize: Stmt) -> tuple[BlockRealize | None, list[Stmt]]:
    """The scope BlockRealize around ``realize`` (None at a bare function root) and its body's
    top-level statements.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    realize : Stmt
        A statement in the scope.

    Returns
    -------
    tuple of (BlockRealize or None, list of Stmt)
        The scope and its statements.
    """
    scope = tree.parent_block_realize(realize)
    body = scope.block.body if scope is not None else tree.root
    return scope, stmt_list(body)


def top_child(tree: StmtIndex, children: list[Stmt], stmt: Stmt) -> int:
    """The position of the top-level statement of ``children`` that holds ``stmt``.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    children : list of Stmt
        The scope's statements.
    stmt : Stmt
        The statement.

    Returns
    -------
    int
        The position.
    """
    for pos, child in enumerate(children):
        if child is stmt or tree.is_ancestor(child, stmt):
            return pos
    raise AssertionError("statement is not in the scope")


def rebuild_scope(tree: StmtIndex, scope: BlockRealize | None, children: list[Stmt], new_buffers) -> Stmt:
    """The function body with the scope's body replaced by ``children`` and ``new_buffers``
    allocated in the scope (a root block is created when the function has none).

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    scope : BlockRealize or None
        The scope block (None: a function without a root block).
    children : list of Stmt
        The new body statements.
    new_buffers : list of Buffer
        Buffers to allocate in the scope.

    Returns
    -------
    Stmt
        The new function body.
    """
    body = seq(children)
    if scope is None:
        root = Block([], [], [], "root", body, alloc_buffers=list(new_buffers))
        return BlockRealize([], True, root)
    block = scope.block.replace(body=body, alloc_buffers=scope.block.alloc_buffers + tuple(new_buffers))
    return replace_stmt(tree, scope, scope.replace(block=block))


def replace_in_scope(tree: StmtIndex, stmt: Stmt, replacements: dict[int, Stmt | None], new_buffers) -> Stmt:
    """The function body with ``replacements`` (``{id(old): new}``) applied inside the scope block of
    ``stmt`` and ``new_buffers`` allocated in that scope.

    Parameters
    ----------
    tree : StmtIndex
        The index of the function's statements.
    stmt : Stmt
        The statement.
    replacements : dict of int to Stmt or None
        ``{id(old): new}``.
    new_buffers : list of Buffer
        Buffers to allocate in the scope.

    Returns
    -------
    Stmt
        The new function body.
    """
    scope = tree.parent_block_realize(stmt)
    body = scope.block.body if scope is not None else tree.root
    return rebuild_scope(tree, scope, stmt_list(replace_many(body, replacements)), new_buffers)


# -- substituting loop variables in a nest -------------------------------------------------------
class _NestSubstituter(StmtExprMutator):
    """Substitutes loop variables in a loop nest: in loop bounds, non-block statements and the
    bindings/predicates of block realizes, and inside a block only where it uses the variables
    directly (an opaque block; other blocks see outer loop variables through their bindings)."""

    def __init__(self, table: dict[int, E.PrimExpr]):
        self.table = table

    def visit_var_(self, op):
        new = self.table.get(id(op))
        return op if new is None else new

    visit_size_var_ = visit_var_

    def visit_block_realize_(self, op):
        values = self._exprs(op.iter_values)
        pred = self.visit_expr(op.predicate)
        # An opaque block may use outer loop variables directly (TVM accepts it): substitute there too.
        block = self.visit_stmt(op.block) if uses_any_var(op.block, self.table) else op.block
        if values is op.iter_values and pred is op.predicate and block is op.block:
            return op
        return BlockRealize(values, simplify(pred), block)


def uses_any_var(stmt: Stmt, table: dict[int, E.PrimExpr]) -> bool:
    """Whether ``stmt`` mentions a variable whose id is a key of ``table``.

    Parameters
    ----------
    stmt : Stmt
        The statement (a Block's regions are looked at too).
    table : dict of int to PrimExpr
        ``{id(var): replacement}``.

    Returns
    -------
    bool
        True when one of the variables occurs.
    """
    if not table:
        return False
    ids = table.keys()
    if uses_any(stmt, ids):
        return True
    if isinstance(stmt, Block):  # regions are not visited as expressions
        return any(uses_any(r.min, ids) or uses_any(r.extent, ids)
                   for region in list(stmt.reads) + list(stmt.writes) for r in region.region)
    return False


def substitute_in_nest(stmt: Stmt, vmap: Mapping[E.Var, E.PrimExpr]) -> Stmt:
    """``stmt`` with loop variables replaced per ``vmap`` (see ``_NestSubstituter``); bindings are simplified.

    Parameters
    ----------
    stmt : Stmt
        The statement.
    vmap : dict of Var to PrimExpr
        The substitution.

    Returns
    -------
    Stmt
        The new statement.
    """
    if not vmap:
        return stmt
    table = {id(k): E.convert(v) for k, v in vmap.items()}
    out = _NestSubstituter(table).visit(stmt)
    return _simplify_bindings(out)


def _simplify_bindings(stmt: Stmt) -> Stmt:
    """Simplify the binding expressions of block realizes in a nest (not inside blocks)."""
    if isinstance(stmt, BlockRealize):
        values = tuple(simplify(v) for v in stmt.iter_values)
        if all(a is b for a, b in zip(values, stmt.iter_values)):
            return stmt
        return stmt.replace(iter_values=values)
    if isinstance(stmt, SeqStmt):
        seq = [_simplify_bindings(s) for s in stmt.seq]
        return stmt if all(a is b for a, b in zip(seq, stmt.seq)) else SeqStmt(seq)
    body = getattr(stmt, "body", None)
    if isinstance(stmt, Block) or not isinstance(body, Stmt):
        return stmt
    changes = {}
    for name in ("body", "then_case", "else_case"):
        child = getattr(stmt, name, None)
        if isinstance(child, Stmt):
            new = _simplify_bindings(child)
            if new is not child:
                changes[name] = new
    return stmt.replace(**changes) if changes else stmt
