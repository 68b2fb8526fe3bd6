"""Evicting arrays from the CPU caches before a measurement, as TVM's ``cache_flush_cpu_non_first_arg``.

A kernel of a model runs after its producer: its input activation is in cache, its weights (read
once per inference) and its output buffer are not. Timed alone and warm, a kernel sees all three
in cache, and the search prefers programs that lose in the model (MobileNet-V2's and BERT's tuned
kernels ran slower in sequence than the untuned ones). ``cache_flush_cpu_non_first_arg(*args)``
flushes the cache lines of every argument but the first, so the time is that of the model.

On x86 the lines are flushed with ``clflush`` by a small function compiled once with LLVM; elsewhere
a buffer larger than the caches is written (which evicts the first argument too) and the first
argument is read back in.

>>> import numpy as np
>>> a, b = np.ones(1024, "float32"), np.zeros(1 << 20, "float32")
>>> cache_flush_cpu_non_first_arg(a, b)
>>> float(b.sum())  # contents are kept: only the cached copies go
0.0
"""
from __future__ import annotations

import ctypes
import logging
import platform
import threading

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["cache_flush_cpu_non_first_arg", "flush_arrays", "PREPROCESSORS"]

_IR = """
declare void @llvm.x86.sse2.clflush(ptr)
declare void @llvm.x86.sse2.mfence()

define void @tensorize_clflush(ptr %p, i64 %n) {
entry:
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %loop, label %done
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %q = getelementptr i8, ptr %p, i64 %i
  call void @llvm.x86.sse2.clflush(ptr %q)
  %next = add i64 %i, 64
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  call void @llvm.x86.sse2.mfence()
  ret void
}
"""

_LOCK = threading.Lock()
_STATE: dict = {}
_EVICT_BYTES = 64 << 20  # larger than the last-level cache of the machines this runs on


def _clflush():
    """The JIT-compiled ``clflush`` loop as a ctypes function, or None off x86 (or when LLVM fails)."""
    with _LOCK:
        if "fn" not in _STATE:
            _STATE["fn"] = None
            if platform.machine().lower() in ("x86_64", "amd64", "i686", "x86"):
                try:
                    from ..codegen.llvm import backend
                    from ..target import Target

                    machine = backend.create_target_machine(Target("llvm"), jit=True)
                    engine = backend.JitEngine(backend.parse(_IR), machine)
                    address = engine.function_address("tensorize_clflush")
                    _STATE["engine"] = engine  # keeps the code alive
                    _STATE["fn"] = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(address)
                except Exception as err:  # noqa: BLE001 - the portable eviction is used instead
                    logger.debug("no clflush kernel (%s): evicting by writing a large buffer", err)
        return _STATE["fn"]


def _memory(arg):
    """(address, bytes) of an array argument (numpy or a runtime NDArray), or None for a scalar."""
    data = getattr(arg, "_data", arg)  # a runtime Tensor keeps its memory as a numpy array
    if isinstance(data, np.ndarray):
        return data.ctypes.data, data.nbytes
    return None


def flush_arrays(arrays) -> None:
    """Evict the cache lines of ``arrays`` (numpy arrays or runtime NDArrays; scalars are skipped).

    Parameters
    ----------
    arrays : iterable
        The arrays.

    Examples
    --------
    >>> flush_arrays([np.arange(100.0), 3])
    """
    regions = [m for m in (_memory(a) for a in arrays) if m is not None]
    fn = _clflush()
    if fn is not None:
        for address, nbytes in regions:
            fn(address, nbytes)
        return
    if regions:
        evict = _STATE.setdefault("evict", np.zeros(_EVICT_BYTES // 8))
        evict += 1.0


def cache_flush_cpu_non_first_arg(*args) -> None:
    """Evict every argument but the first from the caches (TVM's ``f_preproc`` of that name).

    Parameters
    ----------
    *args
        A kernel's arguments.
    """
    flush_arrays(args[1:])
    first = _memory(args[0]) if args else None
    if first is not None and _clflush() is None:  # the portable eviction took the first one too: read it back
        np.frombuffer((ctypes.c_char * first[1]).from_address(first[0]), dtype=np.uint8).sum()


PREPROCESSORS = {"cache_flush_cpu_non_first_arg": cache_flush_cpu_non_first_arg}
