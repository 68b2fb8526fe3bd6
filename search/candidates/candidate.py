"""The data of a tensorization candidate: which block iterators map onto which desc iterators.

``search.candidates.generate`` makes them and ``search.candidates.apply`` applies them.
"""
from __future__ import annotations

from dataclasses import dataclass

from tensorize.ir import expr as E

from .einsum import Einsum

__all__ = ["IterMapping", "TensorizeCandidate", "CandidateList"]


@dataclass(frozen=True)
class IterMapping:
    """One desc iterator and the block iterators fused onto it (outer to inner, by position)."""

    desc_iter: str
    kind: str
    operands: tuple           # desc operand names the iterator indexes
    intrin_extent: int
    block_iters: tuple        # positions of the block iterators, block order
    block_iter_names: tuple
    extent: int               # product of the block iterators' extents

    @property
    def padded_extent(self) -> int:
        """The extent rounded up to a multiple of the intrinsic's extent."""
        return -(-self.extent // self.intrin_extent) * self.intrin_extent

    @property
    def padding(self) -> int:
        """How many iterations padding adds (0 when the extent divides)."""
        return self.padded_extent - self.extent


@dataclass(frozen=True)
class TensorizeCandidate:
    """A way to tensorize ``block_name`` with ``intrin_name``.

    ``operands`` pairs each desc operand with the block's buffer (``(("A", "A"), ("B", "W"), ...)``),
    ``mappings`` lists the desc iterators in desc loop order with their block iterators,
    ``outer_iters`` the block iterators (positions) left outside the intrinsic, and ``layouts`` says
    how each operand's copy is laid out (desc operand -> text of its index map).
    """

    block_name: str
    func_name: str | None
    intrin_name: str
    operands: tuple
    mappings: tuple
    outer_iters: tuple
    outer_iter_names: tuple
    iter_extents: tuple       # extents of all block iterators, to detect a block that changed
    layouts: tuple

    @property
    def needs_padding(self) -> bool:
        """Whether some iterator must be padded to fit the intrinsic."""
        return any(m.padding for m in self.mappings)

    @property
    def padded_fraction(self) -> float:
        """Extra work from padding: padded iteration volume over the real one, minus 1."""
        real = padded = 1
        for m in self.mappings:
            real *= m.extent
            padded *= m.padded_extent
        return padded / real - 1.0

    def describe(self) -> str:
        """A short multi-line text for logs and the sketch generator."""
        ops = ", ".join(f"{d}<-{b}" for d, b in self.operands)
        lines = [f"{self.block_name} -> {self.intrin_name}: operands {ops}"]
        for m in self.mappings:
            ext = f"{m.extent}" if not m.padding else f"{m.extent} -> {m.padded_extent}"
            lines.append(f"  {m.desc_iter} ({m.kind}, {m.intrin_extent}) <- {' * '.join(m.block_iter_names)} ({ext})")
        lines.append(f"  outside: {', '.join(self.outer_iter_names) or '-'}")
        lines.extend(f"  layout {name}: {text}" for name, text in self.layouts)
        return "\n".join(lines)


class CandidateList(list):
    """The candidates, best first; when empty, ``reason`` says why none exists."""

    reason: str | None = None

    def __init__(self, items=(), reason: str | None = None):
        super().__init__(items)
        self.reason = reason


def _covered_positions(einsum: Einsum, buf) -> list:
    """Positions of the block iterators ``buf``'s indices mention, in block order (reindex's order)."""
    used = einsum.buffers_of
    return [k for k, iv in enumerate(einsum.iter_vars) if buf in used(iv.var)]


def _operand_dims(desc: Einsum, dbuf, maps, outer, covered):
    """An operand's new dimensions: outer iterators it uses (block order), then the mappings of the
    desc iterators in the desc's index order of ``dbuf``."""
    by_name = {m.desc_iter: m for m in maps}
    d_part = [by_name[ix.name] for ix in desc.accesses[dbuf] if isinstance(ix, E.Var)]
    o_part = [k for k in covered if k in outer]
    return o_part, d_part
