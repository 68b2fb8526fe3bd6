"""Matching a block against a tensor intrinsic's ``desc`` (the comparison behind ``sch.tensorize``).

The desc's root block body (a loop nest around one computation block) is walked in step with the
body of the block being tensorized. Loops pair by position (same extents), blocks pair with the same
iterator kinds and extents, expressions pair up to variable renaming, commutation of ``+``/``*`` and
simplification under the known iterator ranges. Every desc buffer maps to one real buffer; each
real access must equal ``base + desc access`` with a ``base`` that does not change inside the tile:
those bases are where the intrinsic's buffers sit in the real ones (the ``T.match_buffer`` regions).

A failed match raises ``TensorizeMismatch`` whose message says exactly what differs.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...arith import Analyzer
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.buffer import Buffer
from ...ir.functor import ir_transform, substitute, uses_var
from ...ir.structural import structural_equal

_COMMUTATIVE = (E.Add, E.Mul, E.Max, E.Min, E.EQ, E.NE, E.And, E.Or)


class TensorizeMismatch(Exception):
    """The block does not compute what the intrinsic's desc computes; the message says where."""


@dataclass
class BufferMatch:
    """Where desc buffer ``desc`` sits in real buffer ``real``: ``base[d]`` is the real index of the
    tile's origin on real axis ``d`` (the leading real axes the desc lacks come first)."""

    desc: Buffer
    real: Buffer
    base: list
    first_access: str


def _text(node) -> str:
    try:
        return node.script() if hasattr(node, "script") else str(node)
    except Exception:  # printing is best effort inside an error message
        return repr(node)


