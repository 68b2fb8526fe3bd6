"""Finding and replacing statements inside an immutable PrimFunc body.

``StmtIndex`` walks a body once and records, for each statement, its parent, so that the loops
around a block, the blocks under a loop, and the path to the root are cheap to get;
``replace_stmt`` swaps one statement for another by rebuilding only the path to the root.
The statement surgery the primitives share lives here too: removing a block with the loops that
only wrap it, rebuilding a scope with new children, replacing buffers, and the sibling-block
dependence test (``conflicts``) of the compute-location primitives.

For example::

    index = StmtIndex(func.body); realize = index.block("C"); index.loops_of(realize)
"""
from __future__ import annotations

from typing import Iterator, Mapping

from ..errors import TVMValueError

from ..ir import expr as E
from .analysis import simplify
from ..ir.buffer import Buffer
from ..ir.functor import StmtExprMutator
from ..ir.node import Node
from ..ir.stmt import Block, BlockRealize, BufferRegion, For, SeqStmt, Stmt, stmt_list


def _children(stmt: Stmt) -> Iterator[Stmt]:
    if isinstance(stmt, SeqStmt):
        yield from stmt.seq
    elif isinstance(stmt, BlockRealize):
        yield stmt.block
    elif isinstance(stmt, Block):
        if stmt.init is not None:
            yield stmt.init
        yield stmt.body
    else:
        for name in ("body", "then_case", "else_case"):
            child = getattr(stmt, name, None)
            if isinstance(child, Stmt):
                yield child


class StmtIndex:
    """Parent links and name/var lookups for one function body (built in one walk)."""

    __slots__ = ("root", "parent", "blocks", "loops", "order")

    def __init__(self, root: Stmt):
        self.root = root
        self.parent: dict[int, Stmt | None] = {id(root): None}
        self.blocks: dict[str, list[BlockRealize]] = {}
        self.loops: dict[int, For] = {}
        self.order: dict[int, int] = {}
        # One iterative pre-order walk; the type tests are inlined because replaying a trace
        # builds an index after nearly every primitive.
        parent, blocks, loops, order = self.parent, self.blocks, self.loops, self.order
        stack = [root]
        pop, push = stack.pop, stack.append
        n = 0
        while stack:
            stmt = pop()
            order[id(stmt)] = n
            n += 1
            t = type(stmt)
            if t is For:
                loops[id(stmt.loop_var)] = stmt
                children = (stmt.body,)
            elif t is BlockRealize:
                name = stmt.block.name_hint
                found = blocks.get(name)
                if found is None:
                    blocks[name] = [stmt]
                else:
                    found.append(stmt)
                children = (stmt.block,)
            elif t is SeqStmt:
                children = stmt.seq
            elif t is Block:
                children = (stmt.body,) if stmt.init is None else (stmt.init, stmt.body)
            else:
                children = tuple(_children(stmt))
            for child in children:
                parent[id(child)] = stmt
            for child in reversed(children):
                push(child)

    def block(self, name: str) -> BlockRealize | None:
        """The block realize of the block named ``name``, or None.

        Parameters
        ----------
        name : str
            The block name.

        Returns
        -------
        BlockRealize or None
            The first block of that name.
        """
        found = self.blocks.get(name)
        return found[0] if found else None

    def loop(self, var) -> For | None:
        """The loop of loop variable ``var``, or None.

        Parameters
        ----------
        var : Var
            The loop variable.

        Returns
        -------
        For or None
            The loop.
        """
        return self.loops.get(id(var))

    def parent_of(self, stmt: Stmt) -> Stmt | None:
        """The statement directly above ``stmt``, or None at the root.

        Parameters
        ----------
        stmt : Stmt
            The statement.

        Returns
        -------
        Stmt or None
            The parent.
        """
        return self.parent.get(id(stmt))

    def ancestors(self, stmt: Stmt) -> list[Stmt]:
        """Statements from ``stmt``'s parent up to the root (innermost first).

        Parameters
        ----------
        stmt : Stmt
            The statement.

        Returns
        -------
        list of Stmt
            The ancestors, innermost first.
        """
        out = []
        p = self.parent.get(id(stmt))
        while p is not None:
            out.append(p)
            p = self.parent.get(id(p))
        return out

    def parent_block_realize(self, stmt: Stmt) -> BlockRealize | None:
        """The nearest enclosing BlockRealize (the scope block), or None at the function root.

        Parameters
        ----------
        stmt : Stmt
            The statement.

        Returns
        -------
        BlockRealize or None
            The scope block.
        """
        for a in self.ancestors(stmt):
            if isinstance(a, BlockRealize):
                return a
        return None

    def loops_of(self, stmt: Stmt) -> list[For]:
        """The loops between ``stmt`` and its enclosing block, outermost first.

        Parameters
        ----------
        stmt : Stmt
            The statement.

        Returns
        -------
        list of For
            The loops, outermost first.
        """
        loops = []
        for a in self.ancestors(stmt):
            if isinstance(a, (Block, BlockRealize)):
                break
            if isinstance(a, For):
                loops.append(a)
        return loops[::-1]

    def child_block_realizes(self, stmt: Stmt) -> list[BlockRealize]:
        """Block realizes directly under ``stmt`` (not inside another block), in program order.

        Parameters
        ----------
        stmt : Stmt
            The statement.

        Returns
        -------
        list of BlockRealize
            The child blocks.
        """
        out: list[BlockRealize] = []
        start = stmt.block if isinstance(stmt, BlockRealize) else stmt

        def walk(s: Stmt):
            for c in _children(s):
                if isinstance(c, BlockRealize):
                    out.append(c)
                else:
                    walk(c)

        if isinstance(start, Block):
            walk(start)
        else:
            walk(start)
        return out

    def is_ancestor(self, maybe_ancestor: Stmt, stmt: Stmt) -> bool:
        """Whether ``maybe_ancestor`` lies above ``stmt``.

        Parameters
        ----------
        maybe_ancestor : Stmt
            The candidate ancestor.
        stmt : Stmt
            The statement.

        Returns
        -------
        bool
            True when it is a (strict) ancestor.
        """
        return any(a is maybe_ancestor for a in self.ancestors(stmt))

    def precedes(self, a: Stmt, b: Stmt) -> bool:
        """Whether ``a`` comes before ``b`` in program order.

        Parameters
        ----------
        a : Stmt
            A statement.
        b : Stmt
            Another statement.

        Returns
        -------
        bool
            True when ``a`` comes first.
        """
        return self.order[id(a)] < self.order[id(b)]


