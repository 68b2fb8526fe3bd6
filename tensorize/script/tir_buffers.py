"""Buffer declarations of the ``T`` namespace: ``T.Buffer``, ``T.match_buffer``, ``T.alloc_buffer``,
``T.decl_buffer`` and ``T.allocate`` (re-exported by ``tensorize.script.tir``).

>>> from tensorize.script import tir as T
>>> T.Buffer((4, 8), "float32").shape
(4, 8)
"""
from __future__ import annotations

from .. import errors as _errors

import builtins as _builtins

from ..ir import dtype as _dt
from ..ir.buffer import Buffer as _Buffer
from ..ir.buffer import decl_buffer as _decl_buffer
from ..ir.expr import PrimExpr, Var
from .parser import specs as _specs

__all__ = [
    "BufferFactory", "Buffer", "make_buffer", "match_buffer", "alloc_buffer", "sblock_alloc_buffer", "decl_buffer",
    "allocate",
]


# -- buffers ---------------------------------------------------------------------------------


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, (list, tuple)):
        return tuple(shape)
    return (shape,)


class BufferFactory:
    """``T.Buffer``: ``T.Buffer((128, 128), "float32")`` (and TVM's older ``T.Buffer[(128, 128), "float32"]``)
    declares a buffer; as a parameter annotation the parser names it after the parameter."""

    def __call__(self, shape, dtype: str = "float32", data=None, strides=None, elem_offset=None, scope: str = "global",
                 align: int = 0, offset_factor: int = 0, buffer_type: str = "", axis_separators=None,
                 name: str = "buffer") -> _Buffer:
        return make_buffer(name, shape, dtype, data=data, strides=strides, elem_offset=elem_offset, scope=scope,
                           align=align, offset_factor=offset_factor, buffer_type=buffer_type,
                           axis_separators=axis_separators)

    def __getitem__(self, key) -> _Buffer:
        if not isinstance(key, tuple) or len(key) < 2:
            raise _errors.TVMTypeError("T.Buffer[...] takes a shape and a dtype: T.Buffer[(128, 128), \"float32\"]")
        return self(key[0], key[1], *key[2:])

    def __repr__(self) -> str:
        return "T.Buffer"


Buffer = BufferFactory()


def make_buffer(name: str, shape, dtype: str = "float32", data=None, strides=None, elem_offset=None,
                scope: str = "global", align: int = 0, offset_factor: int = 0, buffer_type: str = "",
                axis_separators=None) -> _Buffer:
    """Declare a buffer the way TVMScript does (string entries in strides/elem_offset become variables).

    Parameters
    ----------
    name : str
        The name.
    shape : tuple of int or PrimExpr
        The shape.
    dtype : str
        The element type.
    data : Var, optional
        The data pointer (a new one when None).
    strides : list of PrimExpr, optional
        The strides (None: compact).
    elem_offset : PrimExpr, optional
        The offset of the first element.
    scope : str
        The storage scope.
    align : int
        The data alignment in bytes (-1 or 0: default).
    offset_factor : int
        The factor ``elem_offset`` is a multiple of.
    buffer_type : str
        ``"default"`` or ``"auto_broadcast"``.
    axis_separators : list of int, optional
        Where the flattened axes split.

    Returns
    -------
    Buffer
        The buffer.
    """
    shape = _shape_tuple(shape)
    for extent in shape:
        if isinstance(extent, _builtins.bool) or not (isinstance(extent, int) or (isinstance(extent, PrimExpr)
                                                                       and _dt.is_int(extent.dtype))):
            raise _errors.TVMTypeError(f"buffer {name!r}: shape entries are integers or integer expressions, "
                                       f"got {extent!r}")
    strides = tuple(Var(s, "int32") if isinstance(s, str) else s for s in (strides or ()))
    if isinstance(elem_offset, str):
        elem_offset = Var(elem_offset, "int32")
    if data is None:
        from ..ir.expr import PointerType

        data = Var(name, PointerType(dtype, scope or "global"))
    return _decl_buffer(shape, dtype, name, data=data, strides=strides, elem_offset=elem_offset, scope=scope,
                        data_alignment=align if align and align > 0 else -1, offset_factor=offset_factor,
                        buffer_type="auto_broadcast" if buffer_type == "auto_broadcast" else "",
                        axis_separators=axis_separators or ())


