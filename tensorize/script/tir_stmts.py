"""Statements of the ``T`` namespace: ``T.evaluate``, ``T.LetStmt``, ``T.attr``, ``T.launch_thread``,
``T.env_thread``, ``T.Assert`` and ``T.assume`` (re-exported by ``tensorize.script.tir``).
"""
from __future__ import annotations

from ..ir.expr import IterVar, Var
from ..ir.op import call_intrin
from ..ir.stmt import Evaluate as _Evaluate
from .parser import specs as _specs

__all__ = [
    "evaluate", "LetStmt", "attr", "launch_thread", "env_thread", "Assert", "assume",
]


# -- statements ------------------------------------------------------------------------------


def evaluate(value) -> _Evaluate:
    """``T.evaluate(call)``: run an expression for its side effect.

    Parameters
    ----------
    value : PrimExpr
        The expression.

    Returns
    -------
    Evaluate
        The statement.
    """
    return _Evaluate(value)


def LetStmt(value, var=None):  # noqa: N802 - TVMScript's name
    """``with T.LetStmt(value) as x:``: bind ``x`` for the statements inside.

    Parameters
    ----------
    value : PrimExpr
        The value.
    var : Var, optional
        The variable (a new one when None).

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.LetSpec(value, var)


def attr(node, attr_key: str, value):
    """``T.attr(node, "pragma_key", value)``: an attribute on the statements that follow.

    Parameters
    ----------
    node : any
        The node the attribute is about.
    attr_key : str
        The key.
    value : PrimExpr or str
        The value.

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.AttrStmtSpec(node, attr_key, value)


def launch_thread(thread, extent):
    """``tx = T.launch_thread("threadIdx.x", 32)``: launch a GPU thread axis for the statements that follow.

    Parameters
    ----------
    thread : str or IterVar
        The thread tag or axis.
    extent : PrimExpr or int
        The number of threads.

    Returns
    -------
    Spec
        A record the parser turns into a thread launch; the assigned name is the thread index.
    """
    return _specs.LaunchThreadSpec(thread, extent)


def env_thread(thread_tag: str) -> IterVar:
    """``tx = T.env_thread("threadIdx.x")``: a thread axis to pass to ``T.launch_thread``.

    Parameters
    ----------
    thread_tag : str
        The thread tag.

    Returns
    -------
    IterVar
        The thread axis.
    """
    return IterVar(None, Var(thread_tag, "int32"), IterVar.ThreadIndex, thread_tag)


def Assert(condition, message):  # noqa: N802 - TVMScript's name
    """``T.Assert(cond, "message")``: check ``cond`` at run time before the statements that follow.

    Parameters
    ----------
    condition : PrimExpr
        The condition.
    message : str
        The error message.

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.AssertSpec(condition, message)


def assume(condition):
    """``T.assume(cond)``: tell the compiler ``cond`` holds.

    Parameters
    ----------
    condition : PrimExpr
        The condition.

    Returns
    -------
    Call
        The ``tir.assume`` call (evaluate it as a statement).
    """
    return call_intrin("bool", "tir.assume", condition)
