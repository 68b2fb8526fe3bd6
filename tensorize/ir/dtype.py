"""Data types as TVM strings: ``"float32"``, ``"int8"``, ``"float16x8"``, ``"bool"``, ``"handle"``.

A dtype stays a plain string everywhere in the IR; this module parses and builds them.

>>> DataType("float32x4").lanes
4
>>> with_lanes("int8", 16)
'int8x16'
"""
from __future__ import annotations

from ..errors import TVMTypeError, TVMValueError

from functools import lru_cache

_CODES = ("int", "uint", "float", "bfloat", "bool", "handle", "void", "e4m3_float", "e5m2_float")


class DataType(tuple):
    """A parsed dtype: type code (``"int"``, ``"uint"``, ``"float"``, ``"bfloat"``, ``"bool"``,
    ``"handle"``), bit width and vector lanes. ``DataType("int8x4") == ("int", 8, 4)``."""

    __slots__ = ()

    def __new__(cls, text: str) -> "DataType":
        return _parse(text)

    code = property(lambda self: self[0])
    bits = property(lambda self: self[1])
    lanes = property(lambda self: self[2])

    def __str__(self) -> str:
        return _format(self.code, self.bits, self.lanes)

    def __repr__(self) -> str:
        return f"DataType({str(self)!r})"


def _make(t):
    return tuple.__new__(DataType, t)


@lru_cache(maxsize=None)
def _parse(text: str) -> DataType:
    if not isinstance(text, str):
        raise TVMTypeError(f"dtype must be a string such as 'float32', got {text!r}")
    base, lanes = text, 1
    if "x" in text and not text.startswith("e"):
        base, _, lane_text = text.partition("x")
        if not lane_text.isdigit():
            raise TVMValueError(f"unknown dtype {text!r}: lanes after 'x' must be an integer")
        lanes = int(lane_text)
    if base == "bool":
        return _make(("bool", 1, lanes))
    if base == "handle":
        return _make(("handle", 64, lanes))
    if base == "void":
        return _make(("void", 0, 1))
    for code in ("bfloat", "uint", "int", "float"):
        if base.startswith(code) and base[len(code):].isdigit():
            bits = int(base[len(code):])
            if code in ("int", "uint") and bits not in (1, 4, 8, 16, 32, 64):
                break
            if code == "float" and bits not in (8, 16, 32, 64):
                break
            if code == "bfloat" and bits != 16:
                break
            return _make((code, bits, lanes))
    raise TVMValueError(
        f"unknown dtype {text!r}; use a TVM dtype string such as 'float32', 'int8', 'uint8', "
        "'bfloat16', 'bool', 'handle', or a vector type such as 'float32x8'"
    )


def _format(code: str, bits: int, lanes: int) -> str:
    base = code if code in ("bool", "handle", "void") else f"{code}{bits}"
    return base if lanes == 1 else f"{base}x{lanes}"


def parse(dtype: str) -> DataType:
    """Parse a dtype string, raising ``ValueError`` with the accepted spellings if it is unknown.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    DataType
        Its code, bits and lanes.

    Raises
    ------
    ValueError
        For an unknown dtype.
    """
    return _parse(dtype)


@lru_cache(maxsize=None)
def with_lanes(dtype: str, lanes: int) -> str:
    """The same element type with ``lanes`` vector lanes: ``with_lanes("float32", 8) == "float32x8"``.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.
    lanes : int
        The number of lanes.

    Returns
    -------
    str
        The vector dtype.

    Examples
    --------
    >>> from tensorize.ir.dtype import with_lanes
    >>> with_lanes("float32", 8)
    'float32x8'
    """
    t = _parse(dtype)
    return _format(t.code, t.bits, lanes)


def element_of(dtype: str) -> str:
    """The scalar element type of a (possibly vector) dtype.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    str
        The element dtype.
    """
    return with_lanes(dtype, 1)


def lanes_of(dtype: str) -> int:
    """The number of vector lanes of ``dtype`` (1 for a scalar).

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    int
        The lanes.
    """
    return _parse(dtype).lanes


def bits_of(dtype: str) -> int:
    """The width in bits of one element of ``dtype``.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    int
        The bits.
    """
    return _parse(dtype).bits


def is_int(dtype: str) -> bool:
    """True for signed and unsigned integers (not bool).

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    bool
        Whether it is an integer type.
    """
    return _parse(dtype).code in ("int", "uint")


def is_uint(dtype: str) -> bool:
    """True for unsigned integers.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    bool
        Whether it is unsigned.
    """
    return _parse(dtype).code == "uint"


def is_float(dtype: str) -> bool:
    """True for float16/32/64 and bfloat16.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    bool
        Whether it is a floating-point type.
    """
    return _parse(dtype).code in ("float", "bfloat")


def is_bool(dtype: str) -> bool:
    """True for ``bool``.

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    bool
        Whether it is bool.
    """
    return _parse(dtype).code == "bool"


def is_handle(dtype: str) -> bool:
    """True for ``handle`` (a pointer).

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    bool
        Whether it is a handle.
    """
    return _parse(dtype).code == "handle"


def numpy_dtype(dtype: str) -> str:
    """The numpy dtype name holding ``dtype`` (bfloat16 is held as uint16 bits).

    Parameters
    ----------
    dtype : str
        A dtype string, e.g. ``"float32x8"``.

    Returns
    -------
    str
        The numpy dtype name.
    """
    t = _parse(dtype)
    if t.code == "bool":
        return "bool"
    if t.code == "bfloat":
        return "uint16"
    if t.code in ("int", "uint", "float"):
        return f"{t.code}{t.bits}"
    raise TVMValueError(f"dtype {dtype!r} has no numpy equivalent")


def from_numpy(np_dtype) -> str:
    """The TVM dtype string of a numpy dtype.

    Parameters
    ----------
    np_dtype : numpy.dtype or str
        The numpy dtype.

    Returns
    -------
    str
        The dtype string.
    """
    name = str(np_dtype)
    if name == "bool":
        return "bool"
    return str(_parse(name))
