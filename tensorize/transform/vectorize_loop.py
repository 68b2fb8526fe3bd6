"""``VectorizeLoop``: a ``T.vectorized`` loop of constant extent becomes vector code.

The loop variable becomes ``Ramp(min, 1, lanes)``; invariant operands are ``Broadcast``; loads and
stores take vector indices; element-wise operations work on vector dtypes. A loop whose body cannot
be vectorized (control flow or a scalar store that depends on the loop variable, nested allocation,
calls with side effects) stays a serial loop and the reason is logged. An ``if`` whose condition
is index arithmetic on the loop variable (no load) and that guards only stores (a split that does
not divide) becomes masked stores and loads.

For example::

    for i in T.vectorized(8): C[i] = A[i] + B[i]
    becomes: C[0:8] = A[0:8] + B[0:8]     (C[Ramp(0, 1, 8)] = A[Ramp(0, 1, 8)] + B[Ramp(0, 1, 8)])
"""
from __future__ import annotations

import logging
import math

from ..arith.loop_relax import make_analyzer
from ..arith.modular import ramp_in_one_block
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.expr import IntImm
from ..ir.functor import StmtExprMutator, post_order_visit, uses_var
from .pass_infra import PassContext, func_pass

logger = logging.getLogger(__name__)


class CannotVectorize(Exception):
    """Raised inside the vectorizer; the loop then falls back to serial."""


def lanes(e) -> int:
    """The vector lanes of ``e``'s dtype.

    Parameters
    ----------
    e : PrimExpr
        The expression.

    Returns
    -------
    int
        The lanes.
    """
    return dt.lanes_of(e.dtype)


def broadcast_to(e, n: int):
    """``e`` as an ``n``-lane vector (a scalar is broadcast).

    Parameters
    ----------
    e : PrimExpr
        The expression.
    n : int
        The lanes.

    Returns
    -------
    PrimExpr
        The vector expression.
    """
    e = E.convert(e)
    if lanes(e) == n:
        return e
    if lanes(e) != 1:
        raise CannotVectorize(f"mixing vectors of {lanes(e)} and {n} lanes")
    return E.Broadcast(e, n)


def vector_binary(cls, a, b):
    """``cls(a, b)`` where either side may be a vector; keeps ramps as ramps where possible.

    Parameters
    ----------
    cls : type
        The binary node type (``Add``, ...).
    a : PrimExpr
        The left operand.
    b : PrimExpr
        The right operand.

    Returns
    -------
    PrimExpr
        The vector expression.
    """
    la, lb = lanes(a), lanes(b)
    if la == 1 and lb == 1:
        if cls in _ARITH:
            return E._arith(cls, a, b)
        return E._compare(cls, a, b) if issubclass(cls, E.CmpOpExpr) else cls(a, b)
    n = max(la, lb)
    if cls in (E.Add, E.Sub):
        op = E.add if cls is E.Add else E.sub
        if isinstance(a, E.Ramp) and lb == 1:
            return E.Ramp(op(a.base, b), a.stride, n)
        if isinstance(b, E.Ramp) and la == 1 and cls is E.Add:
            return E.Ramp(E.add(a, b.base), b.stride, n)
        if isinstance(a, E.Ramp) and isinstance(b, E.Ramp):
            return E.Ramp(op(a.base, b.base), op(a.stride, b.stride), n)
        if isinstance(a, E.Ramp) and isinstance(b, E.Broadcast):
            return E.Ramp(op(a.base, b.value), a.stride, n)
        if isinstance(b, E.Ramp) and isinstance(a, E.Broadcast) and cls is E.Add:
            return E.Ramp(E.add(a.value, b.base), b.stride, n)
    if cls is E.Mul:
        if isinstance(a, E.Ramp) and (lb == 1 or isinstance(b, E.Broadcast)):
            c = b if lb == 1 else b.value
            return E.Ramp(E.mul(a.base, c), E.mul(a.stride, c), n)
        if isinstance(b, E.Ramp) and (la == 1 or isinstance(a, E.Broadcast)):
            c = a if la == 1 else a.value
            return E.Ramp(E.mul(b.base, c), E.mul(b.stride, c), n)
    if isinstance(a, E.Broadcast) and isinstance(b, E.Broadcast):
        return E.Broadcast(vector_binary(cls, a.value, b.value), n)
    if isinstance(a, E.Broadcast) and lb == 1:
        return E.Broadcast(vector_binary(cls, a.value, b), n)
    if isinstance(b, E.Broadcast) and la == 1:
        return E.Broadcast(vector_binary(cls, a, b.value), n)
    if cls in (E.FloorDiv, E.FloorMod) and isinstance(a, E.Ramp) and isinstance(a.stride, IntImm):
        # the lanes of a ramp that stay inside one block of c: ramp // c is uniform, ramp % c a ramp
        c = b if lb == 1 else (b.value if isinstance(b, E.Broadcast) else None)
        if isinstance(c, IntImm) and ramp_in_one_block(a.base, int(a.stride.value), n, int(c.value)):
            if cls is E.FloorDiv:
                return E.Broadcast(E.floordiv(a.base, c), n)
            return E.Ramp(E.floormod(a.base, c), a.stride, n)
    return cls(broadcast_to(a, n), broadcast_to(b, n))


