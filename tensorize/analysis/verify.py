"""Well-formedness checks of TensorIR programs (``tvm.tir.analysis.verify_well_formed``).

Rules, each with a short name that starts the error message:

* ``binding-extent``: the image of each spatial/reduce iterator's binding over the loops around
  the block lies inside the iterator's declared domain (a ``T.where`` predicate may cut a larger
  image down), and a binding that is a single loop variable runs exactly the iterator's extent
  (``T.axis.spatial(128, i)`` under ``for i in range(127)`` is an error). Composite bindings need
  not cover the domain: after ``compute_at`` a block runs a tile of it per loop instance.
* ``undefined-variable``: every variable used is a parameter, a buffer shape/stride/offset
  variable, a loop variable, a block iterator, a let variable or an allocation.
* ``access-region``: a block reads and writes only inside its declared ``T.reads``/``T.writes``
  (reported when provably outside; what the analyzer cannot decide is logged at debug level).
* ``store-dtype``: a ``BufferStore`` stores a value of the buffer's dtype (lanes may widen for
  vector stores).
* ``affine-binding`` (with ``check_affine=True``): bindings are quasi-affine in the loop
  variables (sums of variables times constants, ``//`` and ``%`` by positive constants).
* ``iterator-scope``: a block iterator is used only inside its block, a loop variable is not used
  inside a block it encloses (use the block's iterators there), and reduce iterators never index
  the buffers a block writes.
* ``duplicate-definition``: a variable or buffer is defined once.

Errors carry the source position when the offending node has a ``span`` (TVMScript gives one
to statements, blocks and block iterators).

>>> from tensorize import te
>>> A = te.placeholder((8,), name="A")
>>> B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
>>> verify_well_formed(te.create_prim_func([A, B]))
True
"""
from __future__ import annotations

import logging
from typing import Any

from ..arith import Analyzer
from ..arith.block_access import infer_block_access
from ..arith.bound import ConstIntBound
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.function import IRModule, PrimFunc
from ..ir.functor import StmtExprVisitor
from ..errors import VerifyError  # noqa: F401  (re-exported: callers catch it from here)
from .verify_error import RULES, WellFormedError
from .expr_forms import _is_quasi_affine, _name, _show
from .region_cover import (
    _const_range, _cover_verdict, _has_dependent_extent, _point_accesses_covered, _region_text, _same_or_inside,
    _single_loop_var,
)

logger = logging.getLogger(__name__)


__all__ = ["verify_well_formed", "WellFormedError", "RULES"]

class _Frame:
    __slots__ = ("vars", "barrier")

    def __init__(self, barrier: str | None = None):
        self.vars: dict[int, tuple[Any, str]] = {}
        self.barrier = barrier  # name of the block that opens this frame


