"""Buffers: a typed, shaped view of memory behind a data pointer variable.

>>> A = decl_buffer((128, 128), "float32", name="A")
>>> A.scope(), [int(s) for s in A.shape]
('global', [128, 128])
"""
from __future__ import annotations

from ..errors import TVMTypeError

from typing import Sequence

from . import dtype as dt
from .expr import BufferLoad, Call, IntImm, Op, PointerType, PrimExpr, Ramp, Range, Var, call_intrin, convert, make_const
from .node import Node, _set


# The statements that address a buffer (``A[0:4, j]`` is a BufferRegion, ``vstore`` a BufferStore)
# are defined in stmt.py, above this module; stmt.py registers them here when it loads.
_STATEMENTS: dict[str, type] = {}


class Buffer(Node):
    """A multi-dimensional view of memory.

    ``data`` is the pointer variable (dtype ``"handle"``, with a ``PointerType`` naming the storage
    scope); ``strides`` is empty for a compact row-major buffer; ``elem_offset`` is the offset in
    elements of the first element. Buffers compare by identity; structural equality maps them by
    position of definition like variables.
    """

    __slots__ = ("data", "dtype", "shape", "strides", "elem_offset", "name", "data_alignment",
                 "offset_factor", "buffer_type", "axis_separators")
    _fields = ("data", "dtype", "shape", "strides", "elem_offset", "data_alignment", "offset_factor",
               "buffer_type", "axis_separators")
    _type_key = "tir.Buffer"

    def __init__(self, data: Var, dtype: str, shape: Sequence, strides: Sequence = (), elem_offset=None,
                 name: str = "buffer", data_alignment: int = 64, offset_factor: int = 1,
                 buffer_type: str = "", axis_separators: Sequence[int] = (), span=None):
        dt.parse(dtype)
        shape = tuple(_as_index(s) for s in shape)
        _set(self, "data", data)
        _set(self, "dtype", dtype)
        _set(self, "shape", shape)
        _set(self, "strides", tuple(_as_index(s) for s in strides))
        _set(self, "elem_offset", make_const("int32", 0) if elem_offset is None else _as_index(elem_offset))
        _set(self, "name", name)
        _set(self, "data_alignment", int(data_alignment))
        _set(self, "offset_factor", int(offset_factor))
        _set(self, "buffer_type", buffer_type)
        _set(self, "axis_separators", tuple(int(a) for a in axis_separators))
        _set(self, "span", span)

    @property
    def ty(self):
        """The buffer's type, as TVM's ``buffer.ty``: its ``dtype`` and ``shape``."""
        from .types import BufferType

        return BufferType(self.dtype, self.shape)

    def scope(self) -> str:
        """The storage scope: ``"global"``, ``"shared"``, ``"local"``, ``"wmma.matrix_a"``, ...

        Returns
        -------
        str
            The scope (``"global"`` when none was given).
        """
        annotation = self.data.type_annotation
        return annotation.storage_scope if isinstance(annotation, PointerType) else "global"

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    def __getitem__(self, indices):
        """``A[i, j]`` is a BufferLoad; ``A[0:4, j]`` is a BufferRegion (used in reads/writes and slices)."""
        BufferRegion = _STATEMENTS["BufferRegion"]
        if not isinstance(indices, tuple):
            indices = (indices,)
        if any(isinstance(i, slice) for i in indices):
            region = []
            for axis, index in enumerate(indices):
                if isinstance(index, slice):
                    start = 0 if index.start is None else index.start
                    stop = self.shape[axis] if index.stop is None else index.stop
                    region.append(Range(start, stop) if not isinstance(start, int) or not isinstance(stop, int)
                                  else Range.from_min_extent(start, stop - start))
                else:
                    region.append(Range.from_min_extent(index, 1))
            return BufferRegion(self, region)
        return BufferLoad(self, indices)

    def vload(self, begin: Sequence, dtype: str | None = None, predicate=None) -> BufferLoad:
        """A (vector) load starting at ``begin``; a vector ``dtype`` loads that many contiguous lanes of the last axis.

        Parameters
        ----------
        begin : list of PrimExpr
            The indices of the first element.
        dtype : str, optional
            The loaded dtype (default: the buffer's).
        predicate : PrimExpr, optional
            A lane mask.

        Returns
        -------
        BufferLoad
            The load.
        """
        begin = [convert(b) for b in (begin if isinstance(begin, (list, tuple)) else [begin])]
        dtype = dtype or self.dtype
        lanes = dt.lanes_of(dtype) // dt.lanes_of(self.dtype)
        if lanes > 1:
            begin[-1] = Ramp(begin[-1], 1, lanes)
        return BufferLoad(self, begin, predicate)

    def vstore(self, begin: Sequence, value, predicate=None):
        """A (vector) store of ``value`` starting at ``begin``.

        Parameters
        ----------
        begin : list of PrimExpr
            The indices of the first element.
        value : PrimExpr
            The stored value.
        predicate : PrimExpr, optional
            A lane mask (TVM's predicated store).

        Returns
        -------
        BufferStore
            The store.
        """
        BufferStore = _STATEMENTS["BufferStore"]
        begin = [convert(b) for b in (begin if isinstance(begin, (list, tuple)) else [begin])]
        lanes = dt.lanes_of(value.dtype) // dt.lanes_of(self.dtype)
        if lanes > 1:
            begin[-1] = Ramp(begin[-1], 1, lanes)
        return BufferStore(self, value, begin, predicate)

    def access_ptr(self, access_mask="r", ptr_type: str = "handle", content_lanes: int = 1, offset=0, extent=None):
        """A ``tvm_access_ptr`` call: the address of element ``elem_offset + offset``.

        Parameters
        ----------
        access_mask : str or int
            ``"r"``, ``"w"``, ``"rw"`` or the bit mask.
        ptr_type : str
            The pointer's type.
        content_lanes : int
            The lanes of one element.
        offset : PrimExpr or int
            Elements past the buffer's start.
        extent : PrimExpr, optional
            The number of elements accessed (default: all).

        Returns
        -------
        Call
            The ``tir.tvm_access_ptr`` call.
        """
        mask = {"r": 1, "w": 2, "rw": 3}.get(access_mask, access_mask) if isinstance(access_mask, str) else access_mask
        if extent is None:
            extent = 1
            for s in self.shape:
                extent = extent * s
        tmp = Call(self.dtype, Op.get("tir.type_annotation"), ())
        return call_intrin(ptr_type, "tir.tvm_access_ptr", tmp, self.data, self.elem_offset + offset, extent, int(mask))

    def offset_of(self, indices: Sequence) -> list[PrimExpr]:
        """The flat element offset of ``indices`` (one entry per axis group; one group without axis separators).

        Parameters
        ----------
        indices : list of PrimExpr
            One index per axis.

        Returns
        -------
        list of PrimExpr
            The offsets.
        """
        indices = [convert(i) for i in indices]
        if self.strides:
            offset = self.elem_offset
            for index, stride in zip(indices, self.strides):
                offset = offset + index * stride
            return [offset]
        offset = make_const(indices[0].dtype if indices else "int32", 0)
        for index, extent in zip(indices, self.shape):
            offset = offset * extent + index
        return [offset + self.elem_offset]

    def get_flattened_buffer(self) -> "Buffer":
        """The same memory as a 1-D buffer of the total size (what lowering turns accesses into).

        Returns
        -------
        Buffer
            The 1-D buffer.
        """
        size = make_const("int32", 1)
        for s in self.shape:
            size = size * s
        return Buffer(self.data, self.dtype, (size,), (), self.elem_offset, self.name, self.data_alignment,
                      self.offset_factor, self.buffer_type)


