"""Threads per block read off a CUDA candidate's scheduled IR, without lowering: ``verify_gpu_code``
rejects on it first, since lowering a candidate costs about a hundred times more and most over-large
samples fail on this count.

>>> from tensorize import te, tir
>>> A = te.placeholder((4096,), name="A")
>>> B = te.compute((4096,), lambda i: A[i] * 2.0, name="B")
>>> sch = tir.Schedule(te.create_prim_func([A, B]))
>>> bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 2048])
>>> sch.bind(bx, "blockIdx.x"); sch.bind(tx, "threadIdx.x")
>>> threads_per_block(sch.mod["main"])
2048
"""
from __future__ import annotations

from math import prod

from tensorize.ir import expr as E
from tensorize.ir import stmt as S

__all__ = ["threads_per_block"]


def threads_per_block(func) -> int:
    """The largest product of ``threadIdx`` extents around any block of ``func`` (each tag counted once,
    at its largest constant extent on the path): what its kernels launch per block.

    Parameters
    ----------
    func : PrimFunc
        A scheduled function with thread-bound loops.

    Returns
    -------
    int
        Threads per block (1 without thread-bound loops).
    """
    best = 1

    def walk(node, extents: dict) -> None:
        nonlocal best
        if isinstance(node, S.SeqStmt):
            for stmt in node.seq:
                walk(stmt, extents)
        elif isinstance(node, S.For):
            tag = node.thread_tag
            if tag.startswith("threadIdx") and isinstance(node.extent, E.IntImm):
                extents = {**extents, tag: max(extents.get(tag, 1), int(node.extent.value))}
            walk(node.body, extents)
        elif isinstance(node, S.BlockRealize):
            best = max(best, prod(extents.values()))
            walk(node.block.body, extents)
        else:
            for child in (getattr(node, "body", None), getattr(node, "then_case", None),
                          getattr(node, "else_case", None)):
                if isinstance(child, S.Stmt):
                    walk(child, extents)

    walk(func.body, {})
    return best