_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)
_ELEMENTWISE_CALLS = {"tir.exp", "tir.exp2", "tir.log", "tir.log2", "tir.log10", "tir.sqrt", "tir.rsqrt", "tir.tanh",
                      "tir.sigmoid", "tir.fabs", "tir.floor", "tir.ceil", "tir.round", "tir.nearbyint", "tir.trunc",
                      "tir.erf", "tir.sin", "tir.cos", "tir.pow", "tir.if_then_else", "tir.likely", "tir.fmod",
                      "tir.bitwise_and", "tir.bitwise_or", "tir.bitwise_xor", "tir.bitwise_not", "tir.shift_left",
                      "tir.shift_right", "tir.isnan", "tir.isinf", "tir.isfinite", "tir.log1p", "tir.exp10"}


class _Vectorizer(StmtExprMutator):
    """Rewrites one loop body with ``var`` standing for ``ramp``."""

    def __init__(self, var: E.Var, ramp: E.Ramp, local_in_bounds):
        self.var, self.ramp, self.n = var, ramp, ramp.lanes
        self.let_vars: dict[int, E.Var] = {}
        # (buffer, indices) -> whether the access is a vector inside a local allocation (no mask needed)
        self.local_in_bounds = local_in_bounds

    def visit_var_(self, op):
        if op is self.var:
            return self.ramp
        return self.let_vars.get(id(op), op)

    def _mutate_binary(self, op):
        a, b = self.visit_expr(op.a), self.visit_expr(op.b)
        if a is op.a and b is op.b:
            return op
        return vector_binary(type(op), a, b)

    visit_add_ = visit_sub_ = visit_mul_ = visit_div_ = visit_mod_ = _mutate_binary
    visit_floor_div_ = visit_floor_mod_ = visit_min_ = visit_max_ = _mutate_binary
    visit_eq_ = visit_ne_ = visit_lt_ = visit_le_ = visit_gt_ = visit_ge_ = _mutate_binary
    visit_and_ = visit_or_ = _mutate_binary

    def visit_cast_(self, op):
        v = self.visit_expr(op.value)
        if v is op.value:
            return op
        if isinstance(v, E.Broadcast):
            return E.Broadcast(E.cast(op.dtype, v.value), v.lanes)
        return E.Cast(dt.with_lanes(op.dtype, lanes(v)), v)

    def visit_select_(self, op):
        c, t, f = self.visit_expr(op.condition), self.visit_expr(op.true_value), self.visit_expr(op.false_value)
        if c is op.condition and t is op.true_value and f is op.false_value:
            return op
        n = max(lanes(c), lanes(t), lanes(f))
        return E.Select(broadcast_to(c, n), broadcast_to(t, n), broadcast_to(f, n))

    def visit_not_(self, op):
        a = self.visit_expr(op.a)
        return op if a is op.a else E.Not(a)

    def visit_ramp_(self, op):
        if uses_var(op, lambda v: v is self.var):
            raise CannotVectorize("a ramp inside the vectorized loop depends on the loop variable")
        return op

    def visit_broadcast_(self, op):
        if uses_var(op, lambda v: v is self.var):
            raise CannotVectorize("a broadcast inside the vectorized loop depends on the loop variable")
        return op

    def visit_shuffle_(self, op):
        if uses_var(op, lambda v: v is self.var):
            raise CannotVectorize("shuffles depending on the loop variable are not vectorized")
        return op

    def visit_buffer_load_(self, op):
        indices = tuple(self.visit_expr(i) for i in op.indices)
        if all(a is b for a, b in zip(indices, op.indices)):
            return op
        if sum(1 for i in indices if lanes(i) > 1) > 1:
            raise CannotVectorize(f"load of {op.buffer.name} varies along several axes; flatten buffers first")
        if dt.lanes_of(op.buffer.dtype) > 1:
            raise CannotVectorize(f"{op.buffer.name} already holds vectors")
        return E.BufferLoad(op.buffer, indices, op.predicate)

    def visit_call_(self, op):
        args = tuple(self.visit_expr(a) for a in op.args)
        if all(a is b for a, b in zip(args, op.args)):
            return op
        if op.op.name == "tir.if_then_else" and lanes(args[0]) == 1:
            # A condition uniform across lanes stays scalar: codegen then branches on it and only the
            # taken side runs (it often guards an out-of-bounds load, e.g. inlined padding).
            n = max(lanes(args[1]), lanes(args[2]))
            return E.Call(dt.with_lanes(op.dtype, n), op.op, (args[0], broadcast_to(args[1], n), broadcast_to(args[2], n)))
        if op.op.name not in _ELEMENTWISE_CALLS:
            raise CannotVectorize(f"call of {op.op.name} depends on the loop variable")
        if all(isinstance(a, E.Broadcast) or lanes(a) == 1 for a in args):  # uniform across lanes (ramp // c)
            n = max(lanes(a) for a in args)
            return E.Broadcast(E.Call(op.dtype, op.op, tuple(getattr(a, "value", a) for a in args)), n)
        n = max(lanes(a) for a in args)
        args = tuple(broadcast_to(a, n) for a in args)
        return E.Call(dt.with_lanes(op.dtype, n), op.op, args)

    def visit_let_(self, op):
        raise CannotVectorize("Let expressions are not vectorized")

    # -- statements ---------------------------------------------------------------------------
    def visit_buffer_store_(self, op):
        value = self.visit_expr(op.value)
        indices = tuple(self.visit_expr(i) for i in op.indices)
        vector_index = any(lanes(i) > 1 for i in indices)
        if not vector_index:
            if lanes(value) > 1:
                raise CannotVectorize(f"store to {op.buffer.name} at an index that does not depend on the loop "
                                      "variable (a reduction or a scalar carried across lanes)")
            return op if value is op.value and all(a is b for a, b in zip(indices, op.indices)) else S.BufferStore(
                op.buffer, value, indices, op.predicate)
        if sum(1 for i in indices if lanes(i) > 1) > 1:
            raise CannotVectorize(f"store to {op.buffer.name} varies along several axes; flatten buffers first")
        return S.BufferStore(op.buffer, broadcast_to(value, self.n), indices, op.predicate)

    def visit_if_then_else_(self, op):
        if self._varies(op.condition):
            if op.else_case is None and not _reads_memory(op.condition):
                return self._predicated(op)
            raise CannotVectorize("an if-condition depends on the loop variable (data-dependent control flow)")
        return super().visit_if_then_else_(op)

    def _predicated(self, op):
        """``if cond: stores`` with a lane-dependent ``cond`` (the guard of a split that does not divide,
        e.g. 197 columns in tiles of 16): masked stores, and masked loads where a load's index varies
        across lanes, so no lane outside the guard touches memory. Inside, only stores, sequences and
        ``if``s on lane-invariant conditions (a reduction's init) are allowed."""
        mask = broadcast_to(self.visit_expr(op.condition), self.n)
        return self._masked(op.then_case, mask)

    def _masked(self, stmt, mask):
        if isinstance(stmt, S.SeqStmt):
            return S.SeqStmt([self._masked(st, mask) for st in stmt.seq])
        if isinstance(stmt, S.IfThenElse) and stmt.else_case is None and not self._varies(stmt.condition):
            return S.IfThenElse(stmt.condition, self._masked(stmt.then_case, mask), None)
        if not isinstance(stmt, S.BufferStore):
            raise CannotVectorize(f"a lane-dependent if guards a {type(stmt).__name__}, not only buffer stores")
        new = self.visit_buffer_store_(stmt)
        if not any(lanes(i) > 1 for i in new.indices):
            raise CannotVectorize(f"a guarded store to {stmt.buffer.name} does not vary across lanes")
        value = _MaskLoads(mask, self.local_in_bounds).visit_expr(new.value)
        if new.predicate is None and self.local_in_bounds(new.buffer, new.indices):
            # A tile accumulator in a local buffer: blend instead of a masked store, which LLVM cannot keep
            # in registers (a 197-column batch matmul ran at a tenth of its speed); the masked-off lanes
            # keep their old value, as with the masked store, and x86 folds the blend into the operation.
            old = E.BufferLoad(new.buffer, new.indices)
            return S.BufferStore(new.buffer, E.Select(mask, value, old), new.indices)
        return S.BufferStore(new.buffer, value, new.indices, _and_mask(mask, new.predicate))

    def _varies(self, expr) -> bool:
        """Whether ``expr`` depends on the lane (the loop variable or a vector let)."""
        return uses_var(expr, lambda v: v is self.var or id(v) in self.let_vars)

    def visit_while_(self, op):
        raise CannotVectorize("while loops are not vectorized")

    def visit_for_(self, op):
        if uses_var(op.min, lambda v: v is self.var) or uses_var(op.extent, lambda v: v is self.var):
            raise CannotVectorize("an inner loop's bounds depend on the vectorized variable")
        return super().visit_for_(op)

    def visit_let_stmt_(self, op):
        value = self.visit_expr(op.value)
        if lanes(value) > 1:
            new_var = E.Var(op.var.name, value.dtype)
            self.let_vars[id(op.var)] = new_var
            return S.LetStmt(new_var, value, self.visit_stmt(op.body))
        return super().visit_let_stmt_(op)

    def visit_allocate_(self, op):
        raise CannotVectorize("allocation inside a vectorized loop")

    def visit_evaluate_(self, op):
        value = self.visit_expr(op.value)
        if value is not op.value:
            raise CannotVectorize("a call statement depends on the loop variable")
        return op

    def visit_assert_stmt_(self, op):
        raise CannotVectorize("asserts are not vectorized")


