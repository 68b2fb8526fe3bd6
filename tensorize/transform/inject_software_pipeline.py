"""``InjectSoftwarePipeline``: overlap the copies of the next iterations with the compute of this one.

A loop annotated ``software_pipeline_stage = [s0, s1, ...]`` (one stage per statement of its body, as
TVM's ``sch.annotate(k0, "software_pipeline_stage", [0, 0, 1])``) is rewritten so that in loop
iteration ``t`` statement ``i`` works on iteration ``t - s_i``: with stages ``[0, 0, 1]`` the shared
tiles of iteration ``k + 1`` are fetched while iteration ``k`` multiplies. The loop becomes a prologue
(the first ``D`` fetches, ``D`` the largest stage), a steady loop, and an epilogue (the last ``D``
computes). Every buffer allocated in the loop body that one stage writes and a later stage reads gets
``D + 1`` versions (its size times ``D + 1``; iteration ``k`` uses version ``k % (D + 1)``), so a fetch
never overwrites a tile that is still being read.

``software_pipeline_order`` (TVM's: the position of each statement in an iteration, default the body's
order) may move a later stage first: ``[1, 2, 0]`` issues the compute of iteration ``t - D`` before the
fetches of iteration ``t``, so an asynchronous compute (Hopper's ``wgmma``) runs while the fetches are issued.

``software_pipeline_compute_lag = L`` (tensorize's own) gives the versioned buffers ``L`` more versions, so a
fetch overwrites the tile of ``L + 1`` iterations before rather than the previous one: an asynchronous compute
(``wgmma``) may still run for ``L`` iterations after the barrier. The region is marked ``pipeline_compute_lag``
for the code generator, whose waits then leave ``L`` groups in flight.

Statements of the stages in ``software_pipeline_async_stages`` are wrapped in ``async_scope``: the CUDA
code generator issues their aligned global -> shared copies as ``cp.async``, and the pass adds the
``cp.async`` bookkeeping (``ptx_commit_group`` after each iteration's fetches, ``ptx_wait_group(D - 1)``
before the barrier that publishes a tile). Barriers are explicit: one ``tvm_storage_sync`` at the top
of each steady iteration (it both publishes the tile computed on next and frees the version about to
be overwritten); the region is marked ``pipeline_explicit_sync`` so the code generator adds no others
inside it.

The loop must have constant bounds, a body that is a sequence with one statement per stage entry
(allocations around it are hoisted out of the loop) and at least ``D`` iterations; otherwise it is
left as it is and a debug line says why.
"""
from __future__ import annotations

import logging

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.functor import StmtExprMutator, post_order_visit, substitute
from ..ir.renew_defs import renew_defs
from .pass_infra import func_pass

logger = logging.getLogger(__name__)

STAGE = "software_pipeline_stage"
ORDER = "software_pipeline_order"
COMPUTE_LAG = "software_pipeline_compute_lag"  # tensorize's: iterations an asynchronous compute may run on
ASYNC_STAGES = "software_pipeline_async_stages"
EXPLICIT_SYNC = "pipeline_explicit_sync"
LAG_REGION = "pipeline_compute_lag"  # the attribute marking a pipelined region whose compute may lag
_KEYS = (STAGE, ORDER, ASYNC_STAGES, COMPUTE_LAG)


def _ints(value) -> list[int]:
    return [int(getattr(v, "value", v)) for v in value]


def _accesses(stmt):
    """(written data vars, read data vars) of ``stmt``."""
    writes, reads = set(), set()

    def visit(node):
        if isinstance(node, S.BufferStore):
            writes.add(node.buffer.data)
        elif isinstance(node, E.BufferLoad):
            reads.add(node.buffer.data)
        elif isinstance(node, E.Call) and node.op.name == "tir.tvm_access_ptr":
            flags = int(node.args[4].value) if isinstance(node.args[4], E.IntImm) else 3
            if flags & 2:
                writes.add(node.args[1])
            if flags & 1:
                reads.add(node.args[1])

    post_order_visit(stmt, visit)
    return writes, reads


