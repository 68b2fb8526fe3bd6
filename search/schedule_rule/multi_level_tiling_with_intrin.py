"""``multi_level_tiling_with_intrin``: tensorization branches of a block, one per intrinsic of the
target that matches it (VNNI, AVX-512 FMA/BF16, ARM sdot/smmla, ... all compete)."""
from __future__ import annotations

import logging

from tensorize.ir.tensor_intrin import TensorIntrin
from tensorize.schedule import ScheduleError
from tensorize.transform.split_layout_rewrite import LAYOUT_FREE_BUFFERS, LAYOUT_REWRITE_PREPROC

from ..candidates import apply_candidate, get_tensorize_candidates
from ..candidates.apply import copied_operands
from .amx_blocking import SKETCHES, amx_blocked_loops, is_amx
from .analysis import AUTO_TENSORIZE, TILED, loop_kinds, needs_multi_level_tiling
from .base import RULES, ScheduleRule
from .tiling import add_write_reuse, tile_loops

logger = logging.getLogger(__name__)

# AMX: among the generator's first few candidates, those copying the fewest operands go first (a convolution on
# flat pixels read in place, its taps outside the intrinsic, before the im2col that fuses them into K).
AMX_CANDIDATES_CONSIDERED = 4


def _fewest_copies(sch, cands: list) -> list:
    """``cands`` stably sorted by how many operands each would copy (``copied_operands``)."""
    def copies(cand):
        try:
            return len(copied_operands(sch, cand))
        except (ScheduleError, ValueError, KeyError):
            return len(cand.operands)
    return sorted(cands, key=copies)

__all__ = ["MultiLevelTilingWithIntrin", "LAYOUT_REWRITE_PREPROC", "LAYOUT_FREE_BUFFERS"]


