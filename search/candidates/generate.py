"""Tensorization candidates: which iterators of a block map onto which iterators of an intrinsic.

Following the TensorIR paper, a block and an intrinsic's ``desc`` are both read as einsums
(``search.einsum``). Every iterator is characterised by its kind and the operands it indexes; a
desc iterator takes the block iterators with the same characterisation (several of them are
fused into one), the others stay outside the intrinsic. ``apply_candidate`` then rewrites the
block so its loop nest ends with the desc's loops:

1. ``reindex`` every operand, so each is a buffer indexed by block iterators only;
2. ``transform_layout`` each copy to (outer iterators..., fused groups in the desc's index order)
   and ``transform_block_layout`` the block to (outer iterators..., fused groups in desc loop order);
3. ``pad_einsum`` the fused extents up to multiples of the intrinsic's extents;
4. ``transform_layout`` each operand into tiles of the desc's shape (so each tile is dense memory);
5. ``split`` each fused loop by the intrinsic's extent and ``reorder`` the tiles innermost.

The returned loop is ready for ``sch.tensorize(loop, intrin_name)`` (which blockizes it).

>>> import tensorize as tvm, intrinsics                                # doctest: +SKIP
>>> sch = tvm.tir.Schedule(int8_gemm)                                  # doctest: +SKIP
>>> cands = get_tensorize_candidates(sch, sch.get_block("C"), "dot_16x4_vnni")   # doctest: +SKIP
>>> print(cands[0].describe())                                         # doctest: +SKIP
C -> dot_16x4_vnni: operands A<-A, B<-B, C<-C
  i (S, 16) <- j (60 -> 64)
  k (R, 4) <- k (70 -> 72)
  outside: i
>>> loop = apply_candidate(sch, cands[0]); sch.tensorize(loop, "dot_16x4_vnni")   # doctest: +SKIP
"""
from __future__ import annotations

import itertools
import logging

from tensorize.ir import expr as E
from tensorize.ir.tensor_intrin import TensorIntrin

from .candidate import CandidateList, IterMapping, TensorizeCandidate, _covered_positions, _operand_dims
from .einsum import Einsum, NotEinsumError, match_operands
from .packed import desc_view

logger = logging.getLogger(__name__)

__all__ = ["get_tensorize_candidates"]


