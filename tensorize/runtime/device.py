"""Devices: ``tvm.cpu(0)``, ``tvm.cuda(0)``, ``tvm.device("llvm", 0)``.

>>> dev = device("llvm", 0)
>>> dev.device_type, dev.device_id, str(dev)
(1, 0, 'cpu:0')
"""
from __future__ import annotations

from ..errors import TVMTypeError, TVMValueError

from functools import lru_cache

# DLPack device type codes, as TVM numbers them.
CPU = 1
CUDA = 2

_NAMES = {CPU: "cpu", CUDA: "cuda"}
_ALIASES = {"cpu": CPU, "llvm": CPU, "c": CPU, "stackvm": CPU, "cuda": CUDA, "gpu": CUDA, "nvptx": CUDA}


class Device:
    """A device: type code (``Device.kDLCPU``, ``Device.kDLCUDA``) and index."""

    kDLCPU = CPU
    kDLCUDA = CUDA
    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type: int, device_id: int = 0):
        if device_type not in _NAMES:
            raise TVMValueError(f"unsupported device type {device_type}; use tvm.cpu() or tvm.cuda()")
        self.device_type, self.device_id = int(device_type), int(device_id)

    @property
    def exist(self) -> bool:
        """Whether the device is present on this machine."""
        if self.device_type == CPU:
            return self.device_id == 0
        return self.device_id < _cuda_device_count()

    def sync(self) -> None:
        """Wait for queued work on the device (CPU work is synchronous)."""
        if self.device_type == CUDA and self.exist:
            import cupy

            cupy.cuda.Device(self.device_id).synchronize()

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and (self.device_type, self.device_id) == (other.device_type, other.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __str__(self) -> str:
        return f"{_NAMES[self.device_type]}:{self.device_id}"

    def __repr__(self) -> str:
        return f"{_NAMES[self.device_type]}({self.device_id})"


@lru_cache(maxsize=1)
def _cuda_device_count() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() if cupy.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no CUDA runtime, no driver, or no cupy: no GPU
        return 0


def cpu(dev_id: int = 0) -> Device:
    """The host CPU.

    Parameters
    ----------
    dev_id : int
        The device number.

    Returns
    -------
    Device
        The device.
    """
    return Device(CPU, dev_id)


def cuda(dev_id: int = 0) -> Device:
    """An NVIDIA GPU.

    Parameters
    ----------
    dev_id : int
        The device number.

    Returns
    -------
    Device
        The device.
    """
    return Device(CUDA, dev_id)


gpu = cuda


def device(dev_type, dev_id: int = 0) -> Device:
    """A device by name (``"llvm"``, ``"cpu"``, ``"cuda"``, a target string such as ``"llvm -mcpu=native"``)
    or by type code.

    Parameters
    ----------
    dev_type : str or int
        The name or type code.
    dev_id : int
        The device number.

    Returns
    -------
    Device
        The device.

    Examples
    --------
    >>> tvm.device("llvm") == tvm.cpu(0)
    True
    """
    if isinstance(dev_type, Device):
        return dev_type
    if isinstance(dev_type, int):
        return Device(dev_type, dev_id)
    if not isinstance(dev_type, str):
        kind = getattr(getattr(dev_type, "kind", None), "name", None)
        if kind is None:
            raise TVMTypeError(f"device() expects a name or type code, got {dev_type!r}")
        dev_type = kind
    name = dev_type.split()[0] if dev_type.strip() else dev_type
    if name not in _ALIASES:
        raise TVMValueError(f"unknown device {dev_type!r}; use one of {', '.join(sorted(_ALIASES))}")
    return Device(_ALIASES[name], dev_id)
