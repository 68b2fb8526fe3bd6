"""The operating-system side of Intel AMX: permission to use the tile registers.

Linux (5.16 and later) gives a process the large AMX tile state (8 KiB per thread, ``XFEATURE_XTILEDATA``)
only on request: until ``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`` succeeds, the first tile
instruction kills the process with ``SIGILL``. The permission holds for the whole process (all its
threads), so it is requested once: at the first call of a module whose code uses AMX (``Module.requires_amx``,
set by the LLVM codegen from the generated IR and by ``tvm.runtime.load_module`` from the library's metadata).
Building such a module never needs the permission (its assembly can be made on any CPU).

>>> uses_amx('declare void @"llvm.x86.tdpbusd"(i8, i8, i8)')
True
>>> uses_amx('declare <16 x i32> @"llvm.x86.avx512.vpdpbusd.512"(<16 x i32>, <64 x i8>, <64 x i8>)')
False
"""
from __future__ import annotations

import ctypes
import errno
import logging
import os
import platform
import re
import threading

from ..errors import TVMError

logger = logging.getLogger(__name__)

__all__ = ["AMXPermissionError", "uses_amx", "request_amx_permission", "amx_permitted", "NEEDS_KEY"]

SYS_ARCH_PRCTL = 158  # x86_64
ARCH_GET_XCOMP_PERM = 0x1022
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18
NEEDS_KEY = "amx-tile"  # what an exported library's metadata lists under "needs" when its code uses AMX

_AMX_CALL = re.compile(r'@"?llvm\.x86\.(tile\w*|tdp\w+|ldtilecfg|sttilecfg)\b')
_lock = threading.Lock()
_granted = False


class AMXPermissionError(TVMError):
    """The operating system did not let this process use the AMX tile registers."""


def uses_amx(ir_text: str) -> bool:
    """Whether LLVM IR text calls AMX intrinsics (tile loads, stores, configuration, dot products)."""
    return bool(_AMX_CALL.search(ir_text))


def _arch_prctl(code: int, arg) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(ctypes.c_long(SYS_ARCH_PRCTL), ctypes.c_long(code), arg)
    return 0 if result == 0 else ctypes.get_errno()


def amx_permitted() -> bool:
    """Whether the tile data state is already granted to this process (``ARCH_GET_XCOMP_PERM``)."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    mask = ctypes.c_uint64(0)
    if _arch_prctl(ARCH_GET_XCOMP_PERM, ctypes.byref(mask)) != 0:
        return False
    return bool(mask.value >> XFEATURE_XTILEDATA & 1)


def request_amx_permission() -> None:
    """Ask Linux for the AMX tile data state, once per process; raise ``AMXPermissionError`` when refused.

    Raises
    ------
    AMXPermissionError
        Not Linux on x86_64, a CPU without AMX, or a kernel older than 5.16 (or one that forbids it):
        the message names the errno and what to do.
    """
    global _granted
    with _lock:
        if _granted:
            return
        if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
            raise AMXPermissionError(
                f"AMX code runs only on Linux x86_64 (this is {platform.system()} {platform.machine()}); build "
                "without AMX intrinsics (e.g. VNNI) for this machine")
        code = _arch_prctl(ARCH_REQ_XCOMP_PERM, ctypes.c_ulong(XFEATURE_XTILEDATA))
        if code != 0:
            why = {errno.EOPNOTSUPP: "this CPU has no AMX tile state",
                   errno.EINVAL: "this CPU has no AMX tile state or the kernel is older than 5.16",
                   errno.EPERM: "the kernel forbids it for this process (a seccomp or sigaltstack limit)",
                   errno.ENOSYS: "the kernel has no arch_prctl"}.get(code, os.strerror(code))
            raise AMXPermissionError(
                f"Linux refused this process the AMX tile registers: arch_prctl(ARCH_REQ_XCOMP_PERM, "
                f"XFEATURE_XTILEDATA) failed with {errno.errorcode.get(code, code)} ({why}); the code uses AMX "
                "tile instructions and would die with SIGILL. Run it on a CPU with amx-tile under Linux >= 5.16, "
                "or build it with intrinsics this CPU supports (TensorIntrin.get(name).meta.supported_by(target))")
        _granted = True
        logger.debug("AMX tile data permission granted to process %d", os.getpid())