class DescMatcher:
    """Compares ``desc_body`` (the desc root block's body) with ``block_body`` (the target block's body).

    ``outer_vars`` are the iterators of the block being tensorized: they may appear in the tile
    bases; every variable bound inside the bodies is an inner variable and must not."""

    def __init__(self, intrin_name: str, outer_ranges: dict):
        self.intrin_name = intrin_name
        self.var_map: dict[int, E.PrimExpr] = {}
        self.inner: set[int] = set()
        self.buffers: dict[int, BufferMatch] = {}
        self.ana = Analyzer()
        for var, rng in outer_ranges.items():
            self.ana.bind(var, rng)

    # -- statements ----------------------------------------------------------------------------
    def match_stmt(self, d: S.Stmt, r: S.Stmt) -> None:
        """Match the description statement ``d`` against the program statement ``r``; raises on a mismatch.

        Parameters
        ----------
        d : Stmt
            The statement of the intrinsic's description.
        r : Stmt
            The statement of the program.
        """
        if isinstance(d, S.SeqStmt) or isinstance(r, S.SeqStmt):
            ds, rs = S.stmt_list(d), S.stmt_list(r)
            if len(ds) != len(rs):
                raise TensorizeMismatch(f"structure mismatch: the desc has {len(ds)} statements here, the block has "
                                        f"{len(rs)}:\n{_text(r)}")
            for a, b in zip(ds, rs):
                self.match_stmt(a, b)
            return
        if type(d) is not type(r):
            raise TensorizeMismatch(f"structure mismatch: the desc has a {type(d).__name__} where the block has a "
                                    f"{type(r).__name__}:\n  desc:  {_text(d)}\n  block: {_text(r)}")
        method = getattr(self, "_stmt_" + type(d).__name__, None)
        if method is None:
            raise TensorizeMismatch(f"tensorize cannot compare {type(d).__name__} statements yet:\n{_text(r)}")
        method(d, r)

    def _stmt_For(self, d: S.For, r: S.For) -> None:
        de, re_ = self._const(d.extent), self._const(r.extent)
        if de is None or re_ is None or de != re_:
            raise TensorizeMismatch(f"extent mismatch: desc loop {d.loop_var.name} has extent {_text(d.extent)}, the "
                                    f"block's loop {r.loop_var.name} has {_text(r.extent)}; split the loop so its "
                                    f"inner part has extent {_text(d.extent)}")
        if self._const(d.min) != 0 or self._const(r.min) != 0:
            raise TensorizeMismatch(f"loop {r.loop_var.name} must start at 0 (it starts at {_text(r.min)})")
        self._bind_inner(d.loop_var, r.loop_var, E.Range.from_min_extent(0, re_))
        self.match_stmt(d.body, r.body)

    def _stmt_BlockRealize(self, d: S.BlockRealize, r: S.BlockRealize) -> None:
        d, r = _drop_unit_iters(d), _drop_unit_iters(r)
        db, rb = d.block, r.block
        if len(db.iter_vars) != len(rb.iter_vars):
            raise TensorizeMismatch(
                f"iterator count mismatch: desc block {db.name_hint!r} has {len(db.iter_vars)} iterators "
                f"({', '.join(iv.var.name for iv in db.iter_vars)}), block {rb.name_hint!r} has {len(rb.iter_vars)} "
                f"({', '.join(iv.var.name for iv in rb.iter_vars)})")
        for div, riv in zip(db.iter_vars, rb.iter_vars):
            if div.iter_type != riv.iter_type:
                raise TensorizeMismatch(f"iterator kind mismatch: desc iterator {div.var.name} is {_kind(div)}, block "
                                        f"iterator {riv.var.name} is {_kind(riv)}")
            de, re_ = self._const(div.dom.extent), self._const(riv.dom.extent)
            if de is None or de != re_:
                raise TensorizeMismatch(f"extent mismatch: desc iterator {div.var.name} has extent "
                                        f"{_text(div.dom.extent)}, block iterator {riv.var.name} has "
                                        f"{_text(riv.dom.extent)}")
            self._bind_inner(div.var, riv.var, riv.dom)
        for div, dv, rv in zip(db.iter_vars, d.iter_values, r.iter_values):
            if not self._equal_values(dv, rv):
                raise TensorizeMismatch(f"binding mismatch: desc iterator {div.var.name} is bound to {_text(dv)}, the "
                                        f"block binds it to {_text(rv)}")
        if not self.ana.can_prove(r.predicate) and not self._equal_values(d.predicate, r.predicate):
            raise TensorizeMismatch(f"predicate mismatch: block {rb.name_hint!r} runs only when {_text(r.predicate)}; "
                                    "the intrinsic computes a full tile (pad the workload with pad_einsum)")
        if (db.init is None) != (rb.init is None):
            has, lacks = ("desc", "block") if db.init is not None else ("block", "desc")
            raise TensorizeMismatch(f"init mismatch: the {has} block has an init statement, the {lacks} has none; "
                                    "tensorize the update after decompose_reduction, or use an intrinsic with init")
        if db.init is not None:
            self.match_stmt(db.init, rb.init)
        if db.alloc_buffers or rb.alloc_buffers or db.match_buffers or rb.match_buffers:
            raise TensorizeMismatch(f"block {rb.name_hint!r} allocates or matches buffers; tensorize needs a plain "
                                    "computation block")
        self.match_stmt(db.body, rb.body)

    def _stmt_BufferStore(self, d: S.BufferStore, r: S.BufferStore) -> None:
        self._match_access(d.buffer, d.indices, r.buffer, r.indices, "writes")
        self.match_expr(d.value, r.value)

    def _stmt_Evaluate(self, d: S.Evaluate, r: S.Evaluate) -> None:
        self.match_expr(d.value, r.value)

    def _stmt_IfThenElse(self, d: S.IfThenElse, r: S.IfThenElse) -> None:
        self.match_expr(d.condition, r.condition)
        self.match_stmt(d.then_case, r.then_case)
        if (d.else_case is None) != (r.else_case is None):
            raise TensorizeMismatch("structure mismatch: only one side has an else branch")
        if d.else_case is not None:
            self.match_stmt(d.else_case, r.else_case)

    # -- expressions ---------------------------------------------------------------------------
    def match_expr(self, d: E.PrimExpr, r: E.PrimExpr) -> None:
        """Match the description expression ``d`` against the program expression ``r``; raises on a mismatch.

        Parameters
        ----------
        d : PrimExpr
            The expression of the intrinsic's description.
        r : PrimExpr
            The expression of the program.
        """
        if isinstance(d, E.BufferLoad) and isinstance(r, E.BufferLoad):
            self._match_access(d.buffer, d.indices, r.buffer, r.indices, "reads")
            return
        if d.dtype != r.dtype:
            raise TensorizeMismatch(f"dtype mismatch: the desc computes {_text(d)} as {d.dtype}, the block computes "
                                    f"{_text(r)} as {r.dtype}")
        if isinstance(d, E.Var):
            if not self._equal_values(d, r):
                raise TensorizeMismatch(f"expression mismatch: desc {d.name} stands for {_text(self._mapped(d))}, the "
                                        f"block has {_text(r)}")
            return
        if isinstance(d, (E.IntImm, E.FloatImm, E.StringImm)):
            if not isinstance(r, type(d)) or r.value != d.value:
                raise TensorizeMismatch(f"constant mismatch: the desc has {_text(d)}, the block has {_text(r)}")
            return
        if isinstance(d, E.BufferLoad):
            raise TensorizeMismatch(f"expression mismatch: the desc reads {_text(d)}, the block computes {_text(r)}")
        if type(d) is not type(r):
            raise TensorizeMismatch(f"expression mismatch: the desc has {_text(d)} ({type(d).__name__}), the block "
                                    f"has {_text(r)} ({type(r).__name__})")
        if isinstance(d, _COMMUTATIVE):
            saved = self._snapshot()
            try:
                self.match_expr(d.a, r.a)
                self.match_expr(d.b, r.b)
                return
            except TensorizeMismatch as first:
                self._restore(saved)
                try:
                    self.match_expr(d.a, r.b)
                    self.match_expr(d.b, r.a)
                    return
                except TensorizeMismatch:
                    self._restore(saved)
                    raise first from None
        if isinstance(d, E.Call) and d.op is not r.op:
            raise TensorizeMismatch(f"call mismatch: the desc calls {d.op.name}, the block calls {r.op.name}")
        for name in type(d)._fields:
            a, b = getattr(d, name), getattr(r, name)
            if isinstance(a, E.PrimExpr):
                self.match_expr(a, b)
            elif isinstance(a, (list, tuple)) and all(isinstance(x, E.PrimExpr) for x in a):
                if len(a) != len(b):
                    raise TensorizeMismatch(f"expression mismatch: {_text(d)} vs {_text(r)}")
                for x, y in zip(a, b):
                    self.match_expr(x, y)
            elif not structural_equal(a, b):
                raise TensorizeMismatch(f"expression mismatch: {_text(d)} vs {_text(r)}")

    # -- buffers -------------------------------------------------------------------------------
    def _match_access(self, dbuf: Buffer, dind, rbuf: Buffer, rind, verb: str) -> None:
        if dbuf.dtype != rbuf.dtype:
            raise TensorizeMismatch(f"dtype mismatch: desc {verb} {dbuf.name} as {dbuf.dtype}, the block {verb} "
                                    f"{rbuf.name} as {rbuf.dtype}")
        known = self.buffers.get(id(dbuf))
        if known is not None and known.real is not rbuf:
            raise TensorizeMismatch(f"buffer mismatch: desc buffer {dbuf.name} is {known.real.name} in one access "
                                    f"({known.first_access}) and {rbuf.name} in another")
        for m in self.buffers.values():
            if m.real is rbuf and m.desc is not dbuf:
                raise TensorizeMismatch(f"buffer mismatch: the block's {rbuf.name} plays two desc buffers "
                                        f"({m.desc.name} and {dbuf.name})")
        if len(rind) < len(dind):
            raise TensorizeMismatch(f"rank mismatch: desc {dbuf.name} has {len(dind)} axes, the block's {rbuf.name} "
                                    f"has {len(rind)}")
        lead = len(rind) - len(dind)
        access = f"{rbuf.name}[{', '.join(_text(i) for i in rind)}]"
        base = []
        for axis, ri in enumerate(rind):
            di = dind[axis - lead] if axis >= lead else E.make_const(ri.dtype, 0)
            diff = self.ana.simplify(E.sub(ri, self._mapped_expr(di)))
            if uses_var(diff, lambda v: id(v) in self.inner):  # x // c % m and x % (c * m) // c: one form
                diff = self.ana.simplify(E.sub(_div_mod_normal(ri), _div_mod_normal(self._mapped_expr(di))))
            if uses_var(diff, lambda v: id(v) in self.inner):
                what = (f"index {axis} ({_text(ri)}) moves inside the tile but desc {dbuf.name} has no such axis"
                        if axis < lead else
                        f"index {_text(ri)} does not follow desc index {_text(di)} with unit step (offset {_text(diff)} "
                        "varies inside the tile)")
                raise TensorizeMismatch(f"inner access of {rbuf.name} is not contiguous: in {access}, {what}; "
                                        "reorder/split the loops or rewrite the layout with transform_layout")
            base.append(diff)
        if known is None:
            self.buffers[id(dbuf)] = BufferMatch(dbuf, rbuf, base, access)
            return
        for axis, (a, b) in enumerate(zip(known.base, base)):
            if not self.ana.can_prove_equal(a, b):
                raise TensorizeMismatch(f"offset mismatch: {rbuf.name} is accessed at tile origin {_text(a)} on axis "
                                        f"{axis} in {known.first_access} but at {_text(b)} in {access}")

    # -- variables -----------------------------------------------------------------------------
    def _bind_inner(self, dvar: E.Var, rvar: E.Var, dom: E.Range) -> None:
        self.var_map[id(dvar)] = rvar
        self.inner.add(id(rvar))
        self.ana.bind(rvar, dom, allow_override=True)

    def _mapped(self, dvar: E.Var):
        return self.var_map.get(id(dvar), dvar)

    def _mapped_expr(self, e):
        return substitute(e, lambda v: self.var_map.get(id(v)))

    def _equal_values(self, d, r) -> bool:
        mapped = self._mapped_expr(d)
        if mapped is r:
            return True
        if isinstance(mapped, E.Var) and isinstance(r, E.Var) or mapped.dtype != r.dtype:
            return False
        return self.ana.can_prove_equal(mapped, r)

    def _const(self, e) -> int | None:
        e = self.ana.simplify(e)
        return int(e.value) if isinstance(e, E.IntImm) else None

    def _snapshot(self):
        return dict(self.buffers)

    def _restore(self, saved) -> None:
        self.buffers = saved


