"""The types of IR values: ``ScalarType`` (TVM's ``PrimType``) and ``PointerType`` (a buffer's data pointer)."""
from __future__ import annotations

__all__ = ["ScalarType", "PointerType", "BufferType"]


class ScalarType:
    """The type of a scalar expression (TVM's ``PrimType``): just its ``dtype``."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: str):
        self.dtype = dtype

    def __eq__(self, other):
        return isinstance(other, ScalarType) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("ScalarType", self.dtype))

    def __repr__(self):
        return f"PrimType({self.dtype!r})"


class PointerType:
    """The type of a buffer's data pointer: element dtype and storage scope (``"global"``, ``"shared"``, ...)."""

    __slots__ = ("element_dtype", "storage_scope")

    def __init__(self, element_dtype: str, storage_scope: str = "global"):
        self.element_dtype, self.storage_scope = element_dtype, storage_scope or "global"

    def __eq__(self, other):
        return isinstance(other, PointerType) and (self.element_dtype, self.storage_scope) == (other.element_dtype, other.storage_scope)

    def __hash__(self):
        return hash((self.element_dtype, self.storage_scope))

    def __repr__(self):
        return f"PointerType({self.element_dtype!r}, {self.storage_scope!r})"


class BufferType:
    """The type of a buffer (TVM's ``buffer.ty``): its element ``dtype`` and ``shape``."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype: str, shape):
        self.dtype, self.shape = dtype, tuple(shape)

    def __eq__(self, other):
        return isinstance(other, BufferType) and other.dtype == self.dtype and len(other.shape) == len(self.shape) \
            and all(a is b or (hasattr(a, "value") and hasattr(b, "value") and a.value == b.value)
                    for a, b in zip(self.shape, other.shape))

    def __hash__(self):
        return hash(("BufferType", self.dtype, len(self.shape)))

    def __repr__(self):
        return f"BufferType({self.dtype!r}, {list(self.shape)!r})"
