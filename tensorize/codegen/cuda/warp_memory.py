"""Warp memory to registers: a ``"warp"``-scope buffer becomes one register array per lane (a ``"warp.group"``
buffer, the ``wgmma`` accumulators, one per thread of a 128-thread warpgroup).

A warp buffer (the ``mma_*`` intrinsics' operands, see ``intrinsics.cuda_mma``) is written in TensorIR as
``32 * L`` elements per tile: lane ``t`` of the warp holds elements ``t * L .. t * L + L - 1`` of each
tile. Every access to it sits inside a loop bound to ``threadIdx.x`` (the lane), and its flat index is
``base + L * lane + local`` with ``base`` a multiple of ``32 * L``. Each thread keeps only its own part:
an array of ``size / 32`` elements indexed ``base / 32 + local``. This pass rewrites the allocations
and the indices (of loads, stores and of the ``ptx_*`` calls' register offsets) accordingly.
"""
from __future__ import annotations

from ...arith.analyzer import Analyzer
from ...errors import TVMError
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.functor import ir_transform, post_order_visit, substitute, uses_any

WARP = 32
GROUP_SIZES = {"warp": WARP, "warp.group": 4 * WARP}  # threads sharing one buffer, by scope
_REGISTER_ARGS = {"tir.ptx_ldmatrix": ((3, 4),), "tir.ptx_mma": ((6, 7), (8, 9), (10, 11)),
                  "tir.ptx_wgmma": ((10, 11),)}


class WarpMemoryLowering:
    """Rewrites the warp buffers of one kernel body (``lower(body) -> body``)."""

    def __init__(self, scopes: dict, lane_extent: int):
        self.group = {v: GROUP_SIZES[scope] for v, scope in scopes.items() if scope in GROUP_SIZES}
        self.warp_vars = set(self.group)
        self.lane_extent = lane_extent
        self.lanes: set = set()
        self.lets: dict = {}  # common subexpressions: a lane offset may hide behind a LetStmt variable
        self.analyzer = Analyzer()

    def _scan(self, body) -> None:
        def visit(node):
            if isinstance(node, S.For):
                self.analyzer.bind(node.loop_var, E.Range.from_min_extent(node.min, node.extent))
                tb = node.thread_binding
                if node.kind == S.ForKind.THREAD_BINDING and tb is not None and tb.thread_tag == "threadIdx.x":
                    self.lanes.add(node.loop_var)
            elif isinstance(node, S.LetStmt):
                self.lets[node.var] = node.value

        post_order_visit(body, visit)

    def _indexed_by_lane(self, body, var) -> bool:
        indices = []

        def visit(node):
            if isinstance(node, (E.BufferLoad, S.BufferStore)) and node.buffer.data is var:
                indices.extend(node.indices)
            elif isinstance(node, E.Call) and node.op.name in _REGISTER_ARGS:
                indices.extend(node.args[o] for d, o in _REGISTER_ARGS[node.op.name] if node.args[d] is var)

        post_order_visit(body, visit)
        for e in indices:
            for _ in range(4):
                e = substitute(e, lambda v: self.lets.get(v))
            if uses_any(e, {id(v) for v in self.lanes}):
                return True
        return False

    def index(self, data, e):
        """The per-thread index of the warp-buffer index ``e``.

        Parameters
        ----------
        data : Var
            The buffer's data variable (its scope gives the threads sharing it: 32, or 128 for a warpgroup).
        e : PrimExpr
            A flat index into the warp buffer.

        Returns
        -------
        PrimExpr
            ``base / group + local`` where ``e = base + L * lane + local``.

        Raises
        ------
        TVMError
            When ``e`` does not depend on the lane as ``L * lane`` for a constant ``L``.
        """
        if isinstance(e, E.Ramp):  # consecutive registers of one thread (a vector store of an accumulator)
            return E.Ramp(self.index(data, e.base), e.stride, e.lanes)
        name, group = data.name, self.group[data]
        for _ in range(4):
            e = substitute(e, lambda v: self.lets.get(v))
        used = []
        post_order_visit(e, lambda n: used.append(n) if isinstance(n, E.Var) and n in self.lanes else None)
        if not used:
            raise TVMError(f"the warp buffer {name} is accessed outside a loop bound to threadIdx.x (the lane); "
                           "tensorize its accesses with the mma_* intrinsics")
        base = self.analyzer.simplify(substitute(e, lambda v: E.IntImm(v.dtype, 0) if v in self.lanes else None))
        step = self.analyzer.simplify(substitute(e, lambda v: E.IntImm(v.dtype, 1) if v in self.lanes else None) - base)
        if not isinstance(step, E.IntImm) or step.value <= 0:
            raise TVMError(f"the warp buffer {name} is indexed by {e}: not (lane * L + a per-lane offset) for a "
                           f"constant L; its layout must be (..., {group} lanes, L registers)")
        tile = group * int(step.value)
        return self.analyzer.simplify(base // tile * int(step.value) + base % tile)

    def lower(self, body):
        """``body`` with each warp buffer made per-thread.

        Parameters
        ----------
        body : Stmt
            A kernel's body.

        Returns
        -------
        Stmt
            The body to print.
        """
        if not self.warp_vars:
            return body
        self._scan(body)
        # a warp buffer no access indexes by lane was compacted per thread already: it stays a local array
        self.warp_vars = {v for v in self.warp_vars if self._indexed_by_lane(body, v)}
        if not self.warp_vars:
            return body
        for group in {self.group[v] for v in self.warp_vars}:
            if self.lane_extent != group:
                unit = "warp" if group == WARP else "warpgroup"
                raise TVMError(f"a kernel with {unit} buffers needs threadIdx.x to be the {unit}'s {group} lanes, "
                               f"not {self.lane_extent} threads; bind the {unit}s to threadIdx.y/z")

        def post(node):
            if isinstance(node, E.BufferLoad) and node.buffer.data in self.warp_vars:
                return E.BufferLoad(node.buffer, [self.index(node.buffer.data, node.indices[0])])
            if isinstance(node, S.BufferStore) and node.buffer.data in self.warp_vars:
                return S.BufferStore(node.buffer, node.value, [self.index(node.buffer.data, node.indices[0])])
            if isinstance(node, E.Call) and node.op.name in _REGISTER_ARGS:
                args = list(node.args)
                for data, offset in _REGISTER_ARGS[node.op.name]:
                    if args[data] in self.warp_vars:
                        args[offset] = self.index(args[data], args[offset])
                return E.Call(node.dtype, node.op, args)
            if isinstance(node, S.LetStmt) and not uses_any(node.body, {id(node.var)}):
                return node.body  # a lane offset (common subexpression) no index uses any more
            if isinstance(node, S.Allocate) and node.buffer_var in self.warp_vars:
                size = 1
                for extent in node.extents:
                    size *= int(extent.value)
                group = self.group[node.buffer_var]
                if size % group:
                    raise TVMError(f"the warp buffer {node.buffer_var.name} has {size} elements, not a multiple "
                                   f"of the {group} lanes")
                return S.Allocate(node.buffer_var, node.dtype, [E.IntImm("int32", size // group)], node.condition,
                                  node.body, node.annotations)
            return None

        return ir_transform(body, None, post, ["tir.BufferLoad", "tir.BufferStore", "tir.Call", "tir.Allocate",
                                                "tir.LetStmt"])
