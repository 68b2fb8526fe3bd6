"""Hopper's tensor memory accelerator and transaction barriers in CUDA C (sm_90).

* ``ptx_tma_load(dst, src, offset, ld, rows, cols, swizzle, bar, index)`` becomes one
  ``cp.async.bulk.tensor.2d`` of a ``rows`` x ``cols`` box at coordinates ``(offset % ld, offset / ld)`` of
  ``src``, completing on the shared barrier ``bar[index]``. The box's descriptor (a 128-byte ``CUtensorMap``,
  ``TmaDesc`` here) is a ``const __grid_constant__`` kernel parameter, one per distinct (buffer, box); the
  kernel's ``KernelLaunch.tensor_maps`` tell the host how to encode each from its argument at launch
  (``tensorize.runtime.tensor_map``).
* ``ptx_mbarrier_init/arrive/arrive_expect_tx/wait`` are the ``mbarrier`` operations on ``bar[index]``
  (``wait`` spins on ``try_wait.parity``); ``ptx_setmaxnreg`` is ``setmaxnreg.inc/dec.sync.aligned``.
* In a thread block cluster (the ``cluster_dims`` attribute: ``__cluster_dims__`` on the kernel), a TMA copy with
  a CTA mask is multicast (``.multicast::cluster``: the box lands at the same shared address of every CTA in the
  mask, completing each one's barrier there), ``ptx_mbarrier_arrive(bar, index, cta)`` arrives at CTA ``cta``'s
  barrier (``mapa`` + ``mbarrier.arrive.release.cluster``), ``ptx_cluster_sync`` is ``barrier.cluster`` and
  ``ptx_cluster_rank`` reads ``%cluster_ctarank``.

They come from ``InjectWarpSpecialization`` (``tensorize.transform.warp_specialize``); a TMA copy without a
barrier (outside a warp-specialised loop) is refused.
"""
from __future__ import annotations

from ...errors import TVMError
from ...ir import expr as E
from ...runtime.tensor_map import TensorMapSpec

TMA_HELPERS = """\
struct __align__(64) TmaDesc { unsigned long long words[16]; };
__device__ __forceinline__ unsigned tz_smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void tz_mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(tz_smem_u32(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void tz_mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(tz_smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void tz_mbar_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(tz_smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tz_mbar_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\nselp.u32 %0, 1, 0, p;\\n}"
                 : "=r"(done) : "r"(tz_smem_u32(bar)), "r"(parity) : "memory");
  }
}
__device__ __forceinline__ void tz_tma_load_2d(void* dst, const TmaDesc* map, unsigned long long* bar, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4}], [%2];"
               :: "r"(tz_smem_u32(dst)), "l"(map), "r"(tz_smem_u32(bar)), "r"(x), "r"(y) : "memory");
}
__device__ __forceinline__ void tz_tma_load_2d_multicast(void* dst, const TmaDesc* map, unsigned long long* bar, int x,
                                                         int y, unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%3, %4}], [%2], %5;"
               :: "r"(tz_smem_u32(dst)), "l"(map), "r"(tz_smem_u32(bar)), "r"(x), "r"(y), "h"(mask) : "memory");
}
__device__ __forceinline__ void tz_mbar_arrive_cluster(unsigned long long* bar, unsigned cta) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(tz_smem_u32(bar)), "r"(cta));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
}
__device__ __forceinline__ void tz_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ int tz_cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return (int)rank;
}
template <int N> __device__ __forceinline__ void tz_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\\n" :: "n"(N));
}
template <int N> __device__ __forceinline__ void tz_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\\n" :: "n"(N));
}
"""


def _const(e, what: str) -> int:
    if not isinstance(e, E.IntImm):
        raise TVMError(f"ptx_tma_load: the {what} must be a constant, got {e}")
    return int(e.value)