class _Checker(StmtExprVisitor):
    def __init__(self, func: PrimFunc, func_name: str, check_affine: bool):
        self.func, self.func_name, self.check_affine = func, func_name, check_affine
        self.check_binding_range = True
        self.errors: list[WellFormedError] = []
        self._reported: set = set()
        self.frames: list[_Frame] = [_Frame()]
        self.defined_ever: dict[int, str] = {}
        self.buffers_ever: dict[int, str] = {}
        self.iter_owner: dict[int, str] = {}
        self.domains: dict[int, tuple[E.Var, E.Range]] = {}  # in-scope loop vars and block iterators
        self.loop_var_ids: set[int] = set()
        self.spans: list[Span | None] = [getattr(func, "span", None)]
        self.blocks: list[S.Block] = []
        self._ana = None            # the analyzer, built on first need (see _analyzer)
        self._ana_known: set[int] = set()
        root = func.body.block if isinstance(func.body, S.BlockRealize) else None
        self.root_block = root if root is not None and not root.iter_vars else None

    # -- reporting -----------------------------------------------------------------------------
    def span(self, node=None) -> Span | None:
        own = getattr(node, "span", None) if node is not None else None
        if own is not None:
            return own
        for s in reversed(self.spans):
            if s is not None:
                return s
        return None

    def error(self, rule: str, message: str, node=None, key=None) -> None:
        key = (rule, key if key is not None else message)
        if key in self._reported:
            return
        self._reported.add(key)
        self.errors.append(WellFormedError(rule, message, self.span(node), self.func_name))

    # -- scopes --------------------------------------------------------------------------------
    def define(self, var: E.Var, kind: str, node=None, allow_redefine: bool = False) -> None:
        if id(var) in self.defined_ever:
            if allow_redefine:
                return
            self.error("duplicate-definition",
                       f"variable {var.name} is defined twice (as {self.defined_ever[id(var)]} and as {kind}); "
                       f"each loop, iterator and let needs its own variable", node, key=id(var))
        self.defined_ever[id(var)] = kind
        self.frames[-1].vars[id(var)] = (var, kind)

    def define_buffer(self, buffer: Buffer, kind: str, node=None) -> None:
        if id(buffer) in self.buffers_ever:
            self.error("duplicate-definition", f"buffer {buffer.name} is defined twice (as {self.buffers_ever[id(buffer)]} "
                       f"and as {kind}); declare each buffer once", node, key=("buf", id(buffer)))
        self.buffers_ever[id(buffer)] = kind

    def define_buffer_vars(self, buffer: Buffer, node=None) -> None:
        """A buffer parameter or match_buffer defines its data pointer and its symbolic shape/stride/offset."""
        self.define(buffer.data, "buffer data", node, allow_redefine=True)
        for e in list(buffer.shape) + list(buffer.strides) + [buffer.elem_offset]:
            if isinstance(e, E.Var) and self.lookup(e) is None:
                self.define(e, "buffer shape variable", node, allow_redefine=True)
            else:
                self.visit_expr(e)

    def lookup(self, var: E.Var):
        crossed = None
        for frame in reversed(self.frames):
            hit = frame.vars.get(id(var))
            if hit is not None:
                return hit[1], crossed
            if frame.barrier is not None and crossed is None:
                crossed = frame.barrier
        return None

    def push(self, barrier: str | None = None) -> None:
        self.frames.append(_Frame(barrier))

    def pop(self) -> None:
        for var_id, (var, _kind) in self.frames.pop().vars.items():
            self.domains.pop(var_id, None)

    # -- expressions ---------------------------------------------------------------------------
    def visit_expr(self, expr):
        t = type(expr)
        if t is E.IntImm or t is E.FloatImm:
            return None  # leaves with nothing to check: skip the dispatch (the bulk of all expressions)
        if t is E.Var:
            return self.visit_var_(expr)
        return super().visit_expr(expr)

    def visit_var_(self, op: E.Var):
        found = self.lookup(op)
        if found is None:
            owner = self.iter_owner.get(id(op))
            if owner is not None:
                self.error("iterator-scope", f"block iterator {op.name} of block {owner!r} is used outside its block; "
                           f"outside the block use the loop variables it is bound to", key=id(op))
            elif id(op) in self.defined_ever:
                self.error("undefined-variable", f"variable {op.name} is used outside the scope that defines it "
                           f"({self.defined_ever[id(op)]})", key=id(op))
            else:
                self.error("undefined-variable", f"variable {op.name} is used but never defined: it is not a parameter, "
                           f"buffer shape variable, loop variable, block iterator or let variable; pass it as a "
                           f"parameter or define it", key=id(op))
            return
        kind, crossed = found
        if crossed is not None and kind == "loop variable":
            self.error("iterator-scope", f"loop variable {op.name} is used inside block {crossed!r}; inside a block "
                       f"use its iterators (bind one to {op.name} with T.axis.spatial/T.axis.remap)",
                       key=(id(op), crossed))

    visit_size_var_ = visit_var_

    def visit_let_(self, op: E.Let):
        self.visit_expr(op.value)
        self.push()
        self.define(op.var, "let variable")
        self.visit_expr(op.body)
        self.pop()

    def _check_buffer_use(self, buffer: Buffer, node) -> None:
        if id(buffer) not in self.buffers_ever and self.lookup(buffer.data) is None:
            self.error("undefined-variable", f"buffer {buffer.name} is used but not defined: it is not a parameter, "
                       f"alloc_buffer, match_buffer or allocation", node, key=("buf", id(buffer)))

    def visit_buffer_load_(self, op):
        self._check_buffer_use(op.buffer, op)
        super().visit_buffer_load_(op)

    # -- statements ----------------------------------------------------------------------------
    def visit_stmt(self, stmt):
        self.spans.append(getattr(stmt, "span", None))
        try:
            super().visit_stmt(stmt)
        finally:
            self.spans.pop()

    def visit_buffer_store_(self, op: S.BufferStore):
        self._check_buffer_use(op.buffer, op)
        self._check_store_dtype(op)
        super().visit_buffer_store_(op)

    def _check_store_dtype(self, op: S.BufferStore) -> None:
        lanes = 1
        for index in op.indices:
            lanes *= dt.lanes_of(index.dtype)
        want = dt.with_lanes(op.buffer.dtype, dt.lanes_of(op.buffer.dtype) * lanes)
        if op.value.dtype != want and op.value.dtype != op.buffer.dtype:
            self.error("store-dtype", f"the store to {op.buffer.name} ({op.buffer.dtype}) has a value of dtype "
                       f"{op.value.dtype}; cast the value (T.Cast({op.buffer.dtype!r}, ...)) or change the buffer dtype",
                       op, key=id(op))

    def visit_for_(self, op: S.For):
        self.visit_expr(op.min)
        self.visit_expr(op.extent)
        self.push()
        self.define(op.loop_var, "loop variable", op)
        self.loop_var_ids.add(id(op.loop_var))
        self.domains[id(op.loop_var)] = (op.loop_var, E.Range.from_min_extent(op.min, op.extent))
        self.visit_stmt(op.body)
        self.pop()

    def visit_let_stmt_(self, op: S.LetStmt):
        self.visit_expr(op.value)
        self.push()
        self.define(op.var, "let variable", op)
        self.visit_stmt(op.body)
        self.pop()

    def visit_allocate_(self, op: S.Allocate):
        for e in op.extents:
            self.visit_expr(e)
        self.push()
        self.define(op.buffer_var, "allocation", op)
        self.visit_expr(op.condition)
        self.visit_stmt(op.body)
        self.pop()

    def visit_decl_buffer_(self, op: S.DeclBuffer):
        self.define_buffer(op.buffer, "declared buffer", op)
        for e in list(op.buffer.shape) + list(op.buffer.strides) + [op.buffer.elem_offset]:
            self.visit_expr(e)
        if self.lookup(op.buffer.data) is None:
            self.visit_expr(op.buffer.data)
        self.visit_stmt(op.body)

    def visit_attr_stmt_(self, op: S.AttrStmt):
        self.visit_expr(op.value)
        if isinstance(op.node, E.IterVar):  # thread_extent / virtual_thread define the thread variable
            self.push()
            if self.lookup(op.node.var) is None:
                self.define(op.node.var, "loop variable", op, allow_redefine=True)
                self.domains[id(op.node.var)] = (op.node.var, E.Range.from_min_extent(0, op.value))
            self.visit_stmt(op.body)
            self.pop()
            return
        if isinstance(op.node, E.PrimExpr):
            self.visit_expr(op.node)
        self.visit_stmt(op.body)

    def visit_block_realize_(self, op: S.BlockRealize):
        block = op.block
        for v in op.iter_values:
            self.visit_expr(v)
        self.visit_expr(op.predicate)
        if len(op.iter_values) != len(block.iter_vars):
            self.error("binding-extent", f"block {block.name_hint!r} has {len(block.iter_vars)} iterators but "
                       f"{len(op.iter_values)} bindings", block)
        else:
            self._check_bindings(op)
        self.spans.append(op.span)
        try:
            self.visit_stmt(block)
        finally:
            self.spans.pop()

    def visit_block_(self, op: S.Block):
        for iv in op.iter_vars:  # iterator domains are evaluated outside the block (TVM: they may name loops)
            self.visit_expr(iv.dom.min)
            self.visit_expr(iv.dom.extent)
        # As TVM, only a block with iterators hides the loop variables around it (an opaque block may use them).
        self.push(barrier=op.name_hint if op.iter_vars else None)
        for iv in op.iter_vars:
            self.define(iv.var, f"iterator of block {op.name_hint!r}", iv)
            self.iter_owner[id(iv.var)] = op.name_hint
            self.domains[id(iv.var)] = (iv.var, iv.dom)
        for buffer in op.alloc_buffers:
            self.define_buffer(buffer, f"alloc_buffer of block {op.name_hint!r}", op)
            for e in list(buffer.shape) + list(buffer.strides) + [buffer.elem_offset]:
                self.visit_expr(e)
            self.define(buffer.data, "buffer data", op, allow_redefine=True)
        for match in op.match_buffers:
            self.visit_buffer_region(match.source)
            self._check_buffer_use(match.source.buffer, match)
            self.define_buffer(match.buffer, f"match_buffer of block {op.name_hint!r}", match)
            self.define_buffer_vars(match.buffer, match)
        for region in op.reads:
            self.visit_buffer_region(region)
        self.blocks.append(op)
        for region in op.writes:  # TVM allows reduce iterators here (a reduction over a non-compact data flow)
            self.visit_buffer_region(region)
        if op.init is not None:
            self.visit_stmt(op.init)
        self.visit_stmt(op.body)
        self.blocks.pop()
        if op is not self.root_block:
            self._check_regions(op)
        self.pop()

    # -- rule: bindings ------------------------------------------------------------------------
    def _analyzer(self):
        """An analyzer that knows the domains of the loop variables and block iterators in scope.

        Built lazily and kept up to date incrementally: variables are unique objects, so a bound
        left behind by a variable that went out of scope is never consulted again."""
        if self._ana is None:
            self._ana = Analyzer()
        ana = self._ana
        for var_id, (var, dom) in self.domains.items():
            if var_id in self._ana_known:
                continue
            self._ana_known.add(var_id)
            try:
                if isinstance(dom.min, E.IntImm) and isinstance(dom.extent, E.IntImm):
                    # the cheap path: a constant range is just a constant bound
                    ana.update(var, ConstIntBound(dom.min.value, dom.min.value + dom.extent.value - 1), override=True)
                else:
                    ana.bind(var, dom, allow_override=True)
            except (TypeError, ValueError):  # a domain the analyzer cannot use: leave the variable unbounded
                continue
        return ana

    def _check_bindings(self, realize: S.BlockRealize) -> None:
        """TVM's rule: the image of each binding lies inside the iterator's domain (a ``T.where``
        predicate may cut a larger image down), and a binding that is one loop variable (plus a
        constant) runs over exactly the iterator's extent. Composite bindings (``i0 * 8 + ax0``
        after ``compute_at``, or a partial region) need not cover the whole domain."""
        block = realize.block
        ana = None
        predicated = not (isinstance(realize.predicate, E.IntImm) and realize.predicate.value)
        for iv, value in zip(block.iter_vars, realize.iter_values):
            if self.check_affine and not _is_quasi_affine(value):
                self.error("affine-binding", f"the binding of iterator {iv.var.name} of block {block.name_hint!r} "
                           f"({_show(value)}) is not affine in the loop variables; use sums of loop variables times "
                           f"constants, with // and % by constants", iv, key=id(iv))
            if iv.iter_type not in (E.IterVar.DataPar, E.IterVar.CommReduce):
                continue
            dom_min, dom_ext = iv.dom.min, iv.dom.extent
            if not (isinstance(dom_min, E.IntImm) and isinstance(dom_ext, E.IntImm)):
                continue
            loop_var = _single_loop_var(value)
            if loop_var is not None and id(loop_var) in self.loop_var_ids and id(loop_var) in self.domains:
                loop_ext = self.domains[id(loop_var)][1].extent
                if isinstance(loop_ext, E.IntImm) and loop_ext.value > dom_ext.value and not predicated:
                    self.error("binding-extent", f"iterator {iv.var.name} has extent {dom_ext.value} but its binding "
                               f"{_show(value)} ranges over {loop_ext.value} iterations under the loops; make the "
                               f"loop run {dom_ext.value} times or declare the iterator with extent {loop_ext.value}",
                               iv, key=id(iv))
                    continue
            if predicated or not _is_quasi_affine(value) or not self.check_binding_range:
                continue  # a predicate may cut the image down; TVM leaves non-affine bindings unchecked
            if isinstance(value, E.IntImm):
                lo = hi = value.value
            elif isinstance(value, E.Var) and _const_range(self.domains.get(id(value))) is not None:
                lo, hi = _const_range(self.domains[id(value)])  # the common T.axis.remap case, without the analyzer
            elif _has_dependent_extent(value, self.domains):
                continue  # an extent bounded by an outer loop: the constant bound would be too loose to judge
            else:
                if ana is None:
                    ana = self._analyzer()
                bound = ana.const_int_bound(value)
                lo, hi = bound.min_value, bound.max_value
                if lo <= bound.NEG_INF or hi >= bound.POS_INF:
                    continue
            if lo < dom_min.value or hi > dom_min.value + dom_ext.value - 1:
                self.error("binding-extent", f"iterator {iv.var.name} has domain [{dom_min.value}, "
                           f"{dom_min.value + dom_ext.value}) but its binding {_show(value)} takes values in "
                           f"[{lo}, {hi + 1}) under the loops; add a T.where predicate or fix the loops",
                           iv, key=id(iv))

    # -- rule: access regions ------------------------------------------------------------------
    def _check_regions(self, block: S.Block) -> None:
        """Report an access outside the declared regions only when it is provably outside: an
        access to a buffer not declared at all, one the analyzer proves to leave every declared
        region, or one whose constant bounds leave the constant hull of every declared region.
        What the analyzer cannot decide is logged, not reported."""
        if _point_accesses_covered(block):
            return  # the common case: straight-line body, every access is a declared point
        try:
            reads, writes = infer_block_access(block, exclude_written=True)  # an update need not declare its own read
        except Exception as exc:  # noqa: BLE001 - an access the inference cannot model is not a user error here
            logger.debug("access inference failed on block %s: %s", block.name_hint, exc)
            return
        for kind, actual, declared in (("reads", reads, block.reads), ("writes", writes, block.writes)):
            for region in actual:
                candidates = [d for d in declared if d.buffer is region.buffer]
                if kind == "reads" and (block.init is not None or any(
                        iv.iter_type == E.IterVar.CommReduce for iv in block.iter_vars)):
                    # a reduction (its update, once decomposed) reads what it accumulates into
                    candidates += [d for d in block.writes if d.buffer is region.buffer]
                if any(_same_or_inside(d, region) for d in candidates):
                    continue  # the common case, decided without the analyzer
                if candidates:
                    ana = self._analyzer()
                    verdicts = [_cover_verdict(ana, d, region) for d in candidates]
                    if any(v is not False for v in verdicts):
                        if all(v is None for v in verdicts):
                            logger.debug("block %s: cannot prove that %s lies inside its T.%s", block.name_hint,
                                         _region_text(region), kind)
                        continue
                declared_text = ", ".join(_region_text(d) for d in candidates) or "nothing of it"
                self.error("access-region", f"block {block.name_hint!r} {kind} {_region_text(region)} but declares "
                           f"{declared_text} in T.{kind}; widen T.{kind} or drop it to let it be inferred",
                           block, key=(id(block), kind, id(region.buffer)))


