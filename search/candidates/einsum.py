"""Einsum-like blocks: what tensorization candidate generation reads from a block or a desc.

A block is *einsum-like* when its body is one store ``Out[idx] = f(loads)`` where ``f`` reads each
input buffer with a single index pattern and reads ``Out`` (if at all) at the store's own indices:
GEMM, batch matmul, convolutions, pooling. Each block iterator is then characterised by its kind
(``S``/``R``) and the set of operands whose indices mention it: for GEMM ``i -> {A, C}``,
``j -> {B, C}``, ``k -> {A, B}``. Iterators of a block and of an intrinsic's desc with the same
characterisation play the same role.

>>> sch = tvm.tir.Schedule(matmul())
>>> einsum = Einsum.of_block(sch.get(sch.get_block("C")))
>>> kind, buffers = einsum.signature(einsum.iter_vars[2].var)
>>> kind, sorted(buffers)
('R', ['A', 'B'])
"""
from __future__ import annotations

from dataclasses import dataclass

from tensorize.ir import expr as E
from tensorize.ir.functor import collect_vars, post_order_visit
from tensorize.ir.stmt import Block, BufferStore, For

__all__ = ["Einsum", "NotEinsumError", "match_operands", "desc_compute_block"]


class NotEinsumError(ValueError):
    """The block (or desc) is not a single einsum-like store; the message says why."""


@dataclass(frozen=True)
class Einsum:
    """The einsum view of one block: output buffer and indices, inputs and their indices, the value.

    ``accesses`` maps each buffer (output included when it is read) to its index tuple; ``order``
    lists the buffers as they first appear (output first).
    """

    block: Block
    output: object
    value: E.PrimExpr
    accesses: dict
    order: tuple

    @staticmethod
    def of_block(block: Block) -> "Einsum":
        """Analyse ``block``; raise ``NotEinsumError`` naming what does not fit."""
        body = block.body
        name = block.name_hint
        if not isinstance(body, BufferStore):
            raise NotEinsumError(f"block {name!r} is not a single buffer store (its body is a "
                                 f"{type(body).__name__}); only einsum-like blocks can be tensorized")
        out = body.buffer
        accesses = {out: tuple(body.indices)}
        order = [out]
        problems = []

        def visit(node):
            if isinstance(node, E.BufferLoad):
                seen = accesses.get(node.buffer)
                if seen is None:
                    accesses[node.buffer] = tuple(node.indices)
                    order.append(node.buffer)
                elif not _same_indices(seen, node.indices):
                    problems.append(f"block {name!r} reads {node.buffer.name!r} with two index patterns")

        post_order_visit(body.value, visit)
        if problems:
            raise NotEinsumError(problems[0])
        if block.init is not None:
            init = block.init
            if not isinstance(init, BufferStore) or init.buffer is not out or not _same_indices(
                    init.indices, body.indices):
                raise NotEinsumError(f"block {name!r} has an init that is not one store to {out.name!r}")
        iters = {id(iv.var) for iv in block.iter_vars}
        for buf, idx in accesses.items():
            for var in (v for ix in idx for v in collect_vars(ix)):
                if id(var) not in iters:
                    raise NotEinsumError(f"block {name!r} indexes {buf.name!r} with {var.name!r}, which is not "
                                         "one of its iterators")
        return Einsum(block, out, body.value, accesses, tuple(order))

    @property
    def iter_vars(self) -> tuple:
        """The block's iterators."""
        return tuple(self.block.iter_vars)

    def buffers_of(self, var: E.Var) -> frozenset:
        """The buffers whose indices mention ``var``."""
        return frozenset(buf for buf, idx in self.accesses.items()
                         if any(v is var for ix in idx for v in collect_vars(ix)))

    def signature(self, var: E.Var, rename: dict | None = None) -> tuple:
        """``(kind, operands)`` of iterator ``var``; ``rename`` maps buffers to operand names (default:
        the buffer names)."""
        iv = next(iv for iv in self.block.iter_vars if iv.var is var)
        kind = {E.IterVar.DataPar: "S", E.IterVar.CommReduce: "R"}.get(iv.iter_type, "O")
        names = frozenset((rename or {}).get(b, b.name) for b in self.buffers_of(var))
        return kind, names


def _same_indices(a, b) -> bool:
    from tensorize.ir.structural import structural_equal

    return len(a) == len(b) and all(structural_equal(x, y, map_free_vars=False) for x, y in zip(a, b))


