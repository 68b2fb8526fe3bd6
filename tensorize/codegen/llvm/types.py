"""TVM dtypes as LLVM types.

Registers hold ``bool`` as ``i1``; memory holds it as ``i8`` (numpy's layout). ``bfloat16`` is an
``i16`` bit pattern everywhere (llvmlite has no ``bfloat`` type): arithmetic on it goes through
float32 (see ``expr.py``).
"""
from __future__ import annotations

from ...errors import TVMNotImplementedError

from functools import lru_cache

import llvmlite.ir as ir

from ...ir import dtype as dt

I1, I8, I16, I32, I64 = (ir.IntType(b) for b in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

_FLOATS = {16: F16, 32: F32, 64: F64}


@lru_cache(maxsize=None)
def element_type(dtype: str, memory: bool = False) -> ir.Type:
    """The LLVM scalar type of ``dtype``'s element (``memory``: as stored in a buffer).

    Parameters
    ----------
    dtype : str
        The dtype.
    memory : bool
        As stored in a buffer (bool as i8, bfloat16 as i16).

    Returns
    -------
    ir.Type
        The type.
    """
    t = dt.parse(dtype)
    if t.code == "bool":
        return I8 if memory else I1
    if t.code in ("int", "uint"):
        return ir.IntType(t.bits)
    if t.code == "bfloat":
        return I16
    if t.code == "float":
        if t.bits not in _FLOATS:
            raise TVMNotImplementedError(f"no LLVM codegen for {dtype}; use float16, float32 or float64")
        return _FLOATS[t.bits]
    if t.code == "handle":
        return PTR
    raise TVMNotImplementedError(f"no LLVM type for dtype {dtype}")


@lru_cache(maxsize=None)
def llvm_type(dtype: str, memory: bool = False) -> ir.Type:
    """The LLVM type of ``dtype``: a vector type for ``lanes > 1``.

    Parameters
    ----------
    dtype : str
        The dtype.
    memory : bool
        As stored in a buffer (bool as i8, bfloat16 as i16).

    Returns
    -------
    ir.Type
        The type.
    """
    lanes = dt.lanes_of(dtype)
    element = element_type(dtype, memory)
    return element if lanes == 1 else ir.VectorType(element, lanes)


def byte_size(dtype: str) -> int:
    """Bytes of one element as stored in memory.

    Parameters
    ----------
    dtype : str
        The dtype.

    Returns
    -------
    int
        The size.
    """
    t = dt.parse(dtype)
    return max(t.bits, 8) // 8 * t.lanes


def is_signed(dtype: str) -> bool:
    """Whether ``dtype`` is a signed integer.

    Parameters
    ----------
    dtype : str
        The dtype.

    Returns
    -------
    bool
        The answer.
    """
    return dt.parse(dtype).code == "int"


def is_floating(dtype: str) -> bool:
    """True for dtypes held in LLVM floating-point types (float16/32/64, not bfloat16).

    Parameters
    ----------
    dtype : str
        The dtype.

    Returns
    -------
    bool
        The answer.
    """
    return dt.parse(dtype).code == "float"


def constant(dtype: str, value) -> ir.Constant:
    """An LLVM constant of ``dtype`` (vector dtypes splat ``value``).

    Parameters
    ----------
    dtype : str
        The dtype.
    value : int, float or bool
        The value.

    Returns
    -------
    ir.Constant
        The constant.
    """
    t = dt.parse(dtype)
    if t.code == "bfloat":
        scalar = ir.Constant(I16, _bf16_bits(float(value)))
    elif t.code == "float":
        scalar = ir.Constant(element_type(dtype), float(value))
    elif t.code == "handle":
        scalar = ir.Constant(PTR, None)
    else:
        scalar = ir.Constant(element_type(dtype), int(value))
    return scalar if t.lanes == 1 else ir.Constant(llvm_type(dtype), [scalar] * t.lanes)


def _bf16_bits(value: float) -> int:
    import numpy as np

    bits = int(np.array(value, dtype=np.float32).view(np.uint32))
    if value != value:  # NaN
        return 0x7FC0
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def type_suffix(t: ir.Type) -> str:
    """LLVM's name mangling of an overloaded intrinsic's type (``<8 x float>`` -> ``v8f32``).

    Parameters
    ----------
    t : ir.Type
        The type.

    Returns
    -------
    str
        The suffix.
    """
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{type_suffix(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    if isinstance(t, ir.PointerType):
        return "p0"
    return {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}[type(t)]