def _tma_load(p, e):
    if len(e.args) not in (9, 10):
        raise TVMError("ptx_tma_load has no transaction barrier: a TMA copy runs inside a warp-specialised loop "
                       "(annotate the K loop with warp_specialize_stages, e.g. schedule_wgmma_gemm(fetch='tma'))")
    dst, src, offset, ld, rows, cols, swizzle, bar, index, *mask = e.args
    access = dst.args if isinstance(dst, E.Call) and dst.op.name == "tir.tvm_access_ptr" else None
    if access is None:
        raise TVMError("ptx_tma_load: the destination must be a tvm_access_ptr of a shared buffer")
    spec = (src, access[0].dtype, _const(ld, "row stride"), _const(rows, "box rows"), _const(cols, "box columns"),
            _const(swizzle, "swizzle"))
    name = p.tensor_map_param(spec)
    off = p.expr(offset)
    coords = f"(int)(({off}) % {spec[2]}), (int)(({off}) / {spec[2]})"
    if mask:  # every CTA of the mask gets the box at the same shared address, completing its own barrier there
        return (f"tz_tma_load_2d_multicast({p.expr(dst)}, &{name}, {p.expr(bar)} + {p.expr(index)}, {coords}, "
                f"(unsigned short)({p.expr(mask[0])}))")
    return f"tz_tma_load_2d({p.expr(dst)}, &{name}, {p.expr(bar)} + {p.expr(index)}, {coords})"


def _setmaxnreg(p, e):
    increase, count = (_const(a, "register count") for a in e.args)
    if count % 8 or not 24 <= count <= 256:
        raise TVMError(f"setmaxnreg takes a multiple of 8 in 24..256 registers, got {count}")
    return f"tz_setmaxnreg_{'inc' if increase else 'dec'}<{count}>()"


def install_tma_calls(printer) -> None:
    """Teach ``printer`` the TMA, ``mbarrier`` and ``setmaxnreg`` calls.

    Parameters
    ----------
    printer : KernelWriter
        The printer (its ``tensor_map_param`` names the descriptors).
    """
    def bar(e, i=0):
        return f"{printer.expr(e.args[i])} + {printer.expr(e.args[i + 1])}"

    printer.call_hooks.update({
        "ptx_tma_load": _tma_load, "ptx_setmaxnreg": _setmaxnreg,
        "ptx_mbarrier_init": lambda p, e: f"tz_mbar_init({bar(e)}, {p.expr(e.args[2])})",
        "ptx_mbarrier_arrive": lambda p, e: (f"tz_mbar_arrive_cluster({bar(e)}, {p.expr(e.args[2])})"
                                             if len(e.args) > 2 else f"tz_mbar_arrive({bar(e)})"),
        "ptx_cluster_sync": lambda p, e: "tz_cluster_sync()", "ptx_cluster_rank": lambda p, e: "tz_cluster_rank()",
        "ptx_mbarrier_arrive_expect_tx": lambda p, e: f"tz_mbar_expect_tx({bar(e)}, {p.expr(e.args[2])})",
        "ptx_mbarrier_wait": lambda p, e: f"tz_mbar_wait({bar(e)}, {p.expr(e.args[2])})"})


def tensor_map_specs(entries, argument_index) -> tuple:
    """The launch's ``TensorMapSpec`` s of a kernel's descriptor parameters, in parameter order.

    Parameters
    ----------
    entries : list of tuple
        ``(src data var, dtype, ld, rows, cols, swizzle)`` per descriptor parameter.
    argument_index : dict
        Data var -> the index of its buffer among the kernel's (pointer) arguments.

    Returns
    -------
    tuple of TensorMapSpec
        One per descriptor.
    """
    specs = []
    for src, dtype, ld, rows, cols, swizzle in entries:
        if src not in argument_index:
            raise TVMError(f"ptx_tma_load reads {src.name}, which is not a buffer argument of the kernel")
        specs.append(TensorMapSpec(argument_index[src], dtype, ld, rows, cols, swizzle))
    return tuple(specs)
