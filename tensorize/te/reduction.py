"""Commutative reducers: ``te.sum``, ``te.max``, ``te.min`` and user-defined ``te.comm_reducer``.

A reducer call ``te.sum(expr, axis=k, where=cond, init=v)`` builds a ``Reduce`` expression, which
must be the whole body of a ``te.compute``.

>>> from tensorize import te
>>> A = te.placeholder((4, 8), name="A")
>>> k = te.reduce_axis((0, 8), "k")
>>> r = sum(A[0, k], axis=k)
>>> type(r).__name__, [iv.var.name for iv in r.axis]
('Reduce', ['k'])
"""
from __future__ import annotations

from ..errors import TVMTypeError, TVMValueError

from typing import Callable, Sequence

from ..ir.expr import CommReducer, IterVar, PrimExpr, Reduce, Var, convert, max_value_expr, min_value_expr
from ..ir.op import const, max_value, min_value


class Reducer:
    """A commutative reducer made by ``comm_reducer``; call it like ``te.sum``:
    ``reducer(expr, axis, where=None, init=None)``. For a multi-value reducer pass a tuple of
    expressions and get a tuple of ``Reduce`` (one per value)."""

    def __init__(self, fcombine: Callable, fidentity: Callable, name: str = "reduce"):
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name

    def _combiner(self, dtypes: Sequence[str], multi: bool) -> CommReducer:
        code = self.fcombine.__code__
        if code.co_argcount != 2:
            raise TVMValueError(f"reducer {self.name!r}: fcombine must take exactly two arguments (accumulator, value)")
        lname, rname = code.co_varnames[0], code.co_varnames[1]
        if multi:
            lhs = [Var(f"{lname}_{i}", t) for i, t in enumerate(dtypes)]
            rhs = [Var(f"{rname}_{i}", t) for i, t in enumerate(dtypes)]
            result = self.fcombine(tuple(lhs), tuple(rhs))
            identity = self.fidentity(*dtypes)
        else:
            lhs, rhs = [Var(lname, dtypes[0])], [Var(rname, dtypes[0])]
            result = [self.fcombine(lhs[0], rhs[0])]
            identity = [self.fidentity(dtypes[0])]
        result = [convert(r) for r in (result if isinstance(result, (list, tuple)) else [result])]
        identity = [convert(e) for e in (identity if isinstance(identity, (list, tuple)) else [identity])]
        if len(result) != len(dtypes) or len(identity) != len(dtypes):
            raise TVMValueError(f"reducer {self.name!r}: fcombine and fidentity must give {len(dtypes)} value(s), "
                             f"got {len(result)} and {len(identity)}")
        for i, (r, e, t) in enumerate(zip(result, identity, dtypes)):
            if r.dtype != t or e.dtype != t:
                raise TVMTypeError(f"reducer {self.name!r}: value {i} has dtype {t} but fcombine gives {r.dtype} and "
                                f"fidentity gives {e.dtype}; cast them to {t}")
        return CommReducer(lhs, rhs, result, identity)

    def __call__(self, expr, axis, where=None, init=None, *args):
        if not isinstance(axis, (IterVar, list, tuple)):
            # Element-wise use, as in TVM: te.max(a, b, c) combines the values pairwise.
            values = [v for v in (expr, axis, where, init) + args if v is not None]
            result = convert(values[0])
            for v in values[1:]:
                result = self.fcombine(result, v)
            return result
        multi = isinstance(expr, (list, tuple))
        sources = [convert(e) for e in (expr if multi else [expr])]
        for s in sources:
            if not isinstance(s, PrimExpr):
                raise TVMTypeError(f"reducer {self.name!r}: cannot reduce {s!r}; pass an expression")
        axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        if not axes:
            raise TVMValueError(f"reducer {self.name!r}: give at least one reduction axis (te.reduce_axis)")
        for a in axes:
            if not isinstance(a, IterVar) or a.iter_type != IterVar.CommReduce:
                raise TVMTypeError(f"reducer {self.name!r}: axis must be te.reduce_axis IterVars, got {a!r}")
        inits: list = []
        if init is not None:
            inits = [convert(i) for i in (init if isinstance(init, (list, tuple)) else [init])]
            if len(inits) != len(sources):
                raise TVMValueError(f"reducer {self.name!r}: give one init value per reduced value")
            inits = [const(i.value, s.dtype) if _is_const(i) and i.dtype != s.dtype else i for i, s in zip(inits, sources)]
        combiner = self._combiner([s.dtype for s in sources], multi)
        condition = convert(True) if where is None else convert(where)
        outputs = tuple(Reduce(combiner, sources, axes, condition, i, inits) for i in range(len(sources)))
        return outputs if multi else outputs[0]

    def __repr__(self) -> str:
        return f"Reducer({self.name!r})"


def _is_const(e) -> bool:
    return hasattr(e, "value") and type(e).__name__ in ("IntImm", "FloatImm")


def comm_reducer(fcombine: Callable, fidentity: Callable, name: str = "comm_reduce") -> Reducer:
    """A commutative reducer from ``fcombine(x, y)`` (tuples for multi-value reducers) and
    ``fidentity(dtype, ...)``.

    Parameters
    ----------
    fcombine : callable
        ``(x, y) -> combined``.
    fidentity : callable
        ``(dtype) -> identity element``.
    name : str
        The reducer's name.

    Returns
    -------
    Reducer
        Callable like ``te.sum``: ``reducer(expr, axis=k)``.

    Examples
    --------
    >>> prod = te.comm_reducer(lambda x, y: x * y, lambda t: tvm.tir.const(1, t), name="prod")
    >>> A = te.placeholder((4, 3), name="A")
    >>> k = te.reduce_axis((0, 3), name="k")
    >>> P = te.compute((4,), lambda i: prod(A[i, k], axis=k), name="P")
    >>> P.shape[0]
    4
    >>> from tensorize import te
    >>> mysum = te.comm_reducer(lambda x, y: x + y, lambda t: te.const(0, t), name="mysum")
    >>> A = te.placeholder((4, 8), name="A")
    >>> k = te.reduce_axis((0, 8), "k")
    >>> B = te.compute((4,), lambda i: mysum(A[i, k], axis=k), name="B")
    >>> B.op.body[0].combiner.identity_element[0].value
    0.0
    """
    return Reducer(fcombine, fidentity, name)


sum = comm_reducer(lambda x, y: x + y, lambda t: const(0, t), name="sum")  # noqa: A001 - TVM's name
min = comm_reducer(lambda x, y: min_value_expr(x, y), max_value, name="min")  # noqa: A001
max = comm_reducer(lambda x, y: max_value_expr(x, y), min_value, name="max")  # noqa: A001

__all__ = ["Reducer", "comm_reducer", "sum", "min", "max"]
