"""Finding and replacing statements inside an immutable PrimFunc body.

``StmtIndex`` walks a body once and records, for each statement, its parent, so that the loops
around a block, the blocks under a loop, and the path to the root are cheap to get;
``replace_stmt`` swaps one statement for another by rebuilding only the path to the root.
The statement surgery the primitives build on these (removing a block with its loops, rebuilding a
scope, replacing buffers) lives in ``surgery``.

For example::

    index = StmtIndex(func.body); realize = index.block("C"); index.loops_of(realize)
"""
from __future__ import annotations

from typing import Iterator

from ..errors import TVMValueError

from ..ir.node import Node
from ..ir.stmt import Block, BlockRealize, For, SeqStmt, Stmt


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