@RULES.register("multi_level_tiling_with_intrin")
class MultiLevelTilingWithIntrin(ScheduleRule):
    """For each intrinsic in ``ctx.intrinsics`` (or ``intrinsics``) with candidates for the block: apply
    the best ``candidates_per_intrin`` candidates (reindex, layouts, padding; see ``search.candidates``),
    tile the loops outside the intrinsic as ``structure``, ``blockize`` the intrinsic's loops and
    annotate that block ``meta_schedule.auto_tensorize = <intrinsic>`` (``rewrite_tensorize`` tensorizes
    it). The untensorized schedule is kept as a branch too, so plain tiling competes.

    Copies of layout-free parameters (the function attribute ``layout_free_buffers``: weights) made by a
    candidate's layout rewrite get the block annotation ``layout_rewrite_preproc = 1``: a caller may
    pre-pack those once. Copies of other inputs stay part of the kernel.

    Parameters
    ----------
    intrinsics : sequence of str, optional
        The intrinsics to try (default: ``ctx.intrinsics``).
    candidates_per_intrin : int
        How many candidates (least padding first) of each intrinsic become branches.
    keep_untensorized : bool
        Keep the schedule without tensorization as a branch.
    amx_sketches : bool
        Tile a GEMM-shaped block tensorized with an AMX intrinsic as the cache-blocked sketches of
        ``amx_blocking`` (one branch each) in place of ``structure`` and its write-cache branches.
    """

    def __init__(self, intrinsics=None, candidates_per_intrin: int = 1, structure: str = "SSRSRS",
                 max_innermost_factor: int = 64, write_levels=(1, 2), keep_untensorized: bool = True,
                 amx_sketches: bool = True):
        self.intrinsics = None if intrinsics is None else tuple(intrinsics)
        self.candidates_per_intrin = candidates_per_intrin
        self.structure = structure
        self.max_innermost_factor = max_innermost_factor
        self.write_levels = tuple(write_levels)
        self.keep_untensorized = keep_untensorized
        self.amx_sketches = amx_sketches

    def apply(self, sch, block, ctx):
        """See ``ScheduleRule.apply``: the schedules ``sch`` branches into for ``block``."""
        blk = sch.get(block)
        if TILED in blk.annotations or not needs_multi_level_tiling(blk):
            return [sch]
        out = []
        for intrin in (self.intrinsics if self.intrinsics is not None else ctx.intrinsics):
            try:
                cands = get_tensorize_candidates(sch, block, intrin)
            except (ScheduleError, ValueError, KeyError) as err:
                logger.debug("no %s candidates for %s: %s", intrin, blk.name_hint, err)
                continue
            cands = list(cands)
            if self.amx_sketches and is_amx(TensorIntrin.get(intrin).meta):
                cands = _fewest_copies(sch, cands[:AMX_CANDIDATES_CONSIDERED]) + cands[AMX_CANDIDATES_CONSIDERED:]
            for cand in cands[:self.candidates_per_intrin]:
                out.extend(self._tensorized(sch.copy(), block, cand, intrin))
        if self.keep_untensorized or not out:
            out.append(sch)
        return out

    def _tensorized(self, sch, block, cand, intrin) -> list:
        func_name = block.func_name
        before = set(sch._index(func_name).blocks)
        try:
            inner = apply_candidate(sch, cand)
        except (ScheduleError, ValueError) as err:
            logger.debug("candidate of %s does not apply: %s", intrin, err)
            return []
        self._mark_preproc(sch, func_name, before)
        loops = sch.get_loops(block)
        inner_var = sch.get(inner).loop_var
        split_at = next(i for i, lp in enumerate(loops) if sch.get(lp).loop_var is inner_var)
        kinds = loop_kinds(sch, block)[:split_at]
        if "O" in kinds:
            return []
        if self.amx_sketches and is_amx(TensorIntrin.get(intrin).meta):
            amx = self._amx_branches(sch, block, loops[:split_at], kinds, inner, intrin)
            if amx:
                return amx
        sch.annotate(block, TILED, self.structure)
        tiles = tile_loops(sch, loops[:split_at], kinds, self.structure, self.max_innermost_factor)
        outer = sch.blockize(inner)
        sch.annotate(outer, AUTO_TENSORIZE, intrin)
        sch.annotate(outer, TILED, self.structure)
        branches = add_write_reuse(sch, outer, tiles, self.structure, self.write_levels) if any(tiles) else []
        return [sch] + branches

    def _amx_branches(self, sch, block, loops, kinds, inner, intrin) -> list:
        """One branch per cache-blocked AMX sketch (``amx_blocking.SKETCHES``); none where the block is not
        GEMM-shaped. The tiles are written in place (AMX stores C tiles at any row stride): no write cache."""
        out = []
        for sketch in SKETCHES:
            branch = sch.copy()
            if amx_blocked_loops(branch, loops, kinds, sketch, self.max_innermost_factor // 2) is None:
                return []
            branch.annotate(block, TILED, f"amx_{sketch}")  # the intrinsic's own loops: no other rule tiles them
            outer = branch.blockize(inner)
            branch.annotate(outer, AUTO_TENSORIZE, intrin)
            branch.annotate(outer, TILED, f"amx_{sketch}")  # no "S"/"R": register-tile analyses skip it
            out.append(branch)
        return out

    @staticmethod
    def _mark_preproc(sch, func_name, before) -> None:
        """Annotate the new copy blocks that read only layout-free parameters (the function attribute
        ``layout_free_buffers``: weights, as ``te`` marks them) that nothing writes. A copy of any other
        input (an activation, or a weight the function does not declare layout-free) stays in the kernel:
        the runner would otherwise pack it once and time the kernel without the work each call does."""
        func = sch.mod[func_name]
        free = {int(i) for i in func.attrs.get(LAYOUT_FREE_BUFFERS, ())}
        params = {id(func.buffer_map[p]) for i, p in enumerate(func.params) if i in free and p in func.buffer_map}
        written = set()
        for realizes in sch._index(func_name).blocks.values():
            for r in realizes:
                written.update(id(w.buffer) for w in r.block.writes)
        for name in sorted(set(sch._index(func_name).blocks) - before):
            rv = sch.get_block(name, func_name)
            copy = sch.get(rv)
            reads = [r.buffer for r in copy.reads]
            if reads and all(id(b) in params and id(b) not in written for b in reads):
                sch.annotate(rv, LAYOUT_REWRITE_PREPROC, 1)
