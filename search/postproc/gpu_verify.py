"""``verify_gpu_code``: the candidate lowers to CUDA kernels within the target's per-block limits."""
from __future__ import annotations

from tensorize.errors import TVMError

from ..schedule_rule.gpu_limits import GPULimits
from .base import POSTPROCS, Postproc, PostprocError
from .gpu_quick_limits import threads_per_block

__all__ = ["VerifyGPUCode"]


@POSTPROCS.register("verify_gpu_code")
class VerifyGPUCode(Postproc):
    """Lower the candidate, generate its CUDA C and reject it when a kernel has more threads per block or
    more shared memory than the target allows, fewer than ``min_threads`` threads, register arrays
    above ``max_local_bytes`` per thread, or more registers per block than the register file holds
    (register arrays plus ``scalar_registers`` for indices and addresses, times the threads): either
    would spill to local memory. The thread count is checked on the scheduled IR
    first (``gpu_quick_limits``): most rejected samples fail there, a hundred times cheaper than lowering."""

    def __init__(self, min_threads: int = 1, max_local_bytes: int = 1024, scalar_registers: int = 32):
        self.min_threads = min_threads
        self.max_local_bytes = max_local_bytes
        self.scalar_registers = scalar_registers

    def apply(self, sch, ctx) -> None:
        """See ``Postproc.apply``: rewrite ``sch`` in place or raise ``PostprocError``."""
        from tensorize.codegen.cuda import split_kernels
        from tensorize.codegen.cuda.resources import kernel_resources
        from tensorize.driver import lower
        from tensorize.ir.function import IRModule, PrimFunc
        from tensorize.transform.warp_specialize import inject_warp_specialization

        limits = GPULimits.of(ctx.target)
        for func_name in sch.mod.function_names():  # threads per block read off the IR: no lowering needed
            threads = threads_per_block(sch.mod[func_name])
            if threads > limits.max_threads_per_block:
                raise PostprocError(f"{func_name}: {threads} threads per block, the target allows "
                                    f"{limits.max_threads_per_block}")
        try:
            lowered = lower(sch.mod)
            # split warp-specialised loops once: the kernel split and the resource count below then find none
            lowered = IRModule({gv: inject_warp_specialization(f) if isinstance(f, PrimFunc) else f
                                for gv, f in lowered.functions.items()}, lowered.attrs, lowered.global_infos)
            for gv, func in lowered.functions.items():
                if isinstance(func, PrimFunc):
                    split_kernels(gv.name_hint, func)
        except (TVMError, ValueError, TypeError, KeyError) as err:
            raise PostprocError(f"does not lower to CUDA: {str(err).splitlines()[0] if str(err) else type(err).__name__}") \
                from err
        for k in kernel_resources(lowered):
            if k.threads > limits.max_threads_per_block:
                raise PostprocError(f"{k.name}: {k.threads} threads per block, the target allows "
                                    f"{limits.max_threads_per_block}")
            if k.threads < self.min_threads:
                raise PostprocError(f"{k.name}: {k.threads} threads per block, fewer than {self.min_threads}")
            if k.shared_bytes > limits.max_shared_memory_per_block:
                raise PostprocError(f"{k.name}: {k.shared_bytes} bytes of shared memory, the target allows "
                                    f"{limits.max_shared_memory_per_block}")
            if k.local_bytes > self.max_local_bytes:
                raise PostprocError(f"{k.name}: {k.local_bytes} bytes of registers per thread, above "
                                    f"{self.max_local_bytes}")
            registers = (k.local_bytes + 3) // 4 + self.scalar_registers
            if registers * k.threads > limits.registers_per_block:
                raise PostprocError(f"{k.name}: about {registers} registers per thread x {k.threads} threads, above "
                                    f"the {limits.registers_per_block} of the register file")
