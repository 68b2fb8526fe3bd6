"""Reductions of the ``T`` namespace: ``T.iter_var``, ``T.comm_reducer`` and ``T.reduce``, the forms
``te.compute`` bodies hold and the printer writes (re-exported by ``tensorize.script.tir``).

>>> from tensorize.script import tir as T
>>> r = T.comm_reducer(lambda x, y: x + y, [T.float32(0)])
>>> [str(v) for v in r.lhs + r.rhs]
['x', 'y']
"""
from __future__ import annotations

from .. import errors as _errors

from ..ir import expr as _E
from ..ir.expr import Var as _Var

__all__ = [
    "iter_var", "comm_reducer", "reduce",
]


# -- reductions (what te.compute bodies hold; printed as TVM prints them) --------------------------

_ITER_TYPES = {"DataPar": _E.IterVar.DataPar, "ThreadIndex": _E.IterVar.ThreadIndex,
               "CommReduce": _E.IterVar.CommReduce, "Ordered": _E.IterVar.Ordered, "DimInfo": _E.IterVar.Opaque,
               "Opaque": _E.IterVar.Opaque}


def iter_var(var, dom, iter_type, thread_tag: str = "") -> _E.IterVar:
    """``T.iter_var(k, T.Range(0, 16), "CommReduce", "")``: an iteration variable over ``dom``.

    Parameters
    ----------
    var : Var
        The variable.
    dom : Range
        Its domain.
    iter_type : str or int
        ``"DataPar"``, ``"CommReduce"``, ...
    thread_tag : str
        The thread tag (thread axes only).

    Returns
    -------
    IterVar
        The iteration variable.
    """
    if isinstance(iter_type, str):
        if iter_type not in _ITER_TYPES:
            raise _errors.TVMValueError(f"unknown iterator type {iter_type!r}; use one of {sorted(_ITER_TYPES)}")
        iter_type = _ITER_TYPES[iter_type]
    return _E.IterVar(dom, var, iter_type, thread_tag)


def comm_reducer(combiner, identity) -> _E.CommReducer:
    """``T.comm_reducer(lambda x, y: x + y, [T.float32(0)])``: a commutative reducer; ``combiner``
    takes the accumulators then the new values (``lambda x0, x1, y0, y1: (..., ...)`` for two).

    Parameters
    ----------
    combiner : callable
        Combines accumulators and new values.
    identity : list of PrimExpr
        The identity elements.

    Returns
    -------
    CommReducer
        The reducer.
    """
    identity = [_E.convert(e) for e in identity]
    if not identity:
        raise _errors.TVMValueError("T.comm_reducer needs one identity element per reduced value")
    n = len(identity)
    names = _parameter_names(combiner)
    if names is None or len(names) != 2 * n:
        names = ["x", "y"] if n == 1 else [f"{side}_{i}" for side in "xy" for i in range(n)]
    lhs = [_Var(name, e.dtype) for name, e in zip(names[:n], identity)]
    rhs = [_Var(name, e.dtype) for name, e in zip(names[n:], identity)]
    result = combiner(*lhs, *rhs)
    result = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(result) != len(identity):
        raise _errors.TVMValueError(f"the combiner gives {len(result)} values for {len(identity)} identity elements")
    return _E.CommReducer(lhs, rhs, result, identity)


def _parameter_names(function) -> list[str] | None:
    """The parameter names of a combiner (a TVMScript lambda records them; Python ones have a signature)."""
    import inspect

    names = getattr(function, "param_names", None)
    if names is not None:
        return list(names)
    try:
        return list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None


def reduce(combiner, source, init=(), axis=(), condition=True, value_index: int = 0) -> _E.Reduce:  # noqa: A001
    """``T.reduce(T.comm_reducer(...), source=[...], init=[], axis=[T.iter_var(...)], condition=...,
    value_index=0)``: a reduction (``te.sum`` and friends build these in ``te.compute`` bodies).

    Parameters
    ----------
    combiner : CommReducer
        The reducer.
    source : list of PrimExpr
        The reduced values.
    init : list of PrimExpr
        Initial values.
    axis : list of IterVar
        The reduction axes.
    condition : PrimExpr or bool
        Which points take part.
    value_index : int
        Which of the results this node is.

    Returns
    -------
    Reduce
        The node.
    """
    if not isinstance(combiner, _E.CommReducer):
        raise _errors.TVMTypeError("T.reduce takes a T.comm_reducer(...) first, e.g. "
                        "T.reduce(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), source=[...], axis=[...])")
    source = list(source) if isinstance(source, (list, tuple)) else [source]
    return _E.Reduce(combiner, source, list(axis), condition, value_index, list(init))
