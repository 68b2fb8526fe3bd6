"""Loops and blocks of the ``T`` namespace: ``T.serial``/``T.grid``/``T.thread_binding``, ``T.block``,
``T.init``, ``T.reads``/``T.writes``/``T.where``, ``T.func_attr``/``T.block_attr`` and ``T.axis``
(re-exported by ``tensorize.script.tir``). Each returns a record of ``parser.specs`` that the parser
turns into IR.
"""
from __future__ import annotations

from .. import errors as _errors

from typing import Sequence

from ..ir.expr import IterVar
from ..ir.stmt import ForKind as _ForKind
from .parser import specs as _specs

__all__ = [
    "serial", "parallel", "vectorized", "unroll", "thread_binding", "grid", "block", "sblock", "init", "reads",
    "writes", "where", "func_attr", "block_attr", "sblock_attr", "axis",
]


# -- loops -----------------------------------------------------------------------------------


def _loop(kind):
    def build(start, stop=None, *, annotations=None):
        if stop is None:
            start, stop = 0, start
        return _specs.ForSpec(kind, start, stop, annotations=annotations)

    return build


serial = _loop(_ForKind.SERIAL)
parallel = _loop(_ForKind.PARALLEL)
vectorized = _loop(_ForKind.VECTORIZED)
unroll = _loop(_ForKind.UNROLLED)
serial.__doc__ = "``for i in T.serial(n)`` / ``T.serial(a, b)``: a sequential loop."
parallel.__doc__ = "``for i in T.parallel(n)``: a loop whose iterations run on several CPU threads."
vectorized.__doc__ = "``for i in T.vectorized(n)``: a loop turned into vector instructions."
unroll.__doc__ = "``for i in T.unroll(n)``: a loop unrolled at compile time."


def thread_binding(start, stop=None, thread: str | None = None, *, annotations=None):
    """``for i in T.thread_binding(n, thread="threadIdx.x")``: a loop bound to a GPU thread axis.

    Parameters
    ----------
    start : PrimExpr or int
        The start (or the extent, alone).
    stop : PrimExpr or int, optional
        The end.
    thread : str
        The thread axis, e.g. ``"threadIdx.x"``.
    annotations : dict, optional
        Loop annotations.

    Returns
    -------
    ForSpec
        A loop record iterated by the ``for`` statement.
    """
    if isinstance(stop, str) and thread is None:
        start, stop, thread = 0, start, stop
    if stop is None:
        start, stop = 0, start
    if thread is None:
        raise _errors.TVMTypeError('T.thread_binding needs the thread tag: T.thread_binding(n, thread="threadIdx.x")')
    return _specs.ForSpec(_ForKind.THREAD_BINDING, start, stop, thread=thread, annotations=annotations)


def grid(*extents) -> list:
    """``for i, j, k in T.grid(128, 128, 128)``: nested serial loops.

    Parameters
    ----------
    *extents : PrimExpr or int
        One extent per loop, outermost first.

    Returns
    -------
    list of ForSpec
        Loop records iterated by the ``for`` statement.
    """
    return [_specs.ForSpec(_ForKind.SERIAL, 0, e) for e in extents]


# -- blocks ----------------------------------------------------------------------------------


def block(name: str = "", no_realize: bool = False):
    """``with T.block("C"):`` a block (``T.sblock`` is the same).

    Parameters
    ----------
    name : str
        The block's name.
    no_realize : bool
        A block without a BlockRealize (inside another block's init).

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.BlockSpec(name, no_realize)


sblock = block


def init():
    """``with T.init():`` the statements a reduction block runs before its first update.

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.InitSpec()


def _regions(args) -> list:
    out = []
    for arg in args:
        if isinstance(arg, (list, tuple)):
            out.extend(_regions(arg))
        else:
            out.append(arg)
    return out


def reads(*regions):
    """``T.reads(A[vi, vk], B[0:16, vk])``: the regions a block reads.

    Parameters
    ----------
    *regions : BufferRegion or BufferLoad
        The regions.

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.RegionsSpec(_regions(regions), is_write=False)


def writes(*regions):
    """``T.writes(C[vi, vj])``: the regions a block writes.

    Parameters
    ----------
    *regions : BufferRegion or BufferLoad
        The regions.

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.RegionsSpec(_regions(regions), is_write=True)


