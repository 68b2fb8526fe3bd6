"""Postprocessors: make a sampled candidate concrete and valid (MetaSchedule's ``postproc``).

``default_postprocs(ctx)`` is the CPU order: rewrite_layout (a no-op unless the function marks
layout-free weights), rewrite_parallel_vectorize_unroll, rewrite_reduction_block, rewrite_tensorize,
verify. ``split_layout_rewrite`` (from ``tensorize.transform``, where graph builds use it too) moves the marked
weight packing out of a scheduled function.

>>> [type(p).__name__ for p in default_postprocs(None)]                    # doctest: +NORMALIZE_WHITESPACE
['RewriteLayout', 'RewriteParallelVectorizeUnroll', 'RewriteReductionBlock', 'RewriteTensorize', 'Verify']
"""
from tensorize.transform.split_layout_rewrite import LayoutRewrite, split_layout_rewrite

from .base import POSTPROCS, Postproc, PostprocError
from .rewrite_layout import LAYOUT_FREE_BUFFERS, RewriteLayout, blocked_layout
from .rewrite_parallel_vectorize_unroll import RewriteParallelVectorizeUnroll
from .rewrite_reduction_block import RewriteReductionBlock
from .rewrite_tensorize import RewriteTensorize
from .verify import Verify
from .gpu_default import default_gpu_postprocs
from ..schedule_rule.gpu_limits import is_gpu_target

__all__ = ["Postproc", "PostprocError", "POSTPROCS", "default_postprocs", "RewriteParallelVectorizeUnroll",
           "RewriteReductionBlock", "RewriteTensorize", "Verify", "RewriteLayout", "LAYOUT_FREE_BUFFERS",
           "blocked_layout", "LayoutRewrite", "split_layout_rewrite"]


def default_postprocs(ctx) -> list[Postproc]:
    """The CPU postprocessors, in the order they must run (a CUDA target: ``default_gpu_postprocs(ctx)``)."""
    if ctx is not None and is_gpu_target(ctx.target):
        return default_gpu_postprocs(ctx)
    return [RewriteLayout(), RewriteParallelVectorizeUnroll(), RewriteReductionBlock(), RewriteTensorize(), Verify()]