def _drop_unit_iters(realize: S.BlockRealize) -> S.BlockRealize:
    """The block without its extent-1 iterators (each replaced by its only value): blockize keeps them
    with ``preserve_unit_iters``, but they are no axis of the tile."""
    unit = {id(iv.var): iv.dom.min for iv in realize.block.iter_vars
            if isinstance(iv.dom.extent, E.IntImm) and iv.dom.extent.value == 1}
    if not unit:
        return realize
    keep = [(iv, v) for iv, v in zip(realize.block.iter_vars, realize.iter_values) if id(iv.var) not in unit]
    block = realize.block
    lookup = lambda v: unit.get(id(v))  # noqa: E731
    block = block.replace(iter_vars=tuple(iv for iv, _ in keep), body=substitute(block.body, lookup),
                          init=None if block.init is None else substitute(block.init, lookup))
    return S.BlockRealize([v for _, v in keep], realize.predicate, block)


def _kind(iv: E.IterVar) -> str:
    return {E.IterVar.DataPar: "spatial", E.IterVar.CommReduce: "reduction"}.get(iv.iter_type, "opaque")


__all__ = ["DescMatcher", "TensorizeMismatch", "BufferMatch"]


def _div_mod_normal(expr):
    """``expr`` with every ``floormod(floordiv(x, c), m)`` written ``floordiv(floormod(x, c * m), c)`` (equal for
    positive constants ``c``, ``m``): index maps and the simplifier leave either form."""
    def rewrite(node):
        if (type(node) is E.FloorMod and type(node.a) is E.FloorDiv and isinstance(node.b, E.IntImm)
                and isinstance(node.a.b, E.IntImm) and node.b.value > 0 and node.a.b.value > 0):
            c = node.a.b
            return E.FloorDiv(E.FloorMod(node.a.a, E.IntImm(c.dtype, c.value * node.b.value)), c)
        return None

    return ir_transform(expr, None, rewrite, ["tir.FloorMod"])