def where(predicate):
    """``T.where(i * 4 + j < 10)``: run the block only where the predicate holds.

    Parameters
    ----------
    predicate : PrimExpr
        The condition.

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.WhereSpec(predicate)


def func_attr(attrs: dict):
    """``T.func_attr({"global_symbol": "main", "tir.noalias": True})``: function attributes.

    Parameters
    ----------
    attrs : dict
        The attributes.

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.AttrsSpec(dict(attrs), "func")


def block_attr(attrs: dict):
    """``T.block_attr({...})``: block annotations (``T.sblock_attr`` is the same).

    Parameters
    ----------
    attrs : dict
        The annotations.

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.AttrsSpec(dict(attrs), "block")


sblock_attr = block_attr


class axis:  # noqa: N801 - TVMScript's name
    """Block iterators: ``vi = T.axis.spatial(128, i)``, ``vk = T.axis.reduce(128, k)``,
    ``vi, vj, vk = T.axis.remap("SSR", [i, j, k])``."""

    @staticmethod
    def spatial(dom, binding, dtype: str | None = None):
        """A spatial (data-parallel) block iterator.

        Parameters
        ----------
        dom : int, tuple or Range
            The iterator's domain (an extent, ``(min, max)`` or a Range).
        binding : PrimExpr
            The value bound to it (usually a loop variable).
        dtype : str, optional
            The iterator's dtype.

        Returns
        -------
        AxisSpec
            Used as ``vi = T.axis....(...)`` inside a block.
        """
        return _specs.AxisSpec(IterVar.DataPar, dom, binding, dtype)

    @staticmethod
    def reduce(dom, binding, dtype: str | None = None):
        """A reduction block iterator.

        Parameters
        ----------
        dom : int, tuple or Range
            The iterator's domain (an extent, ``(min, max)`` or a Range).
        binding : PrimExpr
            The value bound to it (usually a loop variable).
        dtype : str, optional
            The iterator's dtype.

        Returns
        -------
        AxisSpec
            Used as ``vi = T.axis....(...)`` inside a block.
        """
        return _specs.AxisSpec(IterVar.CommReduce, dom, binding, dtype)

    @staticmethod
    def scan(dom, binding, dtype: str | None = None):
        """A scan (ordered) block iterator.

        Parameters
        ----------
        dom : int, tuple or Range
            The iterator's domain (an extent, ``(min, max)`` or a Range).
        binding : PrimExpr
            The value bound to it (usually a loop variable).
        dtype : str, optional
            The iterator's dtype.

        Returns
        -------
        AxisSpec
            Used as ``vi = T.axis....(...)`` inside a block.
        """
        return _specs.AxisSpec(IterVar.Ordered, dom, binding, dtype)

    @staticmethod
    def opaque(dom, binding, dtype: str | None = None):
        """An opaque block iterator.

        Parameters
        ----------
        dom : int, tuple or Range
            The iterator's domain (an extent, ``(min, max)`` or a Range).
        binding : PrimExpr
            The value bound to it (usually a loop variable).
        dtype : str, optional
            The iterator's dtype.

        Returns
        -------
        AxisSpec
            Used as ``vi = T.axis....(...)`` inside a block.
        """
        return _specs.AxisSpec(IterVar.Opaque, dom, binding, dtype)

    @staticmethod
    def remap(kinds: str, bindings: Sequence):
        """Several block iterators at once, bound to loop variables: ``"S"`` spatial, ``"R"`` reduce.

        Parameters
        ----------
        kinds : str
            One letter per iterator, e.g. ``"SSR"``.
        bindings : list of Var
            The loop variables.

        Returns
        -------
        RemapSpec
            Used as ``vi, vj, vk = T.axis.remap(...)``.
        """
        if len(kinds) != len(bindings):
            raise _errors.TVMValueError(f"T.axis.remap got {len(kinds)} kinds ({kinds!r}) but {len(bindings)} loop variables")
        bad = set(kinds) - set("SR")
        if bad:
            raise _errors.TVMValueError(f"T.axis.remap kinds must be 'S' (spatial) or 'R' (reduce), got {''.join(sorted(bad))!r}")
        return _specs.RemapSpec(kinds, list(bindings))

    S = spatial
    R = reduce