def replace_child(parent: Stmt, old: Stmt, new: Stmt | None) -> Stmt:
    """``parent`` with its direct child ``old`` replaced by ``new`` (``None`` removes it from a sequence).

    Parameters
    ----------
    parent : Stmt
        The parent.
    old : Stmt
        Its child.
    new : Stmt or None
        The replacement (None: remove).

    Returns
    -------
    Stmt
        The new parent.
    """
    if isinstance(parent, SeqStmt):
        seq = [new if s is old else s for s in parent.seq]
        seq = [s for s in seq if s is not None]
        return SeqStmt.flatten(*seq)
    if isinstance(parent, BlockRealize):
        return parent.replace(block=new)
    changes = {}
    for name in ("body", "then_case", "else_case", "init"):
        if getattr(parent, name, None) is old:
            changes[name] = new
    if not changes:
        raise TVMValueError(f"{type(parent).__name__} does not hold the statement to replace")
    return parent.replace(**changes)


def replace_stmt(index: StmtIndex, old: Stmt, new: Stmt | None) -> Stmt:
    """The root with ``old`` replaced by ``new``: only the path from ``old`` to the root is rebuilt.

    Parameters
    ----------
    index : StmtIndex
        The index of the function body.
    old : Stmt
        The statement to replace.
    new : Stmt or None
        The replacement (None: remove).

    Returns
    -------
    Stmt
        The new root.
    """
    cur_old, cur_new = old, new
    parent = index.parent_of(old)
    while parent is not None:
        rebuilt = replace_child(parent, cur_old, cur_new)
        cur_old, cur_new = parent, rebuilt
        parent = index.parent_of(parent)
    if cur_new is None:
        raise TVMValueError("cannot remove the root statement")
    return cur_new


def replace_many(root: Stmt, replacements: dict[int, Stmt | None]) -> Stmt:
    """Replace several statements (keyed by ``id`` of the old one) in one walk.

    Parameters
    ----------
    root : Stmt
        The statement to rewrite.
    replacements : dict of int to Stmt or None
        ``{id(old): new}``; None removes.

    Returns
    -------
    Stmt
        The new root.
    """
    def rebuild(stmt: Stmt) -> Stmt | None:
        if id(stmt) in replacements:
            return replacements[id(stmt)]
        changes: dict[str, object] = {}
        if isinstance(stmt, SeqStmt):
            seq = [rebuild(s) for s in stmt.seq]
            if all(a is b for a, b in zip(seq, stmt.seq)):
                return stmt
            return SeqStmt.flatten(*[s for s in seq if s is not None])
        if isinstance(stmt, BlockRealize):
            b = rebuild(stmt.block)
            return stmt if b is stmt.block else stmt.replace(block=b)
        for name in ("init", "body", "then_case", "else_case"):
            child = getattr(stmt, name, None)
            if isinstance(child, Stmt):
                new = rebuild(child)
                if new is not child:
                    changes[name] = new
        return stmt.replace(**changes) if changes else stmt

    out = rebuild(root)
    if out is None:
        raise TVMValueError("cannot remove the root statement")
    return out


def is_node(x) -> bool:
    """Whether ``x`` is an IR node.

    Parameters
    ----------
    x : object
        Anything.

    Returns
    -------
    bool
        True for a Node.
    """
    return isinstance(x, Node)


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

    _methods: dict = {}

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
        matches = tuple(m.replace(source=self.visit_buffer_region(m.source)) for m in new.match_buffers)
        if all(a is b for a, b in zip(allocs, new.alloc_buffers)) and all(
                a.source is b.source for a, b in zip(matches, new.match_buffers)):
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
    bindings/predicates of block realizes, but not inside blocks (a block sees outer loop variables
    only through its bindings)."""

    _methods: dict = {}

    def __init__(self, table: dict[int, E.PrimExpr]):
        self.table = table

    def visit_var_(self, op):
        new = self.table.get(id(op))
        return op if new is None else new

    visit_size_var_ = visit_var_

    def visit_block_realize_(self, op):
        values = self._exprs(op.iter_values)
        pred = self.visit_expr(op.predicate)
        if values is op.iter_values and pred is op.predicate:
            return op
        return BlockRealize(values, simplify(pred), op.block)


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
