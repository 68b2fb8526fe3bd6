"""``PlanAndUpdateBufferAllocationLocation``: allocate each intermediate buffer at the lowest common
ancestor (loop or block) of its uses.

A block that reduces over a loop lifts its uses above that loop, so an accumulator lives across the
reduction. When the ancestor is a loop, the
loop body is wrapped in an opaque block that allocates the buffer.

For example::

    root: alloc B; for i: { for j: B[j] = ...; for j: C[i, j] = B[j] }
    becomes: for i: with T.block(""): alloc B; ...   (B allocated per i)

A GPU ``shared`` buffer is placed the same way, as in TVM, also inside loops bound to ``threadIdx`` (a
fetch at the reduction loop ``k0`` under the warp loops): compaction relaxes the thread loops around it
(one buffer per thread block) but not the serial loops, so it holds one ``k0`` step, not the whole
reduction.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, StmtExprVisitor, uses_var
from .pass_infra import func_pass


class _UseCollector(StmtExprVisitor):
    """Records, per allocated buffer (by data var), the ancestor path of each use."""

    def __init__(self):
        self.path: list = []          # enclosing For / Block nodes
        self.block_scope: list = []   # (block, realize) of the enclosing blocks
        self.paths: dict[int, list] = {}
        self.alloc_site: dict[int, tuple] = {}  # id(data) -> (buffer, block)

    def _use(self, buffer, write: bool = True):
        key = id(buffer.data)
        if key not in self.alloc_site:
            return
        path = list(self.path)
        if self.block_scope and write:  # a reduction's output lives across its reduction loops; its inputs need not
            block, realize = self.block_scope[-1]
            reduce_vars = [v for iv, v in zip(block.iter_vars, realize.iter_values) if iv.iter_type == E.IterVar.CommReduce]
            for k, node in enumerate(path):
                if reduce_vars and isinstance(node, S.For) and any(
                        uses_var(v, lambda x, lv=node.loop_var: x is lv) for v in reduce_vars):
                    path = path[:k]
                    break
        known = self.paths.get(key)
        if known is None:
            self.paths[key] = path
        else:
            n = 0
            while n < len(known) and n < len(path) and known[n] is path[n]:
                n += 1
            self.paths[key] = known[:n]

    def visit_buffer_load_(self, op):
        self._use(op.buffer, write=False)
        super().visit_buffer_load_(op)

    def visit_buffer_store_(self, op):
        self._use(op.buffer)
        super().visit_buffer_store_(op)

    def visit_for_(self, op):
        self.path.append(op)
        super().visit_for_(op)
        self.path.pop()

    def visit_block_realize_(self, op):
        block = op.block
        for buf in block.alloc_buffers:
            self.alloc_site[id(buf.data)] = (buf, block)
        self.block_scope.append((block, op))
        self.path.append(block)
        for region in block.reads:
            self._use(region.buffer, write=False)
        for region in block.writes:
            self._use(region.buffer)
        written = {id(region.buffer.data) for region in block.writes}
        for match in block.match_buffers:
            self._use(match.source.buffer, write=id(match.source.buffer.data) in written)
        super().visit_block_realize_(op)
        self.path.pop()
        self.block_scope.pop()


class _Placer(StmtExprMutator):
    def __init__(self, at_node: dict[int, list], moved: set[int]):
        self.at_node, self.moved = at_node, moved

    def visit_block_(self, op):
        new = super().visit_block_(op)
        kept = [b for b in new.alloc_buffers if id(b.data) not in self.moved]
        added = self.at_node.get(id(op), [])
        if len(kept) != len(new.alloc_buffers) or added:
            new = new.replace(alloc_buffers=tuple(kept) + tuple(added))
        return new

    def visit_for_(self, op):
        new = super().visit_for_(op)
        added = self.at_node.get(id(op))
        if added:
            scope = S.Block((), (), (), "", new.body, alloc_buffers=added)
            new = new.replace(body=S.BlockRealize((), True, scope))
        return new


def plan_buffer_allocation(func):
    """``func`` with each ``alloc_buffer`` moved to the lowest statement enclosing its uses (the PrimFunc-level form of ``PlanAndUpdateBufferAllocationLocation``).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    collector = _UseCollector()
    collector.visit(func.body)
    at_node: dict[int, list] = {}
    moved: set[int] = set()
    for key, (buffer, block) in collector.alloc_site.items():
        path = collector.paths.get(key)
        if path is None:
            continue  # never used: leave it where it is
        target = path[-1] if path else None
        if target is None:
            # The outermost scope: the root block if the function has one.
            root = func.body.block if isinstance(func.body, S.BlockRealize) else None
            if root is None or root is block:
                continue
            target = root
        if target is block:
            continue
        at_node.setdefault(id(target), []).append(buffer)
        moved.add(key)
    if not moved:
        return func
    return func.with_body(_Placer(at_node, moved).visit(func.body))


def PlanAndUpdateBufferAllocationLocation():  # noqa: N802 - TVM's pass name
    """Move each ``alloc_buffer`` to the lowest loop or block enclosing all its uses.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(plan_buffer_allocation, "tir.PlanAndUpdateBufferAllocationLocation")
