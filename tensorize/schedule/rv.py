"""Random variables of a schedule: handles to blocks, loops and sampled integers.

A ``BlockRV`` names a block (block names are unique within a function); a ``LoopRV`` holds the
loop variable of its ``For``; both stay valid across primitives that keep their target and
raise ``ScheduleError`` once it has been removed. An ``ExprRV`` holds a sampled integer and can
be used wherever an integer is expected (split factors, annotations).
"""
from __future__ import annotations

from ..ir.expr import Var


class BlockRV:
    """A handle to a block: its name and the name of its function.

    Parameters
    ----------
    name : str
        The block's name (empty for a placeholder that a replayed trace binds).
    func_name : str
        The function's name.
    """
    __slots__ = ("name", "func_name")

    def __init__(self, name: str = "", func_name: str = ""):
        self.name, self.func_name = name, func_name

    def __repr__(self) -> str:
        return f"BlockRV({self.name!r})"


class LoopRV:
    """A handle to a loop: its loop variable and the name of its function.

    Parameters
    ----------
    var : Var
        The loop variable.
    func_name : str
        The function's name.
    """
    __slots__ = ("var", "func_name")

    def __init__(self, var: Var | None = None, func_name: str = ""):
        self.var, self.func_name = var, func_name

    def __repr__(self) -> str:
        return f"LoopRV({getattr(self.var, 'name', '?')})"  # a placeholder of a trace read from JSON has no var


class ExprRV:
    """A sampled integer. ``int(rv)`` gives its value."""

    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = int(value)

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"ExprRV({self.value})"


SBlockRV = BlockRV
RV_TYPES = (BlockRV, LoopRV, ExprRV)


def rv_prefix(rv) -> str:
    """The letter TVM uses when naming an RV in a printed trace: b (block), l (loop), v (value).

    Parameters
    ----------
    rv : BlockRV, LoopRV or ExprRV
        The handle.

    Returns
    -------
    str
        ``'b'``, ``'l'`` or ``'v'``.
    """
    return {BlockRV: "b", LoopRV: "l"}.get(type(rv), "v")  # an ExprRV, or a Var standing for one (TVM's form)
