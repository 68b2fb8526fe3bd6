"""``StmtSRef`` and ``ScheduleState``: TVM's references to the blocks and loops of a schedule.

A ``StmtSRef`` points at a Block or a For of the schedule's current module; ``sch.get_sref(rv)``
returns the same reference for the same statement, and copies of a schedule have their own.
"""
from __future__ import annotations

import sys

from ..ir.function import FunctionMap, IRModule, PrimFunc
from ..ir.node import _set
from ..ir.stmt import Block, BlockRealize, For, SeqStmt
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

        Copy-on-write, as TVM: going down from the module (module, function map, function, then the
        statements from the function body to the statement), the nodes above the first one that is
        referenced from outside the state are changed in place, that one and the ones below it are
        copied (the old versions, which someone else holds, stay unchanged). The srefs of the copied
        loops and blocks follow their new copies, srefs of statements that are gone point to
        ``None``, and ``block_sref_reuse`` maps an old block to the new block that takes over its sref.

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
        src = src_sref.stmt
        if src is None:
            raise ValueError("replace: the sref points to no statement (it was removed by an earlier replace)")
        _check_replace_kinds(src, tgt_stmt)
        holder = self._sch
        if hasattr(holder, "_indices"):
            holder._indices = {}  # the statement indices hold the nodes: drop them before counting references
        chain, gv = self._chain_to(src)
        if src is tgt_stmt:
            return
        self._flags = None
        shared = _first_shared(chain, holder._srefs)
        new_mod, moved = _rebuild(chain, gv, tgt_stmt, shared)
        new_body = new_mod.functions[gv].body
        self._update_srefs(src, tgt_stmt, new_body, moved, block_sref_reuse)
        holder._state_version = getattr(holder, "_state_version", 0) + 1
        if hasattr(holder, "_indices"):
            holder._indices = {}
            holder._mod = new_mod
        else:
            holder.mod = new_mod

    def _chain_to(self, src) -> tuple[list, object]:
        """``[module, its function map, the function, the function body, ..., src]`` and the
        GlobalVar of the function holding ``src``."""
        from .tree import _children

        mod = self.mod
        for gv, func in mod.functions.items():
            path = _path_to(getattr(func, "body", None), src, _children)
            if path is not None:
                return [mod, mod.functions, func, *path], gv
        raise ValueError(f"replace: the {type(src).__name__} of the sref is not in the state's current module")

    def _update_srefs(self, src, tgt_stmt, new_body, moved: dict, block_sref_reuse) -> None:
        """Point the srefs of rebuilt statements to their new copies, srefs of removed statements to
        None, and a block of ``block_sref_reuse`` (or a loop whose variable the new loop reuses) to
        its successor."""
        from .tree import _children

        reuse = {id(k): v for k, v in (block_sref_reuse or {}).items()}
        alive: set = set()
        _walk_ids(new_body, alive, _children)
        table = self._sch._srefs
        for key, sref in list(table.items()):
            stmt = sref.stmt
            if stmt is None or id(stmt) in alive:
                continue
            target = reuse.get(id(stmt), moved.get(id(stmt)) if stmt is not src else None)
            if target is None and stmt is src and isinstance(src, For) and isinstance(tgt_stmt, For) \
                    and tgt_stmt.loop_var is src.loop_var:
                target = tgt_stmt  # as TVM: a loop keeps its sref when the new loop reuses its variable
            del table[key]
            sref.stmt = target if target is not None and id(target) in alive else None
            if sref.stmt is not None:
                table[id(sref.stmt)] = sref

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
        version = getattr(self._sch, "_state_version", 0)
        cache = getattr(self, "_flags", None)
        if cache is None or cache[0] is not mod or cache[1] != version:
            table = {}
            for func in mod.functions.values():
                if hasattr(func, "body"):
                    table.update(compute_flags(func.body))
            cache = self._flags = (mod, version, table)
        if id(block) not in cache[2]:
            raise ValueError(f"block {block.name_hint!r} is not in the schedule's current module")
        return cache[2][id(block)]


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


