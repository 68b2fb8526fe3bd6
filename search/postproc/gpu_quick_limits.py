"""Lower bounds of a CUDA candidate's per-block resources, read from the scheduled IR without lowering:
threads per block (exact) and shared memory (the tiles the shared copies fill). ``verify_gpu_code`` rejects on them first: lowering a candidate costs about a
hundred times more, and most randomly sampled GPU tilings break a limit.

>>> from tensorize import te, tir
>>> A = te.placeholder((4096,), name="A")
>>> B = te.compute((4096,), lambda i: A[i] * 2.0, name="B")
>>> sch = tir.Schedule(te.create_prim_func([A, B]))
>>> bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 2048])
>>> sch.bind(bx, "blockIdx.x"); sch.bind(tx, "threadIdx.x")
>>> quick_resources(sch.mod["main"]).threads
2048
"""
from __future__ import annotations

from dataclasses import dataclass

from tensorize.ir import dtype as dt
from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.functor import uses_var

__all__ = ["QuickResources", "quick_resources"]


@dataclass(frozen=True)
class QuickResources:
    """The largest kernel figures of a function: ``threads`` per block and ``shared_bytes`` per block,
    each at most what the lowered kernel needs."""

    threads: int
    shared_bytes: int


def _const(expr) -> int | None:
    return int(expr.value) if isinstance(expr, E.IntImm) else None


def _is_thread(loop: S.For, prefix: str = "threadIdx") -> bool:
    return loop.kind == S.ForKind.THREAD_BINDING and loop.thread_binding is not None \
        and loop.thread_binding.thread_tag.startswith(prefix)


class _Walk:
    def __init__(self, crowded: set[int]):
        self.crowded = crowded  # ids of the loops holding more than one block
        self.threads = 1
        self.shared: dict[int, int] = {}   # per kernel (id of its outermost loop): bytes

    def visit(self, stmt, loops: list) -> int:
        """Walk ``stmt`` under ``loops``; returns the number of blocks below it."""
        if isinstance(stmt, S.SeqStmt):
            return sum(self.visit(s, loops) for s in stmt.seq)
        if isinstance(stmt, S.For):
            return self.visit(stmt.body, loops + [stmt])
        if isinstance(stmt, S.BlockRealize):
            below = self.visit(stmt.block.body, [])
            if not below:
                self._leaf(stmt, loops)
            return below + 1
        for child in (getattr(stmt, "body", None), getattr(stmt, "then_case", None), getattr(stmt, "else_case", None)):
            if isinstance(child, S.Stmt):
                return self.visit(child, loops)
        return 0

    def _leaf(self, realize, loops: list) -> None:
        extents: dict[str, int] = {}
        for loop in loops:
            if _is_thread(loop) and _const(loop.extent):
                tag = loop.thread_binding.thread_tag
                extents[tag] = max(extents.get(tag, 1), _const(loop.extent))
        threads = 1
        for extent in extents.values():
            threads *= extent
        self.threads = max(self.threads, threads)
        block = realize.block
        if len(block.writes) != 1:
            return
        buffer = block.writes[0].buffer
        scope = buffer.scope()
        if scope not in ("shared", "shared.dyn"):
            return
        # The copy's own loops: the innermost ones that only it uses, and that its bindings depend on.
        own = []
        for loop in reversed(loops):
            if id(loop) in self.crowded:
                break
            if any(uses_var(v, lambda x, lv=loop.loop_var: x is lv) for v in realize.iter_values):
                own.append(loop)
        elements = 1
        for loop in own:
            elements *= _const(loop.extent) or 1
        nbytes = elements * max(1, dt.bits_of(buffer.dtype) * dt.lanes_of(buffer.dtype) // 8)
        kernel = id(loops[0]) if loops else 0
        self.shared[kernel] = self.shared.get(kernel, 0) + nbytes


def _crowded_loops(stmt) -> set[int]:
    """The ids of the loops whose body holds more than one block."""
    crowded: set[int] = set()

    def count(node) -> int:
        if isinstance(node, S.SeqStmt):
            return sum(count(s) for s in node.seq)
        if isinstance(node, S.For):
            n = count(node.body)
            if n > 1:
                crowded.add(id(node))
            return n
        if isinstance(node, S.BlockRealize):
            return 1 + count(node.block.body)
        for child in (getattr(node, "body", None), getattr(node, "then_case", None), getattr(node, "else_case", None)):
            if isinstance(child, S.Stmt):
                return count(child)
        return 0

    count(stmt)
    return crowded


def quick_resources(func) -> QuickResources:
    """Lower bounds of ``func``'s kernel resources from its scheduled (unlowered) IR.

    Parameters
    ----------
    func : PrimFunc
        A scheduled function with thread-bound loops.

    Returns
    -------
    QuickResources
        Threads per block (the product of the ``threadIdx`` extents around any block), and the largest
        per-kernel sum of the shared tiles that copies fill.
    """
    walk = _Walk(_crowded_loops(func.body))
    walk.visit(func.body, [])
    return QuickResources(walk.threads, max(walk.shared.values(), default=0))
