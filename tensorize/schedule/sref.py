"""``StmtSRef`` and ``ScheduleState``: TVM's references to the blocks and loops of a schedule.

A ``StmtSRef`` points at a Block or a For of the schedule's current module; ``sch.get_sref(rv)``
returns the same reference for the same statement, and copies of a schedule have their own.
"""
from __future__ import annotations

from ..ir.stmt import Block, For
from .error import ScheduleError


class StmtSRef:
    """A reference to a Block or For statement of a schedule (``sref.stmt``)."""

    __slots__ = ("stmt",)

    def __init__(self, stmt):
        self.stmt = stmt

    def same_as(self, other) -> bool:
        """Whether ``other`` is this very reference (TVM's object identity).

        Parameters
        ----------
        other : object
            Another reference.

        Returns
        -------
        bool
            ``self is other``.
        """
        return self is other

    def __repr__(self) -> str:
        return f"StmtSRef({type(self.stmt).__name__})"


class ScheduleState:
    """The state of a schedule (``sch.state``): its module and the srefs of its statements."""

    def __init__(self, mod, debug_mask="all"):
        if hasattr(mod, "_srefs"):  # a Schedule's own state
            self._sch = mod
        else:
            from ..ir.function import IRModule, PrimFunc

            self._sch = _Holder(IRModule({"main": mod}) if isinstance(mod, PrimFunc) else mod)
        self.debug_mask = debug_mask

    @property
    def mod(self):
        """The schedule's current IRModule."""
        return self._sch.mod

    def get_sref(self, stmt) -> StmtSRef | None:
        """The sref of ``stmt`` (a Block or For of the current module); the same object on every call.

        Parameters
        ----------
        stmt : Block or For
            A statement of the current module.

        Returns
        -------
        StmtSRef
            Its reference.

        Raises
        ------
        TypeError
            When ``stmt`` is neither a Block nor a For.
        """
        if not isinstance(stmt, (Block, For)):
            raise TypeError(f"get_sref takes a Block or a For, got {type(stmt).__name__}")
        table = self._sch._srefs
        sref = table.get(id(stmt))
        if sref is None or sref.stmt is not stmt:
            sref = table[id(stmt)] = StmtSRef(stmt)
        return sref

    def replace(self, src_sref: StmtSRef, tgt_stmt, block_sref_reuse=None) -> None:
        """Replace the statement of ``src_sref`` by ``tgt_stmt`` (TVM's ``ScheduleState.Replace``).

        The path from the statement to the function root is rebuilt (the old module and every node
        a caller holds stay unchanged); the srefs of the rebuilt loops and blocks follow their new
        copies, srefs of statements that are gone point to ``None``, and ``block_sref_reuse`` maps an
        old block to the new block that takes over its sref.

        Parameters
        ----------
        src_sref : StmtSRef
            The sref of a Block, For or BlockRealize's block of the current module.
        tgt_stmt : Stmt
            The replacement (a Block replaces a Block, a For or BlockRealize a For or BlockRealize).
        block_sref_reuse : dict of Block to Block, optional
            Old block -> new block whose sref is the old one's.

        Examples
        --------
        >>> from tensorize.ir.stmt import Evaluate, For
        >>> state = ScheduleState(matmul())
        >>> loop = state.mod["main"].body.block.body
        >>> sref = state.get_sref(loop)
        >>> state.replace(sref, For(loop.loop_var, 0, 16, loop.kind, Evaluate(0)))
        >>> type(sref.stmt.body).__name__, state.mod["main"].body.block.body is sref.stmt
        ('Evaluate', True)
        """
        from ..ir.function import IRModule
        from .tree import _children, replace_child

        src = src_sref.stmt
        if src is None:
            raise ValueError("replace: the sref points to no statement (it was removed by an earlier replace)")
        mod = self.mod
        for gv, func in mod.functions.items():
            path = _path_to(getattr(func, "body", None), src, _children)
            if path is not None:
                break
        else:
            raise ValueError(f"replace: the {type(src).__name__} of the sref is not in the state's current module")
        moved = {id(src): tgt_stmt}
        new = tgt_stmt
        child = src
        for parent in reversed(path[:-1]):
            new_parent = replace_child(parent, child, new)
            moved[id(parent)] = new_parent
            child, new = parent, new_parent
        functions = dict(mod.functions)
        functions[gv] = func.with_body(new)
        new_mod = IRModule(functions, mod.attrs, mod.global_infos)
        reuse = {id(k): v for k, v in (block_sref_reuse or {}).items()}
        alive = set()
        _walk_ids(new, alive, _children)
        table = self._sch._srefs
        for key, sref in list(table.items()):
            stmt = sref.stmt
            if stmt is None or id(stmt) in alive:
                continue
            target = reuse.get(id(stmt), moved.get(id(stmt)) if id(stmt) != id(src) else None)
            if target is None and id(stmt) == id(src) and isinstance(src, For) and isinstance(tgt_stmt, For) \
                    and tgt_stmt.loop_var is src.loop_var:
                target = tgt_stmt  # as TVM: a loop keeps its sref when the new loop reuses its variable
            del table[key]
            sref.stmt = target if target is not None and id(target) in alive else None
            if sref.stmt is not None:
                table[id(sref.stmt)] = sref
        if hasattr(self._sch, "_indices"):
            self._sch._indices = {}
            self._sch._mod = new_mod
        else:
            self._sch.mod = new_mod

    def _get_cached_flags(self, block_sref: StmtSRef):
        """TVM's cached flags of a block (``affine_binding``, ``region_cover``, ``stage_pipeline``).

        Parameters
        ----------
        block_sref : StmtSRef
            The sref of a block of the current module.

        Returns
        -------
        CachedFlags
            The flags.
        """
        from .state_flags import compute_flags

        block = block_sref.stmt
        if not isinstance(block, Block):
            raise TypeError(f"cached flags belong to blocks, not to a {type(block).__name__}")
        mod = self.mod
        cache = getattr(self, "_flags", None)
        if cache is None or cache[0] is not mod:
            table = {}
            for func in mod.functions.values():
                if hasattr(func, "body"):
                    table.update(compute_flags(func.body))
            cache = self._flags = (mod, table)
        if id(block) not in cache[1]:
            raise ValueError(f"block {block.name_hint!r} is not in the schedule's current module")
        return cache[1][id(block)]


class _Holder:
    """The module and sref table of a ScheduleState made without a Schedule."""

    def __init__(self, mod):
        self.mod, self._srefs = mod, {}


def get_sref(sch, rv) -> StmtSRef:
    """``sch.get_sref(rv)``: the sref of a block or loop handle; ``IndexError`` when the handle's
    statement is not in this schedule (removed by a primitive, or made by a copy of the schedule).

    Parameters
    ----------
    sch : Schedule
        The schedule.
    rv : BlockRV, LoopRV or str
        A handle of ``sch`` (or a block's name).

    Returns
    -------
    StmtSRef
        The reference to the handle's statement.
    """
    try:
        stmt = sch.get(rv)
    except ScheduleError as err:
        raise IndexError(f"get_sref: {rv!r} does not refer to a statement of this schedule ({err})") from None
    return ScheduleState(sch).get_sref(stmt)


def _path_to(root, target, children) -> list | None:
    """The statements from ``root`` down to ``target`` (both included), or None when it is not there."""
    if root is None:
        return None
    stack = [(root, [root])]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        for child in children(node):
            stack.append((child, path + [child]))
    return None


def _walk_ids(root, out: set, children) -> None:
    stack = [root]
    while stack:
        node = stack.pop()
        out.add(id(node))
        stack.extend(children(node))