def _as_index(value) -> PrimExpr:
    value = convert(value)
    if not isinstance(value, PrimExpr):
        raise TVMTypeError(f"buffer shape, stride and offset entries must be integers or expressions, got {value!r}")
    return value


def decl_buffer(shape, dtype: str = "float32", name: str = "buffer", data: Var | None = None, strides=(),
                elem_offset=None, scope: str = "", data_alignment: int = -1, offset_factor: int = 0,
                buffer_type: str = "", axis_separators=(), span=None) -> Buffer:
    """Declare a new buffer (``tvm.tir.decl_buffer``), creating its data pointer variable if not given.

    Parameters
    ----------
    shape : list of PrimExpr or int
        The shape.
    dtype : str
        The element type.
    name : str
        The name.
    data : Var, optional
        The data pointer (created when None).
    strides : list of PrimExpr
        The strides (empty: compact).
    elem_offset : PrimExpr, optional
        The offset of the first element.
    scope : str
        The storage scope.
    data_alignment : int
        The alignment in bytes (-1: default).
    offset_factor : int
        The factor ``elem_offset`` is a multiple of.
    buffer_type : str
        ``""`` or ``"auto_broadcast"``.
    axis_separators : list of int
        Where the flattened axes split.
    span : Span, optional
        The source location.

    Returns
    -------
    Buffer
        The buffer.

    Examples
    --------
    >>> A = tvm.tir.decl_buffer((4, 8), "float32", name="A")
    >>> A.shape[1], A.dtype
    (8, 'float32')
    """
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    if data is None:
        data = Var(name, PointerType(dtype, scope or "global"))
    if elem_offset is None and offset_factor:
        elem_offset = Var(name + "_elem_offset", "int32")
    return Buffer(data, dtype, shape, strides, elem_offset, name, 64 if data_alignment == -1 else data_alignment,
                  offset_factor or 1, buffer_type, axis_separators, span)


def is_compact_zero_offset(buffer: Buffer) -> bool:
    """Whether ``buffer`` has no strides and a zero element offset.

    Parameters
    ----------
    buffer : Buffer
        The buffer.

    Returns
    -------
    bool
        True for a compact buffer at offset 0.
    """
    return not buffer.strides and isinstance(buffer.elem_offset, IntImm) and buffer.elem_offset.value == 0
