"""The legacy TE schedule: ``te.create_schedule(C.op)`` and ``s[C]`` stage lookup.

Only the default schedule is supported (each compute op as its own plain loop nest, in
producer-before-consumer order); transform programs with ``tvm.tir.Schedule`` on the PrimFunc
from ``te.create_prim_func`` instead. ``tvm.lower(s, [A, B, C])`` lowers a te.Schedule through
``tensorize.te.legacy.lower_te_schedule``.

>>> from tensorize import te
>>> A = te.placeholder((8,), name="A")
>>> B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
>>> s = te.create_schedule(B.op)
>>> s[B].op is B.op, [op.name for op in s.ops]
(True, ['A', 'B'])
"""
from __future__ import annotations

from ..errors import TVMKeyError, TVMNotImplementedError, TVMTypeError

from typing import Sequence

from .tensor import Operation, Tensor

_TIR_SCHEDULE_HINT = ("legacy te.Schedule stage primitives are not supported; build the function with "
                      "te.create_prim_func([...]) and transform it with tvm.tir.Schedule (split, reorder, ...)")


class Stage:
    """The schedule of one operation (``s[C]``). Holds the op; stage primitives are not supported."""

    __slots__ = ("op", "schedule")

    def __init__(self, op: Operation, schedule: "Schedule"):
        self.op, self.schedule = op, schedule

    def _unsupported(self, *args, **kwargs):
        raise TVMNotImplementedError(_TIR_SCHEDULE_HINT)

    split = fuse = reorder = tile = vectorize = unroll = parallel = bind = compute_at = compute_inline = _unsupported
    compute_root = cache_read = cache_write = pragma = prefetch = storage_align = double_buffer = _unsupported

    def __repr__(self) -> str:
        return f"Stage({self.op.name!r})"


class Schedule:
    """A default TE schedule over ``outputs`` and every operation they read (``ops``, producers first)."""

    def __init__(self, outputs: Sequence[Operation]):
        from .create_prim_func import _ordered_ops

        self.outputs = list(outputs)
        self.ops = _ordered_ops([op.output(0) for op in self.outputs])
        self.stages = [Stage(op, self) for op in self.ops]
        self._stage_of = {id(st.op): st for st in self.stages}

    def __getitem__(self, key) -> Stage:
        op = key.op if isinstance(key, Tensor) else key
        stage = self._stage_of.get(id(op))
        if stage is None:
            raise TVMKeyError(f"operation {getattr(op, 'name', op)!r} is not part of this schedule")
        return stage

    def cache_read(self, *args, **kwargs):
        """Not supported on the legacy te schedule; raises with a pointer to ``tir.Schedule.cache_read``.

        Parameters
        ----------
        *args
            Ignored.
        **kwargs
            Ignored.
        """
        raise TVMNotImplementedError(_TIR_SCHEDULE_HINT)

    cache_write = rfactor = create_group = cache_read

    def __repr__(self) -> str:
        return f"te.Schedule(outputs={[op.name for op in self.outputs]})"


def create_schedule(ops) -> Schedule:
    """The default schedule of ``ops`` (an Operation, a Tensor, or a list of them).

    Parameters
    ----------
    ops : Operation, Tensor or list
        The outputs.

    Returns
    -------
    te.Schedule
        The schedule.
    """
    items = ops if isinstance(ops, (list, tuple)) else [ops]
    out = []
    for item in items:
        op = item.op if isinstance(item, Tensor) else item
        if not isinstance(op, Operation):
            raise TVMTypeError(f"create_schedule takes te operations (C.op) or tensors, got {item!r}")
        out.append(op)
    return Schedule(out)


__all__ = ["Schedule", "Stage", "create_schedule"]
