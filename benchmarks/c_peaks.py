"""C reference micro-kernels of the peak instruction rates (AVX512-VNNI ``vpdpbusd``, AMX ``tdpbusd``),
compiled with the system's gcc and called through ctypes: the yardstick the TensorIR peak kernels of the
benchmarks are checked against (the same operation count, the same result).

Each kernel runs ``threads`` OpenMP threads; each thread keeps ``CHAINS`` (VNNI) or 4 (AMX) independent
accumulators in registers for ``steps`` steps on register-resident operands and stores them to
``out[thread]``, so the result is checkable: every accumulator ends as ``steps`` times one dot product.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile

VNNI_CHAINS = 24  # 2 vpdpbusd ports x 5 cycles latency = 10 in flight; 24 hide it with room to spare

_VNNI_SOURCE = r"""
#include <immintrin.h>
#include <stdint.h>
#include <omp.h>
#define CHAINS %(chains)d
int vnni_peak(const uint8_t *a, const int8_t *b, int32_t *out, long steps, int threads) {
  #pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    __m512i va = _mm512_set1_epi32(*(const int32_t *)(a + 4 * t));
    __m512i vb = _mm512_loadu_si512((const void *)(b + 64 * t));
    __m512i acc[CHAINS];
    for (int c = 0; c < CHAINS; ++c) acc[c] = _mm512_setzero_si512();
    for (long s = 0; s < steps; ++s) {
      #pragma GCC unroll 32
      for (int c = 0; c < CHAINS; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], va, vb);
    }
    for (int c = 0; c < CHAINS; ++c) _mm512_storeu_si512((void *)(out + (t * CHAINS + c) * 16), acc[c]);
  }
  return 0;
}
"""

_AMX_SOURCE = r"""
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <omp.h>
/* a: threads x (32 x 64) u8, b: threads x (2 x 16 x 64) s8 packed, out: threads x (32 x 32) s32 */
int amx_peak(const uint8_t *a, const int8_t *b, int32_t *out, long steps, int threads) {
  #pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    unsigned char cfg[64];
    memset(cfg, 0, sizeof cfg);
    cfg[0] = 1;
    for (int i = 0; i < 8; ++i) { cfg[16 + 2 * i] = 64; cfg[48 + i] = 16; }
    _tile_loadconfig(cfg);
    const uint8_t *ta = a + t * 2048;
    const int8_t *tb = b + t * 2048;
    int32_t *to = out + t * 1024;
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    _tile_loadd(4, ta, 64); _tile_loadd(5, ta + 1024, 64);
    _tile_loadd(6, tb, 64); _tile_loadd(7, tb + 1024, 64);
    for (long s = 0; s < steps; ++s) {
      _tile_dpbusd(0, 4, 6); _tile_dpbusd(1, 4, 7); _tile_dpbusd(2, 5, 6); _tile_dpbusd(3, 5, 7);
    }
    _tile_stored(0, to, 128); _tile_stored(1, to + 16, 128);
    _tile_stored(2, to + 512, 128); _tile_stored(3, to + 528, 128);
    _tile_release();
  }
  return 0;
}
"""


class CKernelUnavailable(RuntimeError):
    """No C compiler, or it cannot compile for the instruction set."""


def _compile(source: str, flags: list[str], symbol: str):
    cc = shutil.which(os.environ.get("CC", "gcc"))
    if cc is None:
        raise CKernelUnavailable("no C compiler (gcc) on the PATH")
    tmp = tempfile.mkdtemp(prefix="peak_")
    src, lib = os.path.join(tmp, "peak.c"), os.path.join(tmp, "peak.so")
    with open(src, "w") as f:
        f.write(source)
    cmd = [cc, "-O3", "-fopenmp", "-shared", "-fPIC", *flags, src, "-o", lib]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise CKernelUnavailable(f"`{' '.join(cmd)}` failed: {result.stderr.strip()[:400]}")
    fn = getattr(ctypes.CDLL(lib), symbol)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long, ctypes.c_int]
    return fn


def vnni_peak_c(chains: int = VNNI_CHAINS):
    """``fn(a_ptr, b_ptr, out_ptr, steps, threads)`` of the C vpdpbusd kernel (gcc -mavx512vnni)."""
    return _compile(_VNNI_SOURCE % {"chains": chains}, ["-mavx512f", "-mavx512vnni"], "vnni_peak")


def amx_peak_c():
    """``fn(a_ptr, b_ptr, out_ptr, steps, threads)`` of the C tdpbusd kernel (gcc -mamx-tile -mamx-int8).
    The process needs the AMX permission first (``tensorize.runtime.amx.request_amx_permission``)."""
    return _compile(_AMX_SOURCE, ["-mamx-tile", "-mamx-int8"], "amx_peak")


def ptr(array) -> int:
    """The data address of a numpy array, for the kernels' pointer arguments."""
    return array.ctypes.data
