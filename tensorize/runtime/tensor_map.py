"""TMA descriptors (``CUtensorMap``) for the kernels that copy tiles with Hopper's tensor memory accelerator.

A kernel with a ``ptx_tma_load`` takes one 128-byte descriptor per (global buffer, box) as a
``const __grid_constant__`` parameter. The code generator records how to make each
(``TensorMapSpec``: which argument, its dtype and row stride, the box, the swizzle); at launch the host
encodes it from the argument's device pointer with the driver's ``cuTensorMapEncodeTiled`` (through
``ctypes``: cupy does not wrap it) and passes its bytes. The buffer is seen as 2-D: rows of ``ld``
elements, as many rows as its size holds.

>>> spec = TensorMapSpec(arg=0, dtype="float16", ld=4096, box_rows=128, box_cols=64, swizzle=128)
>>> tensor_map_geometry(spec, 4096 * 4096, 0x7f0000000000)
((4096, 4096), (8192,), (64, 128))
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

from ..errors import TVMError
from ..ir import dtype as dt

_DATA_TYPES = {"uint8": 0, "uint16": 1, "uint32": 2, "int32": 3, "uint64": 4, "int64": 5, "float16": 6,
               "float32": 7, "float64": 8, "bfloat16": 9, "int8": 0}  # CUtensorMapDataType (int8 as its bytes)
_SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}  # CUtensorMapSwizzle
_L2_PROMOTION_256B = 3


@dataclass(frozen=True)
class TensorMapSpec:
    """How the host encodes one descriptor parameter: argument ``arg`` (a buffer) seen as rows of ``ld``
    elements of ``dtype``, copied in boxes of ``box_rows`` x ``box_cols`` with a ``swizzle``-byte swizzle."""

    arg: int
    dtype: str
    ld: int
    box_rows: int
    box_cols: int
    swizzle: int


def tensor_map_geometry(spec: TensorMapSpec, size: int, address: int):
    """The checked dimensions, byte strides and box of ``spec`` over a buffer of ``size`` elements at ``address``
    (innermost first, as the driver takes them).

    Parameters
    ----------
    spec : TensorMapSpec
        The descriptor.
    size : int
        The buffer's elements.
    address : int
        Its device address.

    Returns
    -------
    tuple
        ``((ld, rows), (row bytes,), (box_cols, box_rows))``.

    Raises
    ------
    TVMError
        When the hardware's limits are not met (alignment, box size, swizzle span).
    """
    if spec.dtype not in _DATA_TYPES or spec.swizzle not in _SWIZZLES:
        raise TVMError(f"no TMA descriptor for {spec.dtype} with a {spec.swizzle}-byte swizzle")
    elem = dt.bits_of(spec.dtype) // 8
    if size % spec.ld:
        raise TVMError(f"a TMA source of {size} elements is not whole rows of {spec.ld}")
    if address % 16 or (spec.ld * elem) % 16:
        raise TVMError("a TMA source must start 16-byte aligned with rows a multiple of 16 bytes apart; got "
                       f"address {address:#x}, rows of {spec.ld * elem} bytes")
    if not (1 <= spec.box_rows <= 256 and 1 <= spec.box_cols <= 256):
        raise TVMError(f"TMA boxes are at most 256 x 256, got {spec.box_rows} x {spec.box_cols}")
    if spec.swizzle and spec.box_cols * elem > spec.swizzle:
        raise TVMError(f"a box row of {spec.box_cols * elem} bytes exceeds its {spec.swizzle}-byte swizzle span")
    return (spec.ld, size // spec.ld), (spec.ld * elem,), (spec.box_cols, spec.box_rows)


_DRIVER = None


def _driver():
    global _DRIVER
    if _DRIVER is None:
        try:
            _DRIVER = ctypes.CDLL("libcuda.so.1")
        except OSError as err:
            raise TVMError("TMA descriptors are encoded by the CUDA driver (libcuda.so.1), which is not loadable "
                           f"here ({err}); run on a machine with an NVIDIA driver") from err
    return _DRIVER


def encode_tensor_map(spec: TensorMapSpec, address: int, size: int):
    """The 128-byte ``CUtensorMap`` of ``spec`` over ``size`` elements at device ``address``.

    Parameters
    ----------
    spec : TensorMapSpec
        The descriptor.
    address : int
        The buffer's device pointer.
    size : int
        Its elements.

    Returns
    -------
    ctypes array
        16 x ``uint64``: the descriptor's bytes (keep it alive until the launch has been issued).

    Raises
    ------
    TVMError
        When the driver is missing or refuses the geometry.
    """
    dims, strides, box = tensor_map_geometry(spec, size, address)
    tmap = (ctypes.c_uint64 * 16)()
    result = _driver().cuTensorMapEncodeTiled(
        ctypes.byref(tmap), _DATA_TYPES[spec.dtype], 2, ctypes.c_void_p(address), (ctypes.c_uint64 * 2)(*dims),
        (ctypes.c_uint64 * 1)(*strides), (ctypes.c_uint32 * 2)(*box), (ctypes.c_uint32 * 2)(1, 1), 0,
        _SWIZZLES[spec.swizzle], _L2_PROMOTION_256B, 0)
    if result != 0:
        raise TVMError(f"cuTensorMapEncodeTiled refused {spec} over {size} elements (CUresult {result})")
    return tmap


class TensorMapCache:
    """Descriptors by (spec, address, size): a launch on the same arrays reuses its encodings."""

    def __init__(self):
        self._maps: dict = {}

    def arguments(self, specs, arrays) -> list:
        """The kernel arguments (cupy ``CPointer`` s to the descriptors' bytes) of ``specs`` over ``arrays``.

        Parameters
        ----------
        specs : sequence of TensorMapSpec
            The kernel's descriptors.
        arrays : sequence of cupy.ndarray
            The launch's buffer arguments.

        Returns
        -------
        list
            One argument per descriptor.
        """
        from cupy.cuda.function import CPointer

        out = []
        for spec in specs:
            array = arrays[spec.arg]
            key = (spec, array.data.ptr, array.size)
            found = self._maps.get(key)
            if found is None:
                if len(self._maps) > 64:
                    self._maps.clear()
                tmap = encode_tensor_map(spec, *key[1:])
                found = self._maps[key] = (tmap, CPointer(ctypes.addressof(tmap)))  # the bytes stay alive here
            out.append(found[1])
        return out
