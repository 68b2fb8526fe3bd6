"""Hopper's warpgroup MMA in CUDA C: ``ptx_wgmma`` as inline PTX ``wgmma.mma_async`` (sm_90a).

``ptx_wgmma(shape, a_type, b_type, c_type, a_ptr, a_lbo, a_sbo, b_ptr, b_lbo, b_sbo, c, c_offset[, swizzle])``
reads A and B from shared memory through 64-bit matrix descriptors (``tz_wgmma_desc``: the start address,
the leading byte offset between core matrices along K and the stride byte offset along M/N, each in 16-byte
units, and the swizzle mode: none, or 128, 64 or 32 bytes when ``swizzle`` says so) and accumulates into
``N / 2`` f32 registers of the calling thread (``c[c_offset ...]``, made per-thread by ``warp_memory``).
``ptx_wgmma_fence`` / ``ptx_wgmma_commit_group`` open and close a group of them (the intrinsics' impls place
them); the groups are waited for by
``ptx_wgmma_wait_group(n)`` (the store intrinsic's first step) and, in a kernel that issues any
``wgmma``, before every ``__syncthreads()`` (``barrier_prefix``): a barrier then both publishes a shared
tile and frees the one the completed groups read. Inside a software pipeline with a compute lag
(``pipeline_compute_lag``: its shared tiles have that many extra versions) the wait leaves that many
groups in flight, so the Tensor Cores keep working across the barrier. The same prefix fences the
generic proxy's shared memory writes (the cooperative fetches, ``cp.async`` included) against the async
proxy the Tensor Cores read through (``fence.proxy.async.shared::cta``).
"""
from __future__ import annotations

from ...errors import TVMError

WGMMA_HELPERS = """\
__device__ __forceinline__ unsigned long long tz_wgmma_desc(const void* smem, unsigned lbo, unsigned sbo,
                                                            unsigned long long mode) {
  unsigned addr = (unsigned)__cvta_generic_to_shared(smem);
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) |
         ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | (mode << 62);
}
__device__ __forceinline__ void tz_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory"); }
__device__ __forceinline__ void tz_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void tz_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\\n" :: "n"(N) : "memory");
}
__device__ __forceinline__ void tz_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
}
"""


def barrier_prefix(lag: int = 0) -> tuple:
    """The lines a wgmma kernel puts before a ``__syncthreads()``.

    Parameters
    ----------
    lag : int
        Groups that may stay in flight (the enclosing software pipeline's compute lag).

    Returns
    -------
    tuple of str
        The wait and the proxy fence.
    """
    return (f"tz_wgmma_wait<{int(lag)}>();", "tz_fence_proxy_async();")


_SHAPES = {"m64n64k16": 64, "m64n128k16": 128, "m64n256k16": 256}
_SWIZZLE_MODES = {0: 0, 128: 1, 64: 2, 32: 3}  # the descriptor's bits 62-63
_ELEMENT_BYTES = {"fp16": 2, "bf16": 2}
_PTX_TYPES = {"fp16": "f16", "bf16": "bf16"}


def _ptx_wgmma(p, e):
    shape, a_type, b_type, c_type = (x.value for x in e.args[:4])
    if shape not in _SHAPES or (a_type, b_type, c_type) not in {("fp16", "fp16", "fp32"), ("bf16", "bf16", "fp32")}:
        raise TVMError(f"ptx_wgmma {shape} {a_type}x{b_type}->{c_type} is not generated; supported: "
                       f"{', '.join(_SHAPES)} with fp16 or bf16 inputs and fp32 accumulators")
    a, a_lbo, a_sbo, b, b_lbo, b_sbo, c, c_off = (p.expr(x) for x in e.args[4:12])
    swizzle = int(e.args[12].value) if len(e.args) > 12 else 0
    trans_b = int(e.args[13].value) if len(e.args) > 13 else 0  # B MN-major (stored K x N)
    if swizzle not in _SWIZZLE_MODES:
        raise TVMError(f"ptx_wgmma swizzle must be one of {sorted(_SWIZZLE_MODES)} bytes, got {swizzle}")
    mode = _SWIZZLE_MODES[swizzle]
    size = _ELEMENT_BYTES[a_type]
    regs = _SHAPES[shape] // 2
    outs = ", ".join(f'"+f"((({c}) + ({c_off}))[{i}])' for i in range(regs))
    d = ", ".join(f"%{i}" for i in range(regs))
    op = f"wgmma.mma_async.sync.aligned.{shape}.f32.{_PTX_TYPES[a_type]}.{_PTX_TYPES[b_type]}"
    desc_a = f"tz_wgmma_desc({a}, ({a_lbo}) * {size}, ({a_sbo}) * {size}, {mode}ull)"
    desc_b = f"tz_wgmma_desc({b}, ({b_lbo}) * {size}, ({b_sbo}) * {size}, {mode}ull)"
    # scale-d = 1 (accumulate), scale-a = scale-b = 1, A K-major, B K-major or (trans-b) MN-major
    asm = (f'asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n'
           f'{op} {{{d}}}, %{regs}, %{regs + 1}, p, 1, 1, 0, {trans_b};\\n}}\\n" : {outs} : '
           f'"l"({desc_a}), "l"({desc_b}), "r"(1) : "memory")')
    return asm


def _ptx_wgmma_wait(p, e):
    return f"tz_wgmma_wait<{int(e.args[0].value)}>()"


def install_wgmma_calls(printer) -> None:
    """Teach ``printer`` the warpgroup calls (``ptx_wgmma``, its fence, commit and wait).

    Parameters
    ----------
    printer : KernelWriter
        The printer whose ``call_hooks`` get the calls.
    """
    printer.call_hooks.update({"ptx_wgmma": _ptx_wgmma, "ptx_wgmma_wait_group": _ptx_wgmma_wait,
                               "ptx_wgmma_fence": lambda p, e: "tz_wgmma_fence()",
                               "ptx_wgmma_commit_group": lambda p, e: "tz_wgmma_commit()"})