def _check_replace_kinds(src, tgt) -> None:
    """TVM's check of a replacement: a For is replaced by a For or a BlockRealize, a Block by a Block."""
    if (isinstance(src, For) and isinstance(tgt, (For, BlockRealize))) or \
            (isinstance(src, Block) and isinstance(tgt, Block)):
        return
    raise TypeError(f"replace: a {type(src).__name__} cannot be replaced by a {type(tgt).__name__} (a For is "
                    "replaced by a For or a BlockRealize, a Block by a Block)")


def _first_shared(chain: list, srefs: dict) -> int:
    """The index of the first node of ``chain`` referenced from outside the state (the last one,
    the statement being replaced, when no node above it is).

    A node of the chain is held by its parent (the state holds the module), by ``chain`` itself and
    possibly by its sref; any other reference is someone else's, so the node must not change in
    place (TVM's ``unique()``). Nodes are read through ``chain[i]`` so that no local variable adds a
    reference; ``sys.getrefcount`` counts its own argument too.
    """
    last = len(chain) - 1
    for i in range(last):
        refs = sys.getrefcount(chain[i]) - 2  # getrefcount's argument and the chain list
        sref = srefs.get(id(chain[i]))
        if sref is not None and sref.stmt is chain[i]:
            refs -= 1
        if refs > 1:
            return i
    return last


def _rebuild(chain: list, gv, tgt, shared: int) -> tuple[IRModule, dict]:
    """Put ``tgt`` in place of ``chain[-1]``: the nodes from ``chain[shared]`` down are copied, their
    parent ``chain[shared - 1]`` is changed in place (a new module when the module itself is shared).

    Returns
    -------
    tuple of (IRModule, dict)
        The module and ``{id(old node): its copy}`` for the copied statements.
    """
    moved: dict = {}
    new = tgt
    for i in range(len(chain) - 2, shared - 1, -1):
        new = moved[id(chain[i])] = _with_child(chain[i], chain[i + 1], new, gv)
    if shared == 0:
        return new, moved
    _set_child(chain[shared - 1], chain[shared], new, gv)
    return chain[0], moved


def _child_changes(parent, old, new) -> dict:
    """The fields of ``parent`` (module, function or statement) to change so that it holds ``new``
    in place of its child ``old``."""
    if isinstance(parent, IRModule):
        return {"functions": new}
    if isinstance(parent, PrimFunc):
        return {"body": new}
    if isinstance(parent, SeqStmt):
        return {"seq": _seq_with(parent.seq, old, new)}
    return dict.fromkeys(_child_fields(parent, old), new)


def _with_child(parent, old, new, gv):
    """A copy of ``parent`` (module, function map, function or statement) with child ``old`` replaced by ``new``."""
    if isinstance(parent, FunctionMap):
        functions = FunctionMap(parent)
        functions[gv] = new
        return functions
    return parent.replace(**_child_changes(parent, old, new))


def _set_child(parent, old, new, gv) -> None:
    """Replace child ``old`` of ``parent`` by ``new`` in place (``parent`` is referenced by the state only)."""
    if isinstance(parent, FunctionMap):
        parent[gv] = new
        return
    for name, value in _child_changes(parent, old, new).items():
        _set(parent, name, value)


def _seq_with(seq: tuple, old, new) -> tuple:
    """``seq`` with its element ``old`` (by identity) replaced by ``new``."""
    return tuple(new if s is old else s for s in seq)


def _child_fields(parent, child) -> list[str]:
    """The fields of statement ``parent`` that hold ``child``."""
    names = [name for name in ("body", "then_case", "else_case", "init", "block") if getattr(parent, name, None) is child]
    if not names:
        raise ValueError(f"replace: the {type(parent).__name__} does not hold the statement to replace")
    return names