def _verify_func(func: PrimFunc, name: str, check_affine: bool, skip=()) -> list[WellFormedError]:
    checker = _Checker(func, name, check_affine)
    checker.check_binding_range = "binding-range" not in skip
    for param in func.params:
        checker.define(param, "parameter", func)
    for param, buffer in func.buffer_map.items():
        checker.define_buffer(buffer, "parameter buffer", func)
        checker.define_buffer_vars(buffer, func)
    checker.visit_stmt(func.body)
    return checker.errors


def verify_well_formed(obj: PrimFunc | IRModule, assert_mode: bool = True, check_affine: bool = False,
                       skip: tuple[str, ...] = ()) -> bool:
    """Check the rules of this module on a PrimFunc or every PrimFunc of an IRModule.

    Returns True when well formed. Otherwise raises ``WellFormedError`` (a ``VerifyError``) for the
    first broken rule, or returns False when ``assert_mode`` is False (the errors are logged).

    Parameters
    ----------
    obj : PrimFunc or IRModule
        The program.
    assert_mode : bool
        Raise on the first violation instead of returning False.
    check_affine : bool
        Also require affine block bindings.
    skip : tuple of str
        Rules (names from ``RULES``) whose violations are only logged, and ``"binding-range"``: do not
        check that a binding's image stays in its iterator's domain. The parser skips
        ``"access-region"`` and ``"binding-range"``, which TVM's parser does not check either (the
        schedule does, when it works on the block).

    Returns
    -------
    bool
        True when well formed.

    Examples
    --------
    >>> from tensorize.analysis.verify import verify_well_formed
    >>> verify_well_formed(matmul())
    True
    """
    if isinstance(obj, IRModule):
        funcs = [(gv.name_hint, f) for gv, f in obj.functions.items() if isinstance(f, PrimFunc)]
    elif isinstance(obj, PrimFunc):
        funcs = [(obj.attrs.get("global_symbol", "main"), obj)]
    else:
        raise TypeError(f"verify_well_formed takes a PrimFunc or an IRModule, got {type(obj).__name__}")
    errors: list[WellFormedError] = []
    for name, func in funcs:
        errors.extend(_verify_func(func, str(name), check_affine, skip))
    for err in [e for e in errors if e.rule in skip]:
        logger.info("not checked here: %s", err)
    errors = [e for e in errors if e.rule not in skip]
    if not errors:
        return True
    for err in errors:
        logger.info("%s", err)
    if assert_mode:
        first = errors[0]
        if len(errors) > 1:
            first.args = (f"{first.args[0]}\n({len(errors) - 1} more problem(s) found; fix this one first)",)
        first.errors = errors
        raise first
    return False
