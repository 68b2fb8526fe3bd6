"""The CUDA rule set (MetaSchedule's ``cuda`` / ``cuda-tensorcore`` defaults): auto_inline,
multi_level_tiling_wgmma (sm_90a: Hopper's warpgroup MMA for NT GEMMs), multi_level_tiling_tensor_core (when
the target has Tensor Cores and WMMA intrinsics are registered), multi_level_tiling_gpu, auto_bind."""
from __future__ import annotations

from .auto_inline import AutoInline
from .gpu_auto_bind import AutoBind
from .gpu_limits import GPULimits
from .gpu_multi_level_tiling import MultiLevelTilingGPU
from .gpu_tensor_core import WMMA_FAMILIES, MultiLevelTilingTensorCore
from .gpu_wgmma import MultiLevelTilingWGMMA, targets_wgmma

__all__ = ["default_gpu_rules"]


def default_gpu_rules(ctx) -> list:
    """The rules for a CUDA ``ctx``.

    Parameters
    ----------
    ctx : TuneContext
        A task whose target is ``cuda``.

    Returns
    -------
    list of ScheduleRule
        In the order ``PostOrderApply`` applies them.
    """
    rules = [AutoInline()]
    if targets_wgmma(ctx.target) and any(n.startswith("wgmma_m64n") for n in ctx.intrinsics):
        rules.append(MultiLevelTilingWGMMA())
    if GPULimits.of(ctx.target).has_tensor_cores and any(n in WMMA_FAMILIES for n in ctx.intrinsics):
        rules.append(MultiLevelTilingTensorCore())
    return rules + [MultiLevelTilingGPU(), AutoBind()]