def _and_mask(mask, predicate):
    return mask if predicate is None else vector_binary(E.And, mask, predicate)


def _reads_memory(expr) -> bool:
    found = []
    post_order_visit(expr, lambda n: found.append(n) if isinstance(n, E.BufferLoad) else None)
    return bool(found)


class _MaskLoads(StmtExprMutator):
    """Vector loads (an index that varies across lanes) get ``mask`` as their predicate."""

    def __init__(self, mask, local_in_bounds):
        self.mask, self.local_in_bounds = mask, local_in_bounds

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        if not any(lanes(i) > 1 for i in op.indices):
            return op
        if op.predicate is None and self.local_in_bounds(op.buffer, op.indices):
            return op  # a local buffer's lanes are all allocated: the masked-off ones read a value nobody keeps
        return E.BufferLoad(op.buffer, op.indices, _and_mask(self.mask, op.predicate))


class _LoopVectorizer(StmtExprMutator):
    def __init__(self, disabled: bool):
        self.disabled = disabled
        self.loops: list = []        # the enclosing loops, outermost first
        self.local_allocs: dict = {}  # id(buffer_var) -> (dtype, elements) of the enclosing local allocations

    def visit_allocate_(self, op):
        scope = getattr(op.buffer_var.type_annotation, "storage_scope", "global")
        local = scope.startswith("local") and all(isinstance(e, IntImm) for e in op.extents)
        if local:
            self.local_allocs[id(op.buffer_var)] = (op.dtype, math.prod(int(e.value) for e in op.extents))
        try:
            return super().visit_allocate_(op)
        finally:
            if local:
                self.local_allocs.pop(id(op.buffer_var), None)

    def _local_in_bounds_test(self):
        """The test, for the loop being vectorized, of whether a vector access of a buffer stays inside a
        local allocation for every value of the enclosing loops (then its masked-off lanes touch
        allocated memory of this thread only). The analyzer of the loops is built on the first use."""
        loops, allocs, analyzer = self.loops, self.local_allocs, None  # both fixed while the loop is rewritten

        def in_bounds(buffer, indices) -> bool:
            nonlocal analyzer
            alloc = allocs.get(id(buffer.data))
            if alloc is None or alloc[0] != buffer.dtype or len(indices) != 1 or not isinstance(indices[0], E.Ramp) \
                    or not isinstance(indices[0].stride, IntImm):
                return False
            ramp = indices[0]
            analyzer = analyzer or make_analyzer(loops)
            bound = analyzer.const_int_bound(ramp.base)
            last = int(ramp.stride.value) * (ramp.lanes - 1)
            return bound.min_value + min(0, last) >= 0 and bound.max_value + max(0, last) < alloc[1]

        return in_bounds

    def visit_for_(self, op):
        self.loops.append(op)
        try:
            op = super().visit_for_(op)
        finally:
            self.loops.pop()
        if op.kind != S.ForKind.VECTORIZED:
            return op
        if self.disabled:
            return op.replace(kind=S.ForKind.SERIAL)
        if not isinstance(op.extent, IntImm) or op.extent.value < 1:
            logger.info("loop %s stays serial: vectorized loops need a constant extent, got %s", op.loop_var.name,
                        op.extent)
            return op.replace(kind=S.ForKind.SERIAL)
        if op.extent.value == 1:
            from ..ir.functor import substitute

            return substitute(op.body, {op.loop_var: op.min})
        ramp = E.Ramp(op.min, E.make_const(op.min.dtype, 1), op.extent.value)
        try:
            return _Vectorizer(op.loop_var, ramp, self._local_in_bounds_test()).visit_stmt(op.body)
        except CannotVectorize as reason:
            logger.info("loop %s stays serial: %s", op.loop_var.name, reason)
            return op.replace(kind=S.ForKind.SERIAL)


def vectorize_loop(func, enable: bool = True):
    """``func`` with ``T.vectorized`` loops expanded (the PrimFunc-level form of ``VectorizeLoop``).

    Parameters
    ----------
    func : PrimFunc
        The function.
    enable : bool
        Vectorize (False: make the loops serial).

    Returns
    -------
    PrimFunc
        The transformed function.
    """
    disabled = not enable or bool(PassContext.current().config.get("tir.disable_vectorize", False))
    return func.with_body(_LoopVectorizer(disabled).visit(func.body))


def VectorizeLoop(enable_vectorize: bool = True):  # noqa: N802 - TVM's pass name
    """Expand ``T.vectorized`` loops into vector code (or serial loops when disabled or impossible).

    Parameters
    ----------
    enable_vectorize : bool
        Vectorize (False: make the loops serial).

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``).
    """
    return func_pass(lambda f: vectorize_loop(f, enable_vectorize), "tir.VectorizeLoop")
