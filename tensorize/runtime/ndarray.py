"""Tensors on devices: ``tvm.nd.array`` / ``tvm.runtime.tensor`` and ``tvm.nd.empty``.

A CPU ``Tensor`` wraps a numpy array (no copy); new storage is 64-byte aligned so generated code
can use aligned vector loads. ``bfloat16`` data is held as ``uint16`` bits.

>>> import numpy as np
>>> a = array(np.arange(4, dtype="float32"))
>>> a.shape, a.dtype, str(a.device)
((4,), 'float32', 'cpu:0')
>>> print(a)
[0. 1. 2. 3.]
"""
from __future__ import annotations

from ..errors import TVMTypeError, TVMValueError

from typing import Sequence

import numpy as np

from ..ir import dtype as dt
from .device import CPU, Device, cpu, device as make_device

ALIGNMENT = 64


def aligned_empty(shape: Sequence[int], np_dtype, alignment: int = ALIGNMENT) -> np.ndarray:
    """An uninitialised C-contiguous numpy array whose data starts on an ``alignment``-byte boundary.

    Parameters
    ----------
    shape : list of int
        The shape.
    np_dtype : numpy.dtype
        The dtype.
    alignment : int
        Bytes.

    Returns
    -------
    numpy.ndarray
        The array.
    """
    shape = tuple(int(s) for s in shape)
    np_dtype = np.dtype(np_dtype)
    nbytes = max(int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize, 1)
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start:start + nbytes].view(np_dtype)[: int(np.prod(shape, dtype=np.int64))].reshape(shape)


class Tensor:
    """An n-dimensional array on a device (TVM's ``runtime.Tensor``, formerly ``NDArray``).

    On CPU it wraps a numpy array without copying: ``numpy()`` returns a copy, ``asnumpy`` too.
    """

    __slots__ = ("_data", "_dtype", "device")

    def __init__(self, data: np.ndarray, device: Device | None = None, dtype: str | None = None):
        if not isinstance(data, np.ndarray):
            raise TVMTypeError(f"Tensor wraps a numpy array, got {type(data).__name__}; use tvm.nd.array(...) to convert")
        self._data = data
        self._dtype = dtype or dt.from_numpy(data.dtype)
        self.device = device or cpu(0)

    # -- properties -------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape."""
        return tuple(self._data.shape)

    @property
    def dtype(self) -> str:
        """The TVM dtype string (``"bfloat16"`` for bfloat16 tensors held as uint16)."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return self._data.ndim

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements."""
        return tuple(s // self._data.itemsize for s in self._data.strides)

    @property
    def data_ptr(self) -> int:
        """The address of the first element."""
        return self._data.ctypes.data

    @property
    def is_contiguous(self) -> bool:
        """Whether the data is C-contiguous."""
        return self._data.flags.c_contiguous

    # -- data movement ----------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A numpy copy of the data (bfloat16 as uint16 bits).

        Returns
        -------
        numpy.ndarray
            The copy.
        """
        return self._data.copy()

    asnumpy = numpy

    def copyfrom(self, source) -> "Tensor":
        """Copy ``source`` (a Tensor, numpy array or nested list) into this tensor; shapes must match.

        Parameters
        ----------
        source : Tensor, numpy.ndarray or list
            The data.

        Returns
        -------
        Tensor
            This tensor.
        """
        if isinstance(source, Tensor):
            source = source._data
        source = np.asarray(source)
        if source.shape != self._data.shape:
            raise TVMValueError(f"copyfrom: shape {source.shape} does not match the tensor's shape {self.shape}")
        np.copyto(self._data, source.astype(self._data.dtype, copy=False))
        return self

    def copyto(self, target) -> "Tensor":
        """Copy into another Tensor, or to a new tensor on the given Device.

        Parameters
        ----------
        target : Tensor or Device
            Where to copy.

        Returns
        -------
        Tensor
            The tensor copied into.
        """
        if isinstance(target, Tensor):
            return target.copyfrom(self)
        if isinstance(target, Device):
            return array(self._data, target, dtype=self._dtype)
        raise TVMTypeError(f"copyto expects a Tensor or a Device, got {type(target).__name__}")

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __setitem__(self, key, value) -> None:
        if key != slice(None):
            raise TVMValueError("a Tensor only supports whole assignment: tensor[:] = value")
        self.copyfrom(value)

    # -- text -------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<tvm.runtime.Tensor shape={self.shape}, {self.device}>\n{self._data!r}"

    def __str__(self) -> str:
        return str(self._data)


NDArray = Tensor


def _numpy_dtype(dtype: str) -> np.dtype:
    return np.dtype(dt.numpy_dtype(dtype))


def array(arr, device: Device | None = None, dtype: str | None = None) -> Tensor:
    """A new tensor on ``device`` (default CPU) holding a copy of ``arr`` (numpy array, list or Tensor).

    Parameters
    ----------
    arr : numpy.ndarray, list or Tensor
        The data.
    device : Device, optional
        The device.
    dtype : str, optional
        The dtype (default: the data's).

    Returns
    -------
    Tensor
        The tensor.

    Examples
    --------
    >>> a = tvm.nd.array(np.arange(4, dtype="float32"))
    >>> a.shape, a.dtype
    ((4,), 'float32')
    >>> array([[1, 2], [3, 4]], dtype="int8").dtype
    'int8'
    """
    if isinstance(arr, Tensor):
        dtype = dtype or arr.dtype
        arr = arr._data
    if isinstance(device, str):
        device = make_device(device)
    device = device or cpu(0)
    if device.device_type != CPU:
        from .cuda_array import cuda_array

        return cuda_array(arr, device, dtype)
    source = np.asarray(arr)
    if dtype is None:
        dtype = dt.from_numpy(source.dtype)
    out = aligned_empty(source.shape, _numpy_dtype(dtype))
    np.copyto(out, source.astype(out.dtype, copy=False) if source.dtype != out.dtype else source)
    return Tensor(out, device, dtype)


tensor = array


def empty(shape, dtype: str = "float32", device: Device | None = None) -> Tensor:
    """A new uninitialised, 64-byte aligned tensor.

    Parameters
    ----------
    shape : tuple of int
        The shape.
    dtype : str
        The dtype.
    device : Device, optional
        The device.

    Returns
    -------
    Tensor
        The tensor.
    """
    if isinstance(shape, int):
        shape = (shape,)
    device = make_device(device) if isinstance(device, str) else (device or cpu(0))
    if device.device_type != CPU:
        from .cuda_array import cuda_empty

        return cuda_empty(shape, dtype, device)
    return Tensor(aligned_empty(shape, _numpy_dtype(dtype)), device, dtype)


def from_numpy(arr: np.ndarray, device: Device | None = None) -> Tensor:
    """Wrap ``arr`` without copying.

    Parameters
    ----------
    arr : numpy.ndarray
        The array.
    device : Device, optional
        The device.

    Returns
    -------
    Tensor
        The tensor.
    """
    return Tensor(arr, device)
