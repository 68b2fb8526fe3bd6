"""Descs with packed operands: an operand the intrinsic reads in a blocked layout, indexed by splits of
its iterators (``v // c`` and ``v % c``), e.g. AMX's VNNI-packed B ``B[vj // 16, vk // 4, vj % 16, vk % 4]``.

Candidate matching reads such an operand through its *logical* indices (the desc iterators it mentions,
in order of first appearance: ``B[vj, vk]``), so iterator roles and the block's reindex work as for a
plain desc; ``PackedLayout.index_map`` is then the ``transform_layout`` that packs the block's copy of
the operand (its fused dimensions, after padding) into the desc's physical layout.

A packed index is valid when every desc iterator it mentions appears either plainly (``v``) or split
once (``v // c`` and ``v % c``, ``c`` dividing the iterator's extent) and the desc buffer's shape is the
one these indices span: the map is then a bijection, and applying it to a whole fused dimension gives
tiles of exactly the desc's shape at each multiple of the intrinsic's extent.

>>> import intrinsics, tensorize as tvm
>>> from intrinsics.x86_amx import AMX_U8S8_INTRIN
>>> view = desc_view(tvm.tir.TensorIntrin.get(AMX_U8S8_INTRIN).desc)
>>> [ix.name for ix in view.einsum.accesses[view.einsum.order[2]]]
['vj', 'vk']
>>> view.packings["B"].text(["j", "k"])
'[j, k] -> [j // 16, k // 4, j % 16, k % 4]'
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tensorize.arith.index_map import IndexMap
from tensorize.ir import expr as E
from tensorize.ir.functor import substitute

from .einsum import Einsum, NotEinsumError, desc_compute_block

__all__ = ["PackedLayout", "DescView", "desc_view"]


@dataclass(frozen=True)
class PackedLayout:
    """How the desc stores one operand: its logical iterators (in logical dimension order) and the
    physical index expressions over them."""

    operand: str
    logical: tuple   # desc iterator Vars, one per logical dimension
    physical: tuple  # the desc's index expressions (over ``logical``)

    def index_map(self, n_outer: int) -> IndexMap:
        """``(outer..., logical...) -> (outer..., physical...)``: the layout of a block copy whose first
        ``n_outer`` dimensions stay outside the intrinsic."""
        src = [E.Var(f"v{d}", "int32") for d in range(n_outer + len(self.logical))]
        sub = {var: s for var, s in zip(self.logical, src[n_outer:])}
        return IndexMap(src, src[:n_outer] + [substitute(p, sub) for p in self.physical])

    def text(self, names) -> str:
        """The layout with the logical dimensions named ``names``, e.g. ``[j, k] -> [j // 16, ...]``."""
        sub = {var: E.Var(n, "int32") for var, n in zip(self.logical, names)}
        return f"[{', '.join(names)}] -> [{', '.join(str(substitute(p, sub)) for p in self.physical)}]"


@dataclass(frozen=True)
class DescView:
    """An intrinsic's desc as candidate matching reads it: the compute block, its iterators in loop
    order, the einsum over logical indices and the packed operands (desc buffer name -> layout)."""

    block: object
    loop_order: list
    einsum: Einsum
    packings: dict


def desc_view(desc) -> DescView:
    """Read an intrinsic's ``desc``; raise ``NotEinsumError`` naming an index that is neither an
    iterator, a constant, nor a valid split of an iterator.

    Parameters
    ----------
    desc : PrimFunc
        The intrinsic's description.

    Returns
    -------
    DescView
        Plain operands keep their indices; packed ones are indexed by their logical iterators.
    """
    block, order = desc_compute_block(desc)
    einsum = Einsum.of_block(block)
    extents = {id(iv.var): int(iv.dom.extent) for iv in block.iter_vars}
    accesses, packings = {}, {}
    for buf, idx in einsum.accesses.items():
        if all(isinstance(ix, (E.Var, E.IntImm)) for ix in idx):
            accesses[buf] = idx
            continue
        layout = _packed_layout(buf, idx, extents)
        packings[buf.name] = layout
        accesses[buf] = layout.logical
    return DescView(block, order, dataclasses.replace(einsum, accesses=accesses), packings)


def _packed_layout(buf, idx, extents) -> PackedLayout:
    """Check that ``idx`` is a bijective split layout of ``buf`` (see the module docstring)."""
    uses, logical = {}, []
    for d, ix in enumerate(idx):
        if isinstance(ix, E.Var):
            var, op, c = ix, "plain", None
        elif isinstance(ix, (E.FloorDiv, E.FloorMod)) and isinstance(ix.a, E.Var) and isinstance(ix.b, E.IntImm):
            var, op, c = ix.a, "div" if isinstance(ix, E.FloorDiv) else "mod", ix.b.value
        else:
            raise NotEinsumError(f"the desc indexes {buf.name!r} with {ix}; packed operands support iterators "
                                 "and their splits (v // c, v % c) only")
        if id(var) not in extents:
            raise NotEinsumError(f"the desc indexes {buf.name!r} with {var.name!r}, not one of its iterators")
        if id(var) not in uses:
            logical.append(var)
        uses.setdefault(id(var), {})
        if op in uses[id(var)]:
            raise NotEinsumError(f"the desc indexes {buf.name!r} with {var.name!r} twice")
        uses[id(var)][op] = c
        ext = extents[id(var)]
        if c is not None and (c <= 0 or ext % c):
            raise NotEinsumError(f"the desc splits {var.name!r} (extent {ext}) by {c}, which does not divide it")
        want = {"plain": ext, "div": ext // c if c else 0, "mod": c}[op]
        dim = buf.shape[d]
        if not isinstance(dim, E.IntImm) or dim.value != want:
            raise NotEinsumError(f"the desc's {buf.name!r} has extent {dim} in dimension {d} where {ix} spans {want}")
    for var in logical:
        ops = uses[id(var)]
        if set(ops) not in ({"plain"}, {"div", "mod"}) or ops.get("div", 0) != ops.get("mod", 0):
            raise NotEinsumError(f"the desc indexes {buf.name!r} with {var.name!r} as {sorted(ops)}; each iterator "
                                 "must appear plainly or split once (v // c with v % c)")
    return PackedLayout(buf.name, tuple(logical), tuple(idx))
