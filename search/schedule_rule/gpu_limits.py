"""What a CUDA target allows a kernel: threads and shared memory per block, Tensor Core generations.

Limits come from the target's attributes when given (``-max_threads_per_block=``,
``-max_shared_memory_per_block=``, ``-multi_processor_count=``), else from the architecture (the opt-in dynamic
shared memory of
each generation: a kernel above 48 KB is launched with its limit raised, see
``tensorize.runtime.cuda_module``).

>>> from tensorize.target import Target
>>> limits = GPULimits.of(Target("cuda -arch=sm_90"))
>>> limits.max_threads_per_block, limits.max_shared_memory_per_block, limits.has_tensor_cores
(1024, 232448, True)
>>> limits.multi_processor_count
132
>>> GPULimits.of(Target("cuda -arch=sm_90 -multi_processor_count=114")).multi_processor_count
114
"""
from __future__ import annotations

from dataclasses import dataclass

from tensorize.target import sm_version  # noqa: F401  (re-exported: the search's callers import it from here)

__all__ = ["GPULimits", "is_gpu_target", "sm_version"]

REGISTERS_PER_BLOCK = 65536  # 32-bit registers one block may hold (every generation since sm_50)
# opt-in shared memory per block (bytes) by compute capability
_SHARED = {70: 98304, 72: 98304, 75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448}
# streaming multiprocessors of each generation's data-centre part (V100, A100, H100 SXM / H200); other parts
# (an H100 PCIe has 114) name theirs with -multi_processor_count
_MULTIPROCESSORS = {70: 80, 80: 108, 90: 132}


def is_gpu_target(target) -> bool:
    """Whether ``target`` is a CUDA (or NVPTX) target.

    Parameters
    ----------
    target : Target or None
        The target.

    Returns
    -------
    bool
        True for kind ``cuda``/``nvptx``.
    """
    return target is not None and getattr(getattr(target, "kind", None), "name", None) in ("cuda", "nvptx")


@dataclass(frozen=True)
class GPULimits:
    """A CUDA target's per-block limits and features."""

    sm: int
    max_threads_per_block: int = 1024
    max_shared_memory_per_block: int = 49152
    max_registers_per_thread: int = 255
    warp_size: int = 32
    registers_per_block: int = REGISTERS_PER_BLOCK
    multi_processor_count: int = 0

    @staticmethod
    def of(target) -> "GPULimits":
        """The limits of ``target``.

        Parameters
        ----------
        target : Target
            A CUDA target.

        Returns
        -------
        GPULimits
            Its limits.
        """
        sm = sm_version(target)
        attrs = getattr(target, "attrs", {}) or {}
        threads = int(attrs.get("max_threads_per_block", attrs.get("max_num_threads", 1024)))
        shared = int(attrs.get("max_shared_memory_per_block", _SHARED.get(sm, 49152)))
        sms = int(attrs.get("multi_processor_count", _MULTIPROCESSORS.get(sm, 0)))
        return GPULimits(sm, threads, shared, multi_processor_count=sms)

    @property
    def has_tensor_cores(self) -> bool:
        """WMMA f16 (sm_70 and later)."""
        return self.sm >= 70

    def supports(self, intrin_meta) -> bool:
        """Whether this GPU runs the Tensor Core intrinsic with metadata ``intrin_meta``.

        Parameters
        ----------
        intrin_meta : IntrinMeta
            A cuda intrinsic's metadata.

        Returns
        -------
        bool
            WMMA needs sm_70 (int8: sm_72), ``mma.sync`` m16n8k16/k32 needs sm_80.
        """
        extra = intrin_meta.extra
        if "mma" in extra:
            return self.sm >= 80
        return self.sm >= 70


COOPERATIVE_FETCH = "meta_schedule.cooperative_fetch"
# TVM's software pipeline annotations (``tensorize.transform.inject_software_pipeline``)
PIPELINE_DEPTH = "meta_schedule.software_pipeline_depth"  # sampled; the fetch postproc turns it into stages
PIPELINE_STAGE = "software_pipeline_stage"
PIPELINE_ORDER = "software_pipeline_order"
PIPELINE_ASYNC_STAGES = "software_pipeline_async_stages"
"""Block annotation: a shared-memory copy whose loops ``rewrite_cooperative_fetch`` spreads over the
block's threads; the value is the vector length each thread copies (innermost serial loop)."""

WARP_EXECUTION = "meta_schedule.warp_execution"
"""Block annotation: the block runs on whole warps (Tensor Core intrinsics): threadIdx.x is the 32 lanes."""
