"""The CUDA postprocessors, in order: rewrite_cooperative_fetch, rewrite_unbound_block,
rewrite_reduction_block, rewrite_tensorize, verify_gpu_code."""
from __future__ import annotations

from .gpu_cooperative_fetch import RewriteCooperativeFetch
from .gpu_unbound_block import RewriteUnboundBlock
from .gpu_verify import VerifyGPUCode
from .rewrite_reduction_block import RewriteReductionBlock
from .rewrite_tensorize import RewriteTensorize

__all__ = ["default_gpu_postprocs"]


def default_gpu_postprocs(ctx) -> list:
    """The postprocessors for a CUDA ``ctx``.

    Parameters
    ----------
    ctx : TuneContext
        A task whose target is ``cuda``.

    Returns
    -------
    list of Postproc
        In the order they run.
    """
    return [RewriteCooperativeFetch(), RewriteUnboundBlock(), RewriteReductionBlock(), RewriteTensorize(),
            VerifyGPUCode()]
