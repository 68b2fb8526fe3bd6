"""float32 ``exp`` and ``erf`` as polynomial LLVM code, for scalars and vectors alike.

LLVM has no vector ``exp`` or ``erf`` without a vector math library: ``llvm.exp.v16f32`` becomes 16
calls of libm's ``expf`` and ``erf`` a libm call per lane, and a loop that calls them is not
vectorized at all. A softmax or a GELU epilogue then costs more than the GEMM it follows (BERT-base's
GELU dense layer ran at 40 GFLOPS against 97 for the same GEMM without it). These expansions are
plain arithmetic that LLVM vectorizes like any other:

- ``exp``: Cody-Waite range reduction ``x = n ln2 + r`` (``|r| <= ln2 / 2``), a degree-5 minimax
  polynomial for ``exp(r)`` (the Cephes ``expf`` coefficients) and the power of two built from the
  exponent bits, in two factors so that ``n = 128`` and ``n = -126`` stay representable. Relative error
  below 2 ulp for ``|x| <= 87``; ``x > 88.72`` gives ``inf``, ``x < -87.34`` gives 0 (no subnormal
  results), NaN stays NaN.
- ``erf``: the odd rational approximation ``x P(x^2) / Q(x^2)`` on ``[-4, 4]`` (degree 13 over 8, the
  coefficients Eigen and TVM's ``fast_erf`` use); ``|erf(x)|`` rounds to 1 beyond 4. Absolute error
  below ``1e-6``.

float64 keeps the libm functions.
"""
from __future__ import annotations

import llvmlite.ir as ir

from .types import F32, I32, constant

__all__ = ["fast_math", "FAST_MATH_F32"]

_LOG2E = 1.44269504088896341
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
             5.0000001201e-1)
_EXP_HI, _EXP_LO = 88.72283935546875, -87.33654022216797

_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)


def _int_type(value_type):
    return ir.VectorType(I32, value_type.count) if isinstance(value_type, ir.VectorType) else I32


def _horner(b, x, coefficients, dtype):
    acc = constant(dtype, coefficients[0])
    for c in coefficients[1:]:
        acc = b.fadd(b.fmul(acc, x), constant(dtype, c))
    return acc


def _clamp(b, x, lo, hi, dtype):
    """``min(max(x, lo), hi)`` that keeps a NaN (ordered compares are false for it)."""
    x = b.select(b.fcmp_ordered("<", x, constant(dtype, lo)), constant(dtype, lo), x)
    return b.select(b.fcmp_ordered(">", x, constant(dtype, hi)), constant(dtype, hi), x)


def _pow2(b, n, int_type, value_type):
    """``2 ** n`` for an integer ``n`` in [-126, 127], from the exponent bits."""
    bits = b.shl(b.add(n, _splat(int_type, 127)), _splat(int_type, 23))
    return b.bitcast(bits, value_type)


def _splat(int_type, value: int):
    if isinstance(int_type, ir.VectorType):
        return ir.Constant(int_type, [value] * int_type.count)
    return ir.Constant(int_type, value)


def _exp(cg, x, dtype):
    b = cg.builder
    value_type = x.type
    int_type = _int_type(value_type)
    xc = _clamp(b, x, _EXP_LO, _EXP_HI, dtype)
    floor = cg.call_overloaded("llvm.floor", value_type, [value_type],
                               [b.fadd(b.fmul(xc, constant(dtype, _LOG2E)), constant(dtype, 0.5))],
                               arg_types_for_name=(value_type,))
    r = b.fsub(b.fsub(xc, b.fmul(floor, constant(dtype, _LN2_HI))), b.fmul(floor, constant(dtype, _LN2_LO)))
    poly = _horner(b, r, _EXP_POLY, dtype)
    y = b.fadd(b.fadd(b.fmul(b.fmul(poly, r), r), r), constant(dtype, 1.0))
    n = b.fptosi(floor, int_type)                      # in [-126, 128]
    half = b.ashr(n, _splat(int_type, 1))
    y = b.fmul(b.fmul(y, _pow2(b, half, int_type, value_type)), _pow2(b, b.sub(n, half), int_type, value_type))
    y = b.select(b.fcmp_ordered(">", x, constant(dtype, _EXP_HI)), constant(dtype, float("inf")), y)
    return b.select(b.fcmp_ordered("<", x, constant(dtype, _EXP_LO)), constant(dtype, 0.0), y)


def _erf(cg, x, dtype):
    b = cg.builder
    xc = _clamp(b, x, -4.0, 4.0, dtype)
    x2 = b.fmul(xc, xc)
    p = b.fmul(_horner(b, x2, _ERF_P, dtype), xc)
    q = _horner(b, x2, _ERF_Q, dtype)
    return b.fdiv(p, q)


FAST_MATH_F32 = {"exp": _exp, "erf": _erf}


def fast_math(cg, short: str, args: list, dtype: str):
    """The polynomial expansion of ``tir.<short>`` for float32 ``args`` (scalar or vector), or None.

    Parameters
    ----------
    cg : ExprCodegen
        The expression code generator.
    short : str
        The op name without ``tir.``.
    args : list of ir.Value
        The LLVM arguments.
    dtype : str
        Their dtype (``float32`` with any lane count).

    Returns
    -------
    ir.Value or None
        The result, or None where no expansion applies (another type or function).

    Examples
    --------
    >>> import numpy as np, tensorize as tvm
    >>> from tensorize import te
    >>> A = te.placeholder((64,), name="A")
    >>> B = te.compute((64,), lambda i: te.exp(A[i]), name="B")
    >>> f = tvm.build(te.create_prim_func([A, B]), target="llvm")
    >>> a = np.linspace(-20, 20, 64).astype("float32"); b = tvm.nd.array(np.zeros(64, "float32"))
    >>> f(tvm.nd.array(a), b)
    >>> bool(np.allclose(b.numpy(), np.exp(a.astype("float64")), rtol=3e-7, atol=0))
    True
    """
    value_type = args[0].type
    scalar = value_type.element if isinstance(value_type, ir.VectorType) else value_type
    expand = FAST_MATH_F32.get(short)
    if expand is None or scalar != F32 or len(args) != 1:
        return None
    return expand(cg, args[0], dtype)