def get_tensorize_candidates(sch, block, intrin_name: str, max_candidates: int = 8) -> CandidateList:
    """The ways to tensorize ``block`` (a BlockRV or block name) with intrinsic ``intrin_name``.

    Returns a ``CandidateList`` ordered by padding overhead (least first, fusing every iterator of a
    role before the variants that keep some outside). An empty list has ``.reason``: not einsum-like,
    a dtype that would need a cast, a desc iterator no block iterator can play, ...

    >>> cands = get_tensorize_candidates(sch, "C", "dot_16x4_vnni")      # doctest: +SKIP
    >>> cands.reason is None                                              # doctest: +SKIP
    True
    """
    block_rv = sch.get_block(block) if isinstance(block, str) else block
    realize_block = sch.get(block_rv)
    intrin = TensorIntrin.get(intrin_name)
    try:
        view = desc_view(intrin.desc)  # packed operands read through their logical indices
        desc_block, desc_loop_order, desc = view.block, view.loop_order, view.einsum
        einsum = Einsum.of_block(realize_block)
        buffer_of = match_operands(desc, einsum)  # desc buffer -> block buffer
    except NotEinsumError as err:
        return _reject(realize_block, intrin_name, str(err))
    for iv in realize_block.iter_vars:
        if iv.iter_type not in (E.IterVar.DataPar, E.IterVar.CommReduce):
            return _reject(realize_block, intrin_name, f"iterator {iv.var.name} is neither spatial nor reduction")
        if not isinstance(iv.dom.extent, E.IntImm) or not (isinstance(iv.dom.min, E.IntImm) and iv.dom.min.value == 0):
            return _reject(realize_block, intrin_name,
                           f"iterator {iv.var.name} must range over [0, constant) (it ranges over {iv.dom})")
    for dbuf, idx in desc.accesses.items():
        if any(not isinstance(ix, (E.Var, E.IntImm)) for ix in idx):
            return _reject(realize_block, intrin_name, f"the desc indexes {dbuf.name!r} with expressions; only "
                           "iterators and constants are supported")
    role = {b: d.name for d, b in buffer_of.items()}  # block buffer -> desc operand name
    groups, mappings_base = {}, []
    desc_sigs = {}
    for dvar in desc_loop_order:
        sig = desc.signature(dvar)
        if sig in desc_sigs:
            return _reject(realize_block, intrin_name, f"desc iterators {desc_sigs[sig]} and {dvar.name} play the "
                           "same role; such intrinsics are not supported yet")
        desc_sigs[sig] = dvar.name
        members = [k for k, iv in enumerate(realize_block.iter_vars) if einsum.signature(iv.var, role) == sig]
        if not members:
            kind, ops = sig
            return _reject(realize_block, intrin_name,
                           f"no block iterator plays the role of the desc's {dvar.name} ({kind}, indexing "
                           f"{{{', '.join(sorted(ops))}}}); the block's iterators index "
                           + ", ".join(f"{iv.var.name}: {_sig_text(einsum.signature(iv.var, role))}"
                                       for iv in realize_block.iter_vars))
        groups[dvar] = members
        ext = next(int(iv.dom.extent) for iv in desc_block.iter_vars if iv.var is dvar)
        mappings_base.append((dvar, sig, ext))
    options = [[tuple(groups[d])] + ([(g,) for g in groups[d]] if len(groups[d]) > 1 else [])
               for d, _, _ in mappings_base]
    extents = tuple(int(iv.dom.extent) for iv in realize_block.iter_vars)
    names = [iv.var.name for iv in realize_block.iter_vars]
    candidates = []
    for rank, choice in enumerate(itertools.product(*options)):
        maps = []
        for (dvar, (kind, ops), ext), members in zip(mappings_base, choice):
            total = 1
            for k in members:
                total *= extents[k]
            maps.append(IterMapping(dvar.name, kind, tuple(sorted(ops)), ext, members,
                                    tuple(names[k] for k in members), total))
        used = {k for m in maps for k in m.block_iters}
        outer = tuple(k for k in range(len(extents)) if k not in used)
        cand = TensorizeCandidate(
            block_name=realize_block.name_hint, func_name=getattr(block_rv, "func_name", None),
            intrin_name=intrin_name, operands=tuple((d.name, b.name) for d, b in buffer_of.items()),
            mappings=tuple(maps), outer_iters=outer, outer_iter_names=tuple(names[k] for k in outer),
            iter_extents=extents, layouts=_layout_texts(desc, einsum, buffer_of, maps, outer, names, view.packings))
        candidates.append((cand.padded_fraction, rank, cand))
    candidates.sort(key=lambda t: (t[0], t[1]))
    return CandidateList([c for _, _, c in candidates[:max_candidates]])


def _reject(block, intrin_name, reason) -> CandidateList:
    logger.debug("no %s candidate for block %s: %s", intrin_name, block.name_hint, reason)
    return CandidateList([], reason=f"block {block.name_hint!r} cannot use {intrin_name}: {reason}")


def _sig_text(sig) -> str:
    return f"{sig[0]} {{{', '.join(sorted(sig[1]))}}}"


def _layout_texts(desc, einsum, buffer_of, maps, outer, names, packings=None) -> tuple:
    """Per operand: how its copy is laid out, e.g. ``B: (j, k) -> (j // 16, k // 4, j % 16, k % 4)``;
    a packed operand (``packings``: desc name -> ``PackedLayout``) in the desc's packed layout."""
    texts = []
    for dbuf, bbuf in buffer_of.items():
        covered = _covered_positions(einsum, bbuf)
        o_part, d_part = _operand_dims(desc, dbuf, maps, outer, covered)
        src = [str(ix) for ix in einsum.accesses[bbuf]]
        fused = ["*".join(names[k] for k in m.block_iters) for m in d_part]
        dims = [names[k] for k in o_part] + fused
        if dbuf.name in (packings or {}):
            packed = packings[dbuf.name].text(fused).split(" -> ")[1][1:-1]
            dims = [names[k] for k in o_part] + [packed]
        elif len(d_part) > 1:
            dims = ([names[k] for k in o_part] + [f"{f} // {m.intrin_extent}" for f, m in zip(fused, d_part)]
                    + [f"{f} % {m.intrin_extent}" for f, m in zip(fused, d_part)])
        texts.append((dbuf.name, f"{bbuf.name}[{', '.join(src)}] -> [{', '.join(dims)}]"))
    return tuple(texts)