def match_buffer(param, shape, dtype: str = "float32", data=None, strides=None, elem_offset=None, scope: str = "global",
                 align: int = -1, offset_factor: int = 0, buffer_type: str = "default", axis_separators=None):
    """``A = T.match_buffer(a, (8,), "float32")``: the buffer behind handle parameter ``a`` (or, inside a
    block, a view of the region ``a``).

    Parameters
    ----------
    param : Var or BufferRegion
        A handle parameter, or a region of a buffer (inside a block).
    shape : tuple of int or PrimExpr
        The shape.
    dtype : str
        The element type.
    data : Var, optional
        The data pointer (a new one when None).
    strides : list of PrimExpr, optional
        The strides (None: compact).
    elem_offset : PrimExpr, optional
        The offset of the first element.
    scope : str
        The storage scope.
    align : int
        The data alignment in bytes (-1 or 0: default).
    offset_factor : int
        The factor ``elem_offset`` is a multiple of.
    buffer_type : str
        ``"default"`` or ``"auto_broadcast"``.
    axis_separators : list of int, optional
        Where the flattened axes split.

    Returns
    -------
    Buffer
        The buffer.
    """
    return _specs.MatchBufferSpec(param, shape, dtype, dict(
        data=data, strides=strides, elem_offset=elem_offset, scope=scope, align=align, offset_factor=offset_factor,
        buffer_type=buffer_type, axis_separators=axis_separators))


def alloc_buffer(shape, dtype: str = "float32", data=None, strides=None, elem_offset=None, scope: str = "global",
                 align: int = -1, offset_factor: int = 0, buffer_type: str = "default", axis_separators=None):
    """``Y = T.alloc_buffer((128, 128), "float32")``: a buffer allocated by the enclosing block.

    Parameters
    ----------
    shape : tuple of int or PrimExpr
        The shape.
    dtype : str
        The element type.
    data : Var, optional
        The data pointer (a new one when None).
    strides : list of PrimExpr, optional
        The strides (None: compact).
    elem_offset : PrimExpr, optional
        The offset of the first element.
    scope : str
        The storage scope.
    align : int
        The data alignment in bytes (-1 or 0: default).
    offset_factor : int
        The factor ``elem_offset`` is a multiple of.
    buffer_type : str
        ``"default"`` or ``"auto_broadcast"``.
    axis_separators : list of int, optional
        Where the flattened axes split.

    Returns
    -------
    Buffer
        The buffer.
    """
    return _specs.AllocBufferSpec(make_buffer("buffer", shape, dtype, data=data, strides=strides, elem_offset=elem_offset,
                                              scope=scope, align=align, offset_factor=offset_factor,
                                              axis_separators=axis_separators))


sblock_alloc_buffer = alloc_buffer


def decl_buffer(shape, dtype: str = "float32", data=None, strides=None, elem_offset=None, scope: str = "global",
                align: int = -1, offset_factor: int = 0, buffer_type: str = "default", axis_separators=None):
    """``A = T.decl_buffer(...)``: a buffer for the rest of the scope; allocated when ``data`` is not given.

    Parameters
    ----------
    shape : tuple of int or PrimExpr
        The shape.
    dtype : str
        The element type.
    data : Var, optional
        The data pointer (a new one when None).
    strides : list of PrimExpr, optional
        The strides (None: compact).
    elem_offset : PrimExpr, optional
        The offset of the first element.
    scope : str
        The storage scope.
    align : int
        The data alignment in bytes (-1 or 0: default).
    offset_factor : int
        The factor ``elem_offset`` is a multiple of.
    buffer_type : str
        ``"default"`` or ``"auto_broadcast"``.
    axis_separators : list of int, optional
        Where the flattened axes split.

    Returns
    -------
    Buffer
        The buffer.
    """
    buffer = make_buffer("buffer", shape, dtype, data=data, strides=strides, elem_offset=elem_offset, scope=scope,
                         align=align, offset_factor=offset_factor, axis_separators=axis_separators)
    return _specs.DeclBufferSpec(buffer, allocate=data is None)


def allocate(extents, dtype: str, scope: str = "global", condition=True, annotations=None):
    """``p = T.allocate([n], "float32", "global")``: allocate memory; ``p`` is its pointer variable.

    Parameters
    ----------
    extents : list of PrimExpr
        The extents.
    dtype : str
        The element type.
    scope : str
        The storage scope.
    condition : PrimExpr or bool
        Allocate only when true.
    annotations : dict, optional
        Annotations.

    Returns
    -------
    Spec
        A record the parser turns into a statement (valid inside a prim_func only).
    """
    return _specs.AllocateSpec(_shape_tuple(extents), dtype, scope, condition, annotations)
