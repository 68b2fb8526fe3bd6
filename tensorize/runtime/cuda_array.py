"""Tensors on a CUDA device, backed by cupy: what ``tvm.nd.array(x, tvm.cuda(0))`` returns.

Without cupy or a GPU, making one raises a ``TVMValueError`` that says so.
"""
from __future__ import annotations

import numpy as np

from ..errors import TVMValueError
from ..ir import dtype as dt


def _cupy():
    try:
        import cupy
    except ImportError:
        cupy = None
    try:
        ok = cupy is not None and cupy.cuda.is_available()
    except Exception:  # a broken driver reports through many exception types
        ok = False
    if not ok:
        raise TVMValueError("tensors on tvm.cuda() need cupy (pip install cupy-cuda13x) and an NVIDIA GPU; none is "
                            "available here. Use tvm.cpu() tensors, and build GPU schedules for 'llvm' after "
                            "tensorize.transform.gpu_emulation.emulate_gpu to check them on the CPU")
    return cupy


class CUDATensor:
    """An n-dimensional array in GPU memory (a cupy array, ``.cupy``)."""

    __slots__ = ("_cupy", "_dtype", "device")

    def __init__(self, data, device, dtype: str | None = None):
        self._cupy, self.device = data, device
        self._dtype = dtype or dt.from_numpy(np.dtype(data.dtype))

    @property
    def cupy(self):
        """The underlying ``cupy.ndarray``."""
        return self._cupy

    @property
    def shape(self) -> tuple:
        """The tensor's shape."""
        return tuple(self._cupy.shape)

    @property
    def dtype(self) -> str:
        """The tensor's dtype (as the program sees it)."""
        return self._dtype

    def numpy(self) -> np.ndarray:
        """A host copy of the data.

        Returns
        -------
        numpy.ndarray
            The copy.
        """
        return self._cupy.get()

    asnumpy = numpy

    def copyfrom(self, source) -> "CUDATensor":
        """Copy ``source`` (an array or tensor of the same shape) into this tensor.

        Parameters
        ----------
        source : array_like or tensor
            The data, cast to this tensor's dtype.

        Returns
        -------
        CUDATensor
            ``self``.

        Raises
        ------
        TVMValueError
            When the shapes differ.
        """
        source = source.numpy() if hasattr(source, "numpy") else np.asarray(source)
        if tuple(source.shape) != self.shape:
            raise TVMValueError(f"copyfrom: shape {source.shape} does not match the tensor's shape {self.shape}")
        self._cupy.set(source.astype(self._cupy.dtype, copy=False))
        return self

    def __repr__(self) -> str:
        return f"<tvm.runtime.Tensor shape={self.shape}, {self.device}>\n{self.numpy()!r}"

    def __str__(self) -> str:
        return str(self.numpy())


def cuda_array(arr, device, dtype: str | None = None) -> CUDATensor:
    """A copy of ``arr`` (numpy array, list or tensor) on ``device``.

    Parameters
    ----------
    arr : array_like or tensor
        The data.
    device : Device
        A CUDA device.
    dtype : str, optional
        Cast to this dtype first.

    Returns
    -------
    CUDATensor
        The device copy.
    """
    cupy = _cupy()
    source = arr.numpy() if hasattr(arr, "numpy") else np.asarray(arr)
    if dtype is not None:
        source = source.astype(dt.numpy_dtype(dtype))
    with cupy.cuda.Device(device.device_id):
        return CUDATensor(cupy.asarray(source), device, dtype)


def cuda_empty(shape, dtype: str, device) -> CUDATensor:
    """An uninitialised tensor on ``device``.

    Parameters
    ----------
    shape : sequence of int
        Its shape.
    dtype : str
        Its dtype.
    device : Device
        A CUDA device.

    Returns
    -------
    CUDATensor
        The new tensor.
    """
    cupy = _cupy()
    with cupy.cuda.Device(device.device_id):
        return CUDATensor(cupy.empty(shape, dt.numpy_dtype(dtype)), device, dtype)
