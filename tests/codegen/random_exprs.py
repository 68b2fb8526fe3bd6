"""Random well-defined expression trees for differential tests (LLVM build vs the IR interpreter).

Each generated node carries the interval its value lies in and whether it is *exact*: computed only
by IEEE-exact operations (``+ - * /``, ``sqrt``, ``fabs``, casts, ``min``/``max``, selects), so two
correct implementations give bit-identical results. Transcendental functions (``exp``, ``tanh``, ...)
are correct only to a few ulps; their results are marked inexact and never feed a discontinuous
operation (``floor``, a comparison, a cast to an integer) where one ulp could flip the outcome.

The generator avoids undefined behaviour: signed 32/64-bit arithmetic that could overflow (the LLVM
code marks it ``nsw``), division by zero or ``MIN / -1``, float-to-integer casts out of range, and
float overflow.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import strategies as st

from tensorize.ir import dtype as dt
from tensorize.ir import expr as E
from tensorize.ir import op

INT_DTYPES = ["int8", "uint8", "int16", "int32", "int64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
DTYPES = INT_DTYPES + FLOAT_DTYPES

# The values each input buffer is filled with (the generator relies on these ranges).
INPUT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-1000, 1000), "int32": (-1000, 1000),
                "int64": (-10**6, 10**6), "float16": (-4.0, 4.0), "float32": (-4.0, 4.0), "float64": (-4.0, 4.0)}
_FLOAT_LIMIT = {"float16": 6e4, "float32": 1e30, "float64": 1e200}
_DIVISORS = [-7, -3, -2, 2, 3, 5, 8, 16]


@dataclass(frozen=True)
class Gen:
    expr: E.PrimExpr
    lo: float
    hi: float
    exact: bool = True


def _int_range(dtype):
    bits = dt.parse(dtype).bits
    return (0, 2**bits - 1) if dtype.startswith("uint") else (-(2**(bits - 1)), 2**(bits - 1) - 1)


def _wraps(dtype):
    """Narrow integers wrap silently; 32/64-bit signed overflow is undefined and must not happen."""
    return dt.parse(dtype).bits < 32 or dtype.startswith("uint")


def _fits(dtype, lo, hi):
    if dtype in FLOAT_DTYPES:
        return max(abs(lo), abs(hi)) < _FLOAT_LIMIT[dtype]
    if _wraps(dtype):
        return True
    rlo, rhi = _int_range(dtype)
    return rlo < lo and hi < rhi


def _clip(dtype, lo, hi):
    """The interval of a result that may wrap in a narrow integer dtype."""
    if dtype in INT_DTYPES:
        rlo, rhi = _int_range(dtype)
        if lo < rlo or hi > rhi:
            return rlo, rhi
    return lo, hi


def _corners(f, a: Gen, b: Gen):
    vals = [f(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return min(vals), max(vals)


class ExprGen:
    """Draws expressions over ``loads[dtype]`` (a function of the loop index giving a BufferLoad)."""

    def __init__(self, draw, loads, index):
        self.draw, self.loads, self.index = draw, loads, index

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def leaf(self, dtype) -> Gen:
        kind = self.pick(["load", "load", "const", "index"])
        if kind == "const":
            if dtype in FLOAT_DTYPES:
                v = self.draw(st.sampled_from([-2.5, -1.0, -0.5, 0.0, 0.25, 1.0, 3.0]))
            else:
                lo, hi = _int_range(dtype)
                v = self.draw(st.integers(max(lo, -100), min(hi, 100)))
            return Gen(E.make_const(dtype, v), v, v)
        if kind == "index":
            return Gen(E.cast(dtype, self.index) if dtype != "int32" else self.index, 0, 15)
        lo, hi = INPUT_RANGES[dtype]
        return Gen(self.loads[dtype], lo, hi)

    def gen(self, dtype, depth) -> Gen:
        if depth <= 0:
            return self.leaf(dtype)
        floating = dtype in FLOAT_DTYPES
        kinds = ["leaf", "arith", "arith", "minmax", "select", "cast"]
        kinds += ["math", "fdiv"] if floating else ["div", "div"]
        for _ in range(4):  # a kind may not fit (overflow risk); try another
            g = getattr(self, "_" + self.pick(kinds))(dtype, depth - 1)
            if g is not None and _fits(dtype, g.lo, g.hi):
                return g
        return self.leaf(dtype)

    def _leaf(self, dtype, depth):
        return self.leaf(dtype)

    def _arith(self, dtype, depth):
        a, b = self.gen(dtype, depth), self.gen(dtype, depth)
        name = self.pick(["add", "sub", "mul"])
        f = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[name]
        lo, hi = _clip(dtype, *_corners(f, a, b))
        return Gen(getattr(E, name)(a.expr, b.expr), lo, hi, a.exact and b.exact)

    def _minmax(self, dtype, depth):
        a, b = self.gen(dtype, depth), self.gen(dtype, depth)
        if self.pick([True, False]):
            return Gen(op.min(a.expr, b.expr), min(a.lo, b.lo), min(a.hi, b.hi), a.exact and b.exact)
        return Gen(op.max(a.expr, b.expr), max(a.lo, b.lo), max(a.hi, b.hi), a.exact and b.exact)

    def cond(self, depth):
        """A boolean from comparing two exact values of a random dtype (maybe combined)."""
        cdt = self.pick(DTYPES)
        a, b = self.gen(cdt, depth), self.gen(cdt, depth)
        if not (a.exact and b.exact):
            a, b = self.leaf(cdt), self.leaf(cdt)
        c = self.pick([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE])(a.expr, b.expr)
        combine = self.pick(["none", "none", "and", "or", "not"])
        if combine == "not":
            return E.logical_not(c)
        if combine != "none":
            other = E.LT(self.index, E.make_const("int32", self.draw(st.integers(0, 16))))
            return (E.logical_and if combine == "and" else E.logical_or)(c, other)
        return c

    def _select(self, dtype, depth):
        c = self.cond(depth)
        a, b = self.gen(dtype, depth), self.gen(dtype, depth)
        build = self.pick([E.Select, op.if_then_else])
        return Gen(build(c, a.expr, b.expr), min(a.lo, b.lo), max(a.hi, b.hi), a.exact and b.exact)

    def _cast(self, dtype, depth):
        src = self.pick([d for d in DTYPES if d != dtype])
        a = self.gen(src, depth)
        if dtype in INT_DTYPES:
            rlo, rhi = _int_range(dtype)
            if src in FLOAT_DTYPES:
                if not a.exact or not (rlo - 1 < a.lo and a.hi < rhi + 1):
                    return None  # out-of-range float to int is undefined in LLVM
                return Gen(E.cast(dtype, a.expr), math.trunc(a.lo), math.trunc(a.hi))
            lo, hi = _clip(dtype, a.lo, a.hi)
            return Gen(E.cast(dtype, a.expr), lo, hi)
        if not _fits(dtype, a.lo, a.hi):
            return None
        return Gen(E.cast(dtype, a.expr), a.lo, a.hi, a.exact)

    def _div(self, dtype, depth):
        a = self.gen(dtype, depth)
        name = self.pick(["floordiv", "floormod", "truncdiv", "truncmod"])
        if self.pick([True, False]):
            d = self.pick([v for v in _DIVISORS if not (dtype.startswith("uint") and v < 0)])
            b = Gen(E.make_const(dtype, d), d, d)
        else:  # a divisor computed at run time, bounded away from 0 and -1 (MIN / -1 overflows)
            b = self.gen(dtype, depth)
            if dtype.startswith("uint"):
                b = Gen(op.max(b.expr, E.make_const(dtype, 2)), max(b.lo, 2), max(b.hi, 2))
            elif self.pick([True, False]):
                b = Gen(op.max(b.expr, E.make_const(dtype, 2)), max(b.lo, 2), max(b.hi, 2))
            else:
                b = Gen(op.min(b.expr, E.make_const(dtype, -2)), min(b.lo, -2), min(b.hi, -2))
        m = max(abs(a.lo), abs(a.hi))
        if name.endswith("div"):
            return Gen(getattr(E, name)(a.expr, b.expr), -m, m)
        dm = max(abs(b.lo), abs(b.hi))
        return Gen(getattr(E, name)(a.expr, b.expr), -min(m, dm), min(m, dm))

    def _fdiv(self, dtype, depth):
        a, b = self.gen(dtype, depth), self.gen(dtype, depth)
        denom = E.add(op.fabs(b.expr), E.make_const(dtype, 1.0))  # in [1, ...): no division by zero
        m = max(abs(a.lo), abs(a.hi))
        return Gen(E.div(a.expr, denom), -m, m, a.exact and b.exact)

    def _math(self, dtype, depth):
        a = self.gen(dtype, depth)
        m = max(abs(a.lo), abs(a.hi))
        name = self.pick(["exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "fabs", "floor", "ceil",
                          "round", "trunc"])
        if name in ("floor", "ceil", "round", "trunc"):
            if not a.exact:
                return None
            return Gen(getattr(op, name)(a.expr), math.floor(a.lo), math.ceil(a.hi))
        if name == "fabs":
            return Gen(op.fabs(a.expr), 0, m, a.exact)
        if name == "sqrt":
            return Gen(op.sqrt(op.fabs(a.expr)), 0, math.sqrt(m) + 1, a.exact)
        if name == "log":
            return Gen(op.log(E.add(op.fabs(a.expr), E.make_const(dtype, 1.0))), 0, math.log(m + 1) + 1, False)
        if name == "exp":
            if a.hi > 8:
                return None
            return Gen(op.exp(a.expr), 0, math.exp(a.hi) + 1, False)
        if name in ("sin", "cos") and m > 100:
            return None
        lo, hi = (0, 1) if name == "sigmoid" else (-1, 1)
        return Gen(getattr(op, name)(a.expr), lo, hi, False)


@st.composite
def expressions(draw, loads, index, dtype, max_depth=4):
    """A ``Gen`` of ``dtype`` over the given loads and loop index."""
    depth = draw(st.integers(1, max_depth))
    return ExprGen(draw, loads, index).gen(dtype, depth)