def desc_compute_block(desc) -> tuple[Block, list[E.Var]]:
    """The innermost computation block of an intrinsic ``desc`` and the desc's loop variables bound
    to its iterators, in loop (outer to inner) order: ``(block, [iter var per loop])``."""
    from tensorize.ir.stmt import BlockRealize

    found = []

    def visit(node):
        if isinstance(node, BlockRealize) and node.block.iter_vars:
            found.append(node)

    post_order_visit(desc.body, visit)
    if not found:
        raise NotEinsumError("the intrinsic's desc has no computation block with iterators")
    realize = found[0]  # post order: innermost first
    loop_vars = []

    def loops(node):
        if isinstance(node, For):
            loop_vars.append(node.loop_var)

    post_order_visit(desc.body, loops)
    loop_vars.reverse()  # post order visits inner loops first
    order = []
    for lv in loop_vars:
        for iv, value in zip(realize.block.iter_vars, realize.iter_values):
            if value is lv and iv.var not in order:
                order.append(iv.var)
    if len(order) != len(realize.block.iter_vars):
        raise NotEinsumError("the desc's block iterators must each be bound to one of its loops")
    return realize.block, order


def match_operands(desc: Einsum, block: Einsum) -> dict:
    """Map each buffer of ``desc`` to the buffer of ``block`` playing its role, by matching the two
    store values structurally (``+`` and ``*`` may have their operands swapped). Raise
    ``NotEinsumError`` with the first difference, e.g. a dtype that would need a cast."""
    best_error = []

    def match(d, b, mapping):
        """All ways ``d`` matches ``b`` extending ``mapping``: a generator of mappings."""
        if isinstance(d, E.BufferLoad):
            if not isinstance(b, E.BufferLoad):
                best_error.append(f"the desc loads {d.buffer.name!r} where the block computes {_short(b)}")
                return
            if d.buffer.dtype != b.buffer.dtype:
                best_error.append(f"dtype mismatch: the desc's operand {d.buffer.name!r} is {d.buffer.dtype} but the "
                                  f"block's {b.buffer.name!r} is {b.buffer.dtype}; a cast would be needed (cast the "
                                  "operand in a separate stage or pick an intrinsic with these dtypes)")
                return
            have = mapping.get(d.buffer)
            if have is not None and have is not b.buffer:
                return
            if have is None and any(v is b.buffer for v in mapping.values()):
                best_error.append(f"the block's buffer {b.buffer.name!r} would play two operand roles")
                return
            yield {**mapping, d.buffer: b.buffer}
            return
        if type(d) is not type(b):
            best_error.append(f"the desc computes {_short(d)} where the block computes {_short(b)}")
            return
        if d.dtype != b.dtype:
            best_error.append(f"dtype mismatch: the desc computes {_short(d)} in {d.dtype} but the block computes "
                              f"{_short(b)} in {b.dtype}; a cast would be needed")
            return
        if isinstance(d, (E.IntImm, E.FloatImm)):
            if d.value == b.value:
                yield mapping
            else:
                best_error.append(f"the desc uses the constant {d.value} where the block uses {b.value}")
            return
        if isinstance(d, E.Var):
            best_error.append("the desc's value mentions a variable directly; only loads and arithmetic are matched")
            return
        fields = type(d)._fields
        orders = [(fields, fields)]
        if isinstance(d, (E.Add, E.Mul)):
            orders.append((("a", "b"), ("b", "a")))
        for dfields, bfields in orders:
            yield from _match_fields(match, [getattr(d, f) for f in dfields], [getattr(b, f) for f in bfields],
                                     mapping)

    for mapping in match(desc.value, block.value, {}):
        if mapping.get(desc.output, block.output) is not block.output:
            continue
        mapping = {**mapping, desc.output: block.output}
        if len(set(map(id, mapping.values()))) != len(mapping):
            continue
        if set(map(id, mapping.values())) != {id(b) for b in block.accesses}:
            best_error.append("the block reads buffers the desc does not")
            continue
        if desc.output.dtype != block.output.dtype:
            best_error.append(f"dtype mismatch: the desc writes {desc.output.dtype} but the block writes "
                              f"{block.output.name!r} as {block.output.dtype}")
            continue
        return mapping
    reason = best_error[0] if best_error else "the block's computation differs from the desc's"
    raise NotEinsumError(reason)


def _match_fields(match, ds, bs, mapping):
    if not ds:
        yield mapping
        return
    d, b = ds[0], bs[0]
    if isinstance(d, E.PrimExpr) and isinstance(b, E.PrimExpr):
        for m in match(d, b, mapping):
            yield from _match_fields(match, ds[1:], bs[1:], m)
    elif isinstance(d, (tuple, list)) and isinstance(b, (tuple, list)) and len(d) == len(b):
        yield from _match_fields(match, list(d) + ds[1:], list(b) + bs[1:], mapping)
    elif d == b or (hasattr(d, "name") and getattr(d, "name", None) == getattr(b, "name", None)):
        yield from _match_fields(match, ds[1:], bs[1:], mapping)


def _short(expr) -> str:
    text = str(expr)
    return text if len(text) <= 60 else text[:57] + "..."
