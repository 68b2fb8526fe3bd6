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
