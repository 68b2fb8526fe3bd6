"""The OpenMP runtime (libgomp), loaded once per process and never unloaded.

Parallel loops in generated code run on libgomp: JIT-compiled modules call ``GOMP_parallel`` through the
process's global symbols, and exported libraries link it. This module loads it, globally, and keeps a
reference for the process's life (see ``pin_openmp_runtime``); it imports nothing of the project, so the code
generator and the runtime both use it.
"""
from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["pin_openmp_runtime"]

_OPENMP_RUNTIME: list = []  # (name, handle) of the loaded libgomp, kept for the process's life
_OPENMP_NAMES = ("libgomp.so.1", "libgomp.so", "libgomp.1.dylib")


def pin_openmp_runtime() -> str | None:
    """Load the OpenMP runtime (libgomp) into the process, globally, and keep it for the rest of the process;
    its name, or None where no libgomp is installed.

    JIT-compiled parallel loops call ``GOMP_parallel`` through it (``codegen.llvm.backend.load_openmp``), and a
    loaded library with parallel loops leaves OpenMP's worker threads parked inside it: closing the last such
    library (``LibraryModule.unload``) would unload libgomp under those threads and crash the process when they
    next wake (at exit at the latest), so ``unload`` calls this first. Idempotent.

    Returns
    -------
    str or None
        The loaded library's name; None when none of libgomp's names loads.

    Examples
    --------
    >>> name = pin_openmp_runtime()
    >>> pin_openmp_runtime() == name      # loaded once
    True
    """
    if _OPENMP_RUNTIME:
        return _OPENMP_RUNTIME[0][0]
    for name in dict.fromkeys(filter(None, (ctypes.util.find_library("gomp"),) + _OPENMP_NAMES)):
        try:
            _OPENMP_RUNTIME.append((name, ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)))
            return name
        except OSError:
            continue
    return None
