"""Where ``compute_at`` / ``reverse_compute_at`` must not put a block: inside another block's in-place update.

After ``decompose_reduction`` a buffer has two writers: the init block and the update block, which reads
and writes it at every step of its reduction loops. Moving the init (or any other writer of that buffer)
under one of those loops would run it again between the updates (the init would zero the partial sums
at every ``k``). TVM rejects it because the init is then not the buffer's only writer; this check
rejects exactly the positions inside the updater's reduction loops, and allows those above them.
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir.functor import collect_vars
from ...ir.stmt import For

__all__ = ["update_conflict"]


def update_conflict(tree, realize, loop_stmt, siblings) -> str | None:
    """Why ``realize`` may not move under ``loop_stmt``, or None.

    Parameters
    ----------
    tree : ScheduleTree
        The function's statement tree.
    realize : BlockRealize
        The block to move.
    loop_stmt : For
        The target loop.
    siblings : list of BlockRealize
        The blocks of the scope.

    Returns
    -------
    str or None
        The reason (for the error message) when another block of the scope updates, in place, a buffer
        the moved block writes, over a reduction loop that is ``loop_stmt`` or encloses it.

    Examples
    --------
    >>> import tensorize as tvm
    >>> from tensorize import te
    >>> a = te.placeholder((4, 8), name="a"); k = te.reduce_axis((0, 8), name="k")
    >>> s = te.compute((4,), lambda i: te.sum(a[i, k], axis=k), name="s")
    >>> r = te.compute((4,), lambda i: s[i] * 2.0, name="r")
    >>> sch = tvm.tir.Schedule(te.create_prim_func([a, r]))
    >>> i, k = sch.get_loops(sch.get_block("s"))
    >>> sch.reverse_compute_at(sch.get_block("r"), k)
    >>> init = sch.decompose_reduction(sch.get_block("s"), i)
    >>> try:
    ...     sch.compute_at(init, k)
    ... except tvm.tir.ScheduleError as err:
    ...     print("only writer" in str(err))
    True
    """
    own_writes = {id(w.buffer): w.buffer.name for w in realize.block.writes}
    around = {id(a.loop_var): a.loop_var for a in [loop_stmt, *tree.ancestors(loop_stmt)] if isinstance(a, For)}
    for s in siblings:
        if s is realize:
            continue
        read = {id(r.buffer) for r in s.block.reads}
        updated = [own_writes[id(w.buffer)] for w in s.block.writes
                   if id(w.buffer) in own_writes and id(w.buffer) in read]
        if not updated:
            continue
        reduction_vars = {id(v) for iv, value in zip(s.block.iter_vars, s.iter_values)
                          if iv.iter_type == E.IterVar.CommReduce for v in collect_vars(value)}
        inside = [var for key, var in around.items() if key in reduction_vars]
        if inside:
            return (f"block {realize.block.name_hint!r} is not the only writer of buffer {updated[0]!r}: block "
                    f"{s.block.name_hint!r} updates it in place over reduction loop {inside[0].name}, and under loop "
                    f"{loop_stmt.loop_var.name} the moved block would run again between those updates; pick a loop "
                    "outside the reduction loops")
    return None
