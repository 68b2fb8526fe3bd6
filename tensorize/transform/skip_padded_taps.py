"""``SkipPaddedTaps``: a loop whose iterations outside a guard only add zero runs where the guard holds.

A convolution that reads its zero padding inline (the padding stage computed into its consumer)
accumulates ``acc[i] = acc[i] + if_then_else(2 * y + ky >= 3 and 2 * y + ky < 19 and ..., x[...], 0) * w[...]``.
An iteration of ``ky`` where a conjunct linear in ``ky`` (and otherwise made of variables bound
outside the loop) fails adds zero to every accumulator, so the loop's range is narrowed to where all
such conjuncts hold, and inside it they are replaced by ``True``::

    for ky in range(7):                        for ky in range(max(0, 3 - 2 * y),
        acc[i] += if_then_else(                               min(7, 19 - 2 * y)):
            2 * y + ky >= 3 and                     acc[i] += if_then_else(
            2 * y + ky < 19 and c, x, 0) * w  ->        c, x, 0) * w

A loop of extent 1 (a unit tile level) keeps its range and gets one scalar branch on those conjuncts
around its body instead. This is what oneDNN does with the taps that fall in a convolution's padding (the 3-D stem
convolution of the operator suite computes 11% of its products on padding otherwise). It assumes
the other factor is finite (``0 * inf`` would be NaN, skipped here as zero); a program that needs
those semantics lowers with ``PassContext(disabled_pass=["tir.SkipPaddedTaps"])``.

The loop must be serial and unannotated, its body free of calls evaluated for their effect, and
every store in it an accumulation ``B[idx] = B[idx] + term`` whose term is zero when the conjunct
fails (an ``if_then_else``/``Select`` with a zero else-value, a product or cast of one).
"""
from __future__ import annotations

from ..arith.analyzer import Analyzer
from ..arith.expr_key import expr_key
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprMutator, collect_vars, post_order_visit
from ..ir.op import all as tir_all
from ..ir.op import max as tir_max
from ..ir.op import min as tir_min
from .guard_conditions import ReplaceWithTrue, always_true_bound, conjuncts, has_guards, is_guard, is_op
from .pass_infra import func_pass

__all__ = ["SkipPaddedTaps", "skip_padded_taps"]


def _is_zero(e) -> bool:
    if isinstance(e, E.Broadcast):
        e = e.value
    return isinstance(e, (E.IntImm, E.FloatImm)) and e.value == 0


def _zero_unless(term) -> list:
    """Conditions ``c`` such that ``term`` is zero wherever one of them is false."""
    if is_guard(term):
        cond, then, other = term.args if isinstance(term, E.Call) else (term.condition, term.true_value,
                                                                          term.false_value)
        return conjuncts(cond) + _zero_unless(then) if _is_zero(other) else []
    if isinstance(term, E.Mul):
        return _zero_unless(term.a) + _zero_unless(term.b)
    if isinstance(term, E.Cast):
        return _zero_unless(term.value)
    return []


def _same_load(load, store) -> bool:
    return (isinstance(load, E.BufferLoad) and load.buffer.data is store.buffer.data and load.predicate is None
            and load.buffer.dtype == store.buffer.dtype and len(load.indices) == len(store.indices)
            and all(expr_key(a) == expr_key(b) for a, b in zip(load.indices, store.indices)))


def _store_guard(store) -> list | None:
    """The guard conjuncts of an accumulation ``B[idx] = B[idx] + term``; None for another store."""
    value = store.value
    if store.predicate is not None or not isinstance(value, E.Add):
        return None
    if _same_load(value.a, store):
        return _zero_unless(value.b)
    if _same_load(value.b, store):
        return _zero_unless(value.a)
    return None


def _body_facts(body):
    """(stores, variables bound inside, whether the body has effects other than stores)."""
    stores, bound, effects = [], set(), [False]

    def visit(n):
        if isinstance(n, S.BufferStore):
            stores.append(n)
        elif isinstance(n, S.For):
            bound.add(id(n.loop_var))
        elif isinstance(n, (S.LetStmt, E.Let)):
            bound.add(id(n.var))
        elif isinstance(n, S.Evaluate) and not isinstance(n.value, (E.IntImm, E.FloatImm)) or isinstance(n, S.While):
            effects[0] = True

    post_order_visit(body, visit)
    return stores, bound, effects[0]


class _Narrower(StmtExprMutator):
    def __init__(self):
        self.analyzer = Analyzer()

    def visit_for_(self, op):
        op = super().visit_for_(op)
        if op.kind != S.ForKind.SERIAL or op.annotations or op.thread_binding is not None:
            return op
        stores, bound, effects = _body_facts(op.body)
        if effects or not stores:
            return op
        common = None
        for store in stores:
            guard = _store_guard(store)
            if not guard:
                return op
            keys = {expr_key(c): c for c in guard}
            common = keys if common is None else {k: c for k, c in common.items() if k in keys}
            if not common:
                return op
        lows, highs, used = [], [], set()
        for key, cond in common.items():
            if any(id(v) in bound for v in collect_vars(cond)):
                continue
            b = always_true_bound(cond, op.loop_var)
            if b is not None:
                (lows if b[0] == "lo" else highs).append(b[1])
                used.add(key)
        if not used:
            return op
        if isinstance(op.extent, E.IntImm) and op.extent.value == 1:
            # a unit loop (a tile level of extent 1): one scalar branch around the body, not a loop with
            # data-dependent bounds, which kept LLVM from unrolling and vectorizing the taps around it
            # (an inlined-padding depthwise conv ran at 30 GFLOPS against 55 with the guards left in place)
            guard = tir_all(*(common[key] for key in used))
            return op.replace(body=S.IfThenElse(guard, ReplaceWithTrue(used).visit_stmt(op.body)))
        start, end = op.min, op.min + op.extent
        for lo in lows:
            start = tir_max(start, lo)
        for hi in highs:
            end = tir_min(end, hi)
        start = self.analyzer.simplify(start)
        extent = self.analyzer.simplify(tir_max(end - start, E.IntImm(op.extent.dtype, 0)))
        return op.replace(min=start, extent=extent, body=ReplaceWithTrue(used).visit_stmt(op.body))


def skip_padded_taps(func):
    """``func`` with the loops whose guarded iterations only add zero narrowed to the guard (module doc).

    Parameters
    ----------
    func : PrimFunc
        The function.

    Returns
    -------
    PrimFunc
        The transformed function.

    Examples
    --------
    >>> from tensorize.script import tir as T
    >>> @T.prim_func
    ... def f(x: T.Buffer((8,), "float32"), w: T.Buffer((3,), "float32"), y: T.Buffer((8,), "float32")):
    ...     for i in range(8):
    ...         y[i] = T.float32(0)
    ...         for k in range(3):
    ...             y[i] = y[i] + T.if_then_else(i + k >= 1 and i + k < 9, x[i + k - 1], T.float32(0)) * w[k]
    >>> print(skip_padded_taps(f).body.body[1].min)
    T.max(0, 1 - i)
    """
    return func.with_body(_Narrower().visit(func.body)) if has_guards(func.body) else func


def SkipPaddedTaps():
    """Narrow loops whose guarded iterations only add zero (a convolution's inline padding).

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass`` named ``tir.SkipPaddedTaps``).
    """
    return func_pass(skip_padded_taps, "tir.SkipPaddedTaps")