class _Versioned(StmtExprMutator):
    """Points the accesses of versioned buffers at version ``(iteration) % versions``."""

    def __init__(self, versions: dict, iteration):
        self.versions = versions  # data var -> (new buffer, element count of one version, versions)
        self.iteration = iteration

    def _offset(self, data):
        buf, size, count = self.versions[data]
        it = self.iteration
        # iterations are never negative here, so the truncated and the floored remainder agree
        version = E.truncmod(it, count) if not isinstance(it, E.IntImm) else E.IntImm("int32", int(it.value) % count)
        return buf, E.mul(version, size)

    def _shift(self, index, offset):
        if dt.lanes_of(index.dtype) > 1:
            return E.add(index, E.Broadcast(offset, dt.lanes_of(index.dtype)))
        return E.add(index, offset)

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        if op.buffer.data not in self.versions:
            return op
        buf, offset = self._offset(op.buffer.data)
        return E.BufferLoad(buf, (self._shift(op.indices[0], offset),), op.predicate)

    def visit_buffer_store_(self, op):
        op = super().visit_buffer_store_(op)
        if op.buffer.data not in self.versions:
            return op
        buf, offset = self._offset(op.buffer.data)
        return S.BufferStore(buf, op.value, (self._shift(op.indices[0], offset),), op.predicate)

    def visit_call_(self, op):
        op = super().visit_call_(op)
        if op.op.name == "tir.tvm_access_ptr" and op.args[1] in self.versions:
            _, offset = self._offset(op.args[1])
            args = list(op.args)
            args[2] = E.add(args[2], offset)
            return E.Call(op.dtype, op.op, tuple(args))
        return op


def hoisted_allocations(body):
    """``(allocations, inner body)``: the Allocate/DeclBuffer nodes wrapping ``body``, outermost first.

    Parameters
    ----------
    body : Stmt
        A loop body.

    Returns
    -------
    tuple
        The wrapping nodes and the statement inside them.
    """
    allocs = []
    while isinstance(body, (S.Allocate, S.DeclBuffer)):
        allocs.append(body)
        body = body.body
    return allocs, body


def versioned_allocations(allocs, counts: dict):
    """The hoisted allocations ``allocs`` re-created with ``counts[data var]`` versions of their buffers.

    Parameters
    ----------
    allocs : list of Allocate or DeclBuffer
        As ``hoisted_allocations`` gives them.
    counts : dict
        Data var -> versions (1 or absent: kept as it is).

    Returns
    -------
    tuple
        ``(wraps, versions)``: functions re-creating the allocations around a body (outermost first), and
        data var -> (grown declared buffer, elements of one version, versions) for ``_Versioned``.

    Raises
    ------
    ValueError
        For a versioned buffer of symbolic size or without a declared buffer.
    """
    versions, growing, wraps = {}, {}, []
    for node in allocs:
        if isinstance(node, S.Allocate):
            extents, count = node.extents, counts.get(node.buffer_var, 1)
            if count > 1:
                if not all(isinstance(e, E.IntImm) for e in extents):
                    raise ValueError(f"{node.buffer_var.name} has a symbolic size")
                size = 1
                for extent in extents:
                    size *= int(extent.value)
                growing[node.buffer_var] = (size, count)
                extents = [E.IntImm("int32", size * count)]
            wraps.append(lambda body, a=node, ext=extents: S.Allocate(a.buffer_var, a.dtype, ext, a.condition, body,
                                                                      a.annotations))
        else:
            buf = node.buffer
            if buf.data in growing:
                size, count = growing[buf.data]
                buf = Buffer(buf.data, buf.dtype, [E.IntImm("int32", size * count)], name=buf.name,
                             data_alignment=buf.data_alignment, offset_factor=buf.offset_factor)
                versions[buf.data] = (buf, E.IntImm("int32", size), count)
            wraps.append(lambda body, b=buf: S.DeclBuffer(b, body))
    undeclared = [data.name for data in growing if data not in versions]
    if undeclared:
        raise ValueError(f"the versioned buffers {undeclared} have no declared buffer")
    return wraps, versions


def _sync():
    return S.Evaluate(E.Call("int32", E.Op.get("tir.tvm_storage_sync"), (E.StringImm("shared"),)))


def _commit():
    return S.Evaluate(E.Call("int32", E.Op.get("tir.ptx_commit_group"), ()))


def _wait(n: int):
    return S.Evaluate(E.Call("int32", E.Op.get("tir.ptx_wait_group"), (E.IntImm("int32", n),)))


