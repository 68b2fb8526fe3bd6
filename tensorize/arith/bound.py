"""Constant integer bounds by interval arithmetic (``Analyzer.const_int_bound``).

Bounds are exact Python integers internally; "unbounded" is a huge sentinel that stays huge through
the operations used here and is reported as TVM's ``ConstIntBound.POS_INF`` / ``NEG_INF``.
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as E

INF = 1 << 200  # internal "infinity": stays beyond int64 through +, -, * and // by index-sized numbers
INT64_MAX = (1 << 63) - 1


class ConstIntBound:
    """``[min_value, max_value]`` of an integer expression; ``POS_INF``/``NEG_INF`` mean unbounded.

    >>> ConstIntBound(0, 15)
    ConstIntBound(min_value=0, max_value=15)
    """

    POS_INF = INT64_MAX
    NEG_INF = -INT64_MAX

    __slots__ = ("min_value", "max_value")

    def __init__(self, min_value: int, max_value: int):
        self.min_value = _report(int(min_value))
        self.max_value = _report(int(max_value))

    def is_const(self) -> bool:
        """Whether the bound is a single value.

        Returns
        -------
        bool
            True when ``min_value == max_value``.
        """
        return self.min_value == self.max_value

    def __eq__(self, other):
        return isinstance(other, ConstIntBound) and (self.min_value, self.max_value) == (other.min_value, other.max_value)

    def __hash__(self):
        return hash((self.min_value, self.max_value))

    def __repr__(self):
        return f"ConstIntBound(min_value={self.min_value}, max_value={self.max_value})"


def _report(v: int) -> int:
    if v >= INT64_MAX:
        return INT64_MAX
    if v <= -INT64_MAX:
        return -INT64_MAX
    return v


def internal(v: int) -> int:
    """A reported bound back to the internal form (``POS_INF`` becomes the sentinel).

    Parameters
    ----------
    v : int
        A reported bound.

    Returns
    -------
    int
        The internal value.
    """
    if v >= INT64_MAX:
        return INF
    if v <= -INT64_MAX:
        return -INF
    return v


def is_inf(v: int) -> bool:
    """Whether ``v`` stands for plus or minus infinity.

    Parameters
    ----------
    v : int
        A bound.

    Returns
    -------
    bool
        True for an infinite bound.
    """
    return v >= INT64_MAX or v <= -INT64_MAX


def dtype_range(dtype: str) -> tuple[int, int]:
    """The values an integer dtype can hold (int64 counts as unbounded, as in TVM).

    Parameters
    ----------
    dtype : str
        An integer dtype.

    Returns
    -------
    tuple of (int, int)
        The lowest and highest value.
    """
    t = dt.parse(dtype)
    if t.code == "bool":
        return 0, 1
    if t.code == "int":
        if t.bits >= 64:
            return -INF, INF
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    if t.code == "uint":
        return 0, INF if t.bits >= 64 else (1 << t.bits) - 1
    return -INF, INF


_WRAPPING: dict[str, tuple[int, int] | None] = {}


def wrapping_range(dtype: str) -> tuple[int, int] | None:
    """The range of ``dtype`` if its arithmetic wraps on overflow (narrow signed and all unsigned
    integers), else None: signed 32/64-bit arithmetic is assumed not to overflow, as in TVM (the
    LLVM code marks it ``nsw``).

    Parameters
    ----------
    dtype : str
        An integer dtype.

    Returns
    -------
    tuple of (int, int) or None
        The range, or None.
    """
    hit = _WRAPPING.get(dtype, 0)
    if hit != 0:
        return hit
    t = dt.parse(dtype)
    wraps = t.lanes == 1 and (t.code == "uint" or (t.code == "int" and t.bits < 32))
    _WRAPPING[dtype] = result = dtype_range(dtype) if wraps else None
    return result


def mul_bounds(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """Bounds of ``a * b``.

    Parameters
    ----------
    a : tuple of (int, int)
        The left operand's bounds.
    b : tuple of (int, int)
        The right operand's bounds.

    Returns
    -------
    tuple of (int, int)
        The result's bounds.
    """
    products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return min(products), max(products)


def floordiv_bounds(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """Bounds of ``floordiv(a, b)``; unbounded when ``b`` may be zero.

    Parameters
    ----------
    a : tuple of (int, int)
        The left operand's bounds.
    b : tuple of (int, int)
        The right operand's bounds.

    Returns
    -------
    tuple of (int, int)
        The result's bounds.
    """
    if b[0] > 0 or b[1] < 0:
        cands = [x // y for x in a for y in b]
        if b[1] >= INF or b[0] <= -INF:  # a huge divisor drives the quotient to 0 or -1
            cands += [0, -1] if a[0] < 0 else [0]
        return min(cands), max(cands)
    return -INF, INF


def floormod_bounds(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """Bounds of ``floormod(a, b)``.

    Parameters
    ----------
    a : tuple of (int, int)
        The left operand's bounds.
    b : tuple of (int, int)
        The right operand's bounds.

    Returns
    -------
    tuple of (int, int)
        The result's bounds.
    """
    if b[0] > 0:
        if b[0] == b[1] and b[0] < INF:
            c = b[0]
            if a[0] > -INF and a[1] < INF and a[0] // c == a[1] // c:
                return a[0] % c, a[1] % c
        if 0 <= a[0] and a[1] < b[0]:
            return a
        hi = b[1] - 1
        if a[0] >= 0:
            hi = min(hi, a[1])
        return 0, hi
    if b[1] < 0:
        return b[0] + 1, 0
    return -INF, INF


def truncdiv_bounds(a, b):
    """Bounds of ``truncdiv(a, b)``.

    Parameters
    ----------
    a : tuple of (int, int)
        The left operand's bounds.
    b : tuple of (int, int)
        The right operand's bounds.

    Returns
    -------
    tuple of (int, int)
        The result's bounds.
    """
    if a[0] >= 0 and b[0] > 0:
        return floordiv_bounds(a, b)
    if b[0] > 0 or b[1] < 0:
        def td(x, y):
            q = abs(x) // abs(y)
            return q if (x >= 0) == (y >= 0) else -q
        cands = [td(x, y) for x in a for y in b]
        if a[0] <= 0 <= a[1]:
            cands.append(0)
        return min(cands), max(cands)
    return -INF, INF


def truncmod_bounds(a, b):
    """Bounds of ``truncmod(a, b)``.

    Parameters
    ----------
    a : tuple of (int, int)
        The left operand's bounds.
    b : tuple of (int, int)
        The right operand's bounds.

    Returns
    -------
    tuple of (int, int)
        The result's bounds.
    """
    if a[0] >= 0 and b[0] > 0:
        return floormod_bounds(a, b)
    m = max(abs(b[0]), abs(b[1])) - 1
    lo = 0 if a[0] >= 0 else max(a[0], -m)
    hi = 0 if a[1] <= 0 else min(a[1], m)
    return lo, hi


class BoundComputer:
    """Interval arithmetic over an expression tree. ``var_bound(var)`` gives the bound of a variable."""

    __slots__ = ("var_bound", "cache")

    def __init__(self, var_bound):
        self.var_bound = var_bound
        self.cache: dict[int, tuple] = {}

    def bound(self, e) -> tuple[int, int]:
        """The constant bounds of ``e`` (memoised).

        Parameters
        ----------
        e : PrimExpr
            The expression.

        Returns
        -------
        tuple of (int, int)
            The result's bounds.
        """
        hit = self.cache.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        result = self._compute(e)
        dtype = getattr(e, "dtype", None)
        if dtype is not None and (result[0] < 0 or result[1] > 127):  # a result beyond int8 may have wrapped
            full = wrapping_range(dtype)
            if full is not None and (result[0] < full[0] or result[1] > full[1]):
                result = full  # int8 100 + 100 wraps to -56: the value can be anything in range
        self.cache[id(e)] = (e, result)  # keeping e alive keeps its id unique
        return result

    def _compute(self, e) -> tuple[int, int]:  # noqa: C901 - one dispatch table
        t = type(e)
        if t is E.IntImm:
            return e.value, e.value
        if isinstance(e, E.Var):
            return self.var_bound(e)
        b = self.bound
        if t is E.Add:
            x, y = b(e.a), b(e.b)
            return x[0] + y[0], x[1] + y[1]
        if t is E.Sub:
            x, y = b(e.a), b(e.b)
            return x[0] - y[1], x[1] - y[0]
        if t is E.Mul:
            return mul_bounds(b(e.a), b(e.b))
        if t is E.FloorDiv:
            return floordiv_bounds(b(e.a), b(e.b))
        if t is E.FloorMod:
            return floormod_bounds(b(e.a), b(e.b))
        if t is E.Div:
            return truncdiv_bounds(b(e.a), b(e.b))
        if t is E.Mod:
            return truncmod_bounds(b(e.a), b(e.b))
        if t is E.Min:
            x, y = b(e.a), b(e.b)
            return min(x[0], y[0]), min(x[1], y[1])
        if t is E.Max:
            x, y = b(e.a), b(e.b)
            return max(x[0], y[0]), max(x[1], y[1])
        if t is E.Select:
            x, y = b(e.true_value), b(e.false_value)
            return min(x[0], y[0]), max(x[1], y[1])
        if t is E.Call and e.op.name == "tir.if_then_else":
            x, y = b(e.args[1]), b(e.args[2])
            return min(x[0], y[0]), max(x[1], y[1])
        if t is E.Cast:
            lo, hi = dtype_range(e.dtype)
            if dt.is_int(e.value.dtype) or dt.is_bool(e.value.dtype):
                x = b(e.value)
                if lo <= x[0] and x[1] <= hi:
                    return x
            return lo, hi
        if t is E.Let:
            return b(e.body)
        if isinstance(e, (E.CmpOpExpr, E.And, E.Or, E.Not)):
            return 0, 1
        if hasattr(e, "dtype") and (dt.is_int(e.dtype) or dt.is_bool(e.dtype)) and dt.lanes_of(e.dtype) == 1:
            return dtype_range(e.dtype)
        return -INF, INF
