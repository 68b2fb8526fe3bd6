"""The lowering pipeline: four phases, with the user's ``tir.add_lower_pass`` passes after each.

* phase 0 - blocks to loops: init lowering, allocation placement and compaction, storage alignment,
  swizzled shared layouts, match buffers,
  opaque blocks;
* phase 1 - storage flattening (``FlattenBuffer``) and simplification;
* phase 2 - loop transforms: software pipelining, padding taps skipped, padded loops partitioned, vectorize, unroll;
* phase 3 - cleanup: AMX tile configurations hoisted to once per thread's work, zeroed accumulators made by
  ``tilezero`` and kept in their tiles across loops around the calls, simplification, no-op removal, scalar
  promotion, common subexpressions.
"""
from __future__ import annotations

from ..ir.function import IRModule
from .common_subexpr_elim import CommonSubexprElimTIR
from .compact_buffer import CompactBufferAllocation
from .convert_blocks_to_opaque import ConvertBlocksToOpaque
from .flatten_buffer import FlattenBuffer
from .fuse_tile_zero import FuseTileZero
from .hoist_tile_config import HoistTileConfig
from .inject_software_pipeline import InjectSoftwarePipeline
from .lower_init_block import LowerInitBlock
from .lower_match_buffer import LowerMatchBuffer
from .lower_opaque_block import LowerOpaqueBlock
from .partition_padded_loops import PartitionPaddedLoops
from .pass_infra import Pass, PassContext
from .promote_tile_accumulators import PromoteTileAccumulators
from .plan_buffer_allocation import PlanAndUpdateBufferAllocationLocation
from .remove_no_op import RemoveNoOp
from .simplify import Simplify
from .skip_padded_taps import SkipPaddedTaps
from .storage_align import StorageAlign
from .storage_rewrite import StorageRewrite
from .swizzle_shared import SwizzleSharedLayout
from .unroll_loop import UnrollLoop
from .vectorize_loop import VectorizeLoop


def phase_passes(phase: int) -> list[Pass]:
    """The built-in passes of lowering ``phase`` (0..3), in order.

    Parameters
    ----------
    phase : int
        The phase, 0 to 3.

    Returns
    -------
    list of Pass
        The passes.
    """
    if phase == 0:
        return [LowerInitBlock(), PlanAndUpdateBufferAllocationLocation(), ConvertBlocksToOpaque(),
                CompactBufferAllocation(), StorageAlign(), SwizzleSharedLayout(), LowerMatchBuffer(),
                LowerOpaqueBlock()]
    if phase == 1:
        return [FlattenBuffer(), Simplify()]
    if phase == 2:
        return [InjectSoftwarePipeline(), SkipPaddedTaps(), PartitionPaddedLoops(), VectorizeLoop(), UnrollLoop(),
                Simplify()]
    if phase == 3:
        return [HoistTileConfig(), FuseTileZero(), PromoteTileAccumulators(), RemoveNoOp(), StorageRewrite(),
                Simplify(), RemoveNoOp(), CommonSubexprElimTIR()]
    raise ValueError(f"lowering phases are 0..3, got {phase}")


def run_lowering_phases(mod: IRModule, ctx: PassContext | None = None) -> IRModule:
    """Run the four phases on ``mod``, each followed by the context's ``tir.add_lower_pass`` passes for it.

    Parameters
    ----------
    mod : IRModule
        The module.
    ctx : PassContext, optional
        The context (default: the current one).

    Returns
    -------
    IRModule
        The lowered module.
    """
    ctx = ctx or PassContext.current()
    user = ctx.config.get("tir.add_lower_pass", ()) or ()
    for phase in range(4):
        for p in phase_passes(phase):
            mod = p(mod)
        for entry_phase, user_pass in user:
            if entry_phase == phase:
                mod = user_pass(mod)
    return mod