class _Pipeliner(StmtExprMutator):
    def visit_for_(self, op):
        op = super().visit_for_(op)
        if STAGE not in (op.annotations or {}):
            return op
        try:
            return self._pipeline(op)
        except ValueError as err:
            logger.debug("loop %s is not software-pipelined: %s", op.loop_var.name, err)
            return S.For(op.loop_var, op.min, op.extent, op.kind, op.body, op.thread_binding,
                         {k: v for k, v in op.annotations.items() if k not in _KEYS})

    @staticmethod
    def _pipeline(op):
        stages = _ints(op.annotations[STAGE])
        order = _ints(op.annotations.get(ORDER, range(len(stages))))
        async_stages = set(_ints(op.annotations.get(ASYNC_STAGES, ())))
        lag = _ints([op.annotations.get(COMPUTE_LAG, 0)])[0]
        if not isinstance(op.min, E.IntImm) or not isinstance(op.extent, E.IntImm):
            raise ValueError("the loop bounds are not constant")
        if op.kind not in (S.ForKind.SERIAL, S.ForKind.UNROLLED):
            raise ValueError(f"the loop is {op.kind}, not serial")
        # hoist the allocations around the body: they become the versioned buffers
        allocs, body = hoisted_allocations(op.body)
        items = list(body.seq) if isinstance(body, S.SeqStmt) else [body]
        if len(items) != len(stages) or sorted(order) != list(range(len(stages))):
            raise ValueError(f"{len(stages)} stages for a body of {len(items)} statements")
        depth = max(stages)
        n, lo = int(op.extent.value), int(op.min.value)
        if depth == 0 or n <= depth:
            raise ValueError(f"{n} iterations for a pipeline of depth {depth}")
        access = [_accesses(item) for item in items]
        counts = {}
        for node in allocs:
            if isinstance(node, S.Allocate):
                written = [stages[i] for i, (w, _) in enumerate(access) if node.buffer_var in w]
                read = [stages[i] for i, (_, r) in enumerate(access) if node.buffer_var in r]
                if written and read:
                    counts[node.buffer_var] = max(read) - min(written) + 1 + lag
        wraps, versions = versioned_allocations(allocs, counts)
        uses_async = any(stages[i] in async_stages for i in range(len(items)))
        var = op.loop_var

        def instance(i, iteration):
            """Statement ``i`` working on (0-based) iteration ``iteration``."""
            stmt = substitute(items[i], {var: E.add(iteration, lo) if lo else iteration})
            stmt = renew_defs(_Versioned(versions, iteration).visit(stmt))  # each copy defines its own loops
            if stages[i] in async_stages:
                stmt = S.AttrStmt(E.StringImm("default"), "async_scope", E.IntImm("int32", 1), stmt)
            return stmt

        # TVM's meaning: order[i] is the position of statement i in each pipelined iteration
        sequence = sorted(range(len(items)), key=lambda i: order[i])
        async_items = [i for i in sequence if stages[i] in async_stages]

        def step(t, steady: bool):
            """Loop iteration ``t``: the statements whose iteration ``t - stage`` is in range."""
            out = []
            for i in sequence:
                if steady:
                    out.append((i, instance(i, E.sub(t, stages[i]) if stages[i] else t)))
                    continue
                value = int(t.value) - stages[i]
                if 0 <= value < n:
                    out.append((i, instance(i, E.IntImm("int32", value))))
            stmts = []
            if steady or int(t.value) >= depth:
                # publish the tile of iteration t - D and free the version this iteration's fetch overwrites:
                # of the groups committed so far, the one of iteration t - D must be complete
                if uses_async:
                    stmts.append(_wait(depth - 1 if steady else n - 1 - (int(t.value) - depth)))
                stmts.append(_sync())
            present = [i for i, _ in out if i in async_items]
            for i, stmt in out:
                stmts.append(stmt)
                if present and i == present[-1]:
                    stmts.append(_commit())  # one group of copies per iteration
            return stmts

        body_stmts = []
        for t in range(depth):  # prologue: the first fetches
            body_stmts.extend(step(E.IntImm("int32", t), steady=False))
        steady_var = E.Var(var.name, var.dtype)
        steady = step(steady_var, steady=True)
        body_stmts.append(S.For(steady_var, E.IntImm(var.dtype, depth), E.IntImm(var.dtype, n - depth), S.ForKind.SERIAL,
                                S.SeqStmt(steady), None, {}))
        for t in range(n, n + depth):  # epilogue: the last computes
            body_stmts.extend(step(E.IntImm("int32", t), steady=False))
        result = S.AttrStmt(E.StringImm("default"), EXPLICIT_SYNC, E.IntImm("int32", 1), S.SeqStmt(body_stmts))
        if lag:
            result = S.AttrStmt(E.StringImm("default"), LAG_REGION, E.IntImm("int32", lag), result)
        for wrap in reversed(wraps):
            result = wrap(result)
        return result


def inject_software_pipeline(func):
    """``func`` with its ``software_pipeline_stage`` loops pipelined (the PrimFunc form of the pass).

    Parameters
    ----------
    func : PrimFunc
        A lowered (flattened) function.

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, S.For) and STAGE in (n.annotations or {})
                     else None)
    if not found:
        return func
    return func.with_body(_Pipeliner().visit(func.body))


def InjectSoftwarePipeline():  # noqa: N802 - TVM's pass name
    """Software-pipeline the loops annotated ``software_pipeline_stage`` (``tir.transform.InjectSoftwarePipeline``).

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).

    Examples
    --------
    >>> p = tvm.tir.transform.InjectSoftwarePipeline()
    >>> p.info.name
    'tir.InjectSoftwarePipeline'
    """
    return func_pass(inject_software_pipeline, "tir.InjectSoftwarePipeline")
