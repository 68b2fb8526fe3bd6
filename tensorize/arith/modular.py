"""Modular sets: what is known of an integer expression's residues, ``expr = coeff * k + base``.

TVM's ``arith.ModularSet``, computed bottom-up over the expression: variables are ``1 * k + 0``
(anything), constants ``0 * k + v`` (exactly ``v``), sums and products combine by gcd. Vector lowering
uses it to prove that the lanes of ``Ramp(base, 1, 8)`` stay inside one block of ``c`` (so
``ramp // c`` is a broadcast and ``ramp % c`` a ramp), and code generators to prove alignment.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from ..ir import expr as E

__all__ = ["ModularSet", "modular_set", "ramp_in_one_block"]


@dataclass(frozen=True)
class ModularSet:
    """``{coeff * k + base | k integer}``; ``coeff == 0`` means exactly ``base``.

    Examples
    --------
    >>> from tensorize import tir
    >>> i = tir.Var("i", "int32")
    >>> modular_set(i * 8 + 4)
    ModularSet(coeff=8, base=4)
    """

    coeff: int
    base: int

    @staticmethod
    def make(coeff: int, base: int) -> "ModularSet":
        """The set ``coeff * k + base`` in normal form (``coeff >= 0``, ``0 <= base < coeff``).

        Parameters
        ----------
        coeff : int
            The step (0: a single value).
        base : int
            A member.

        Returns
        -------
        ModularSet
            The normalised set.
        """
        coeff = abs(coeff)
        return ModularSet(coeff, base % coeff if coeff else base)

    def divisible_by(self, value: int) -> bool:
        """Whether every member is a multiple of ``value``.

        Parameters
        ----------
        value : int
            The divisor.

        Returns
        -------
        bool
            True when ``value`` divides every member.

        Examples
        --------
        >>> ModularSet(16, 8).divisible_by(8), ModularSet(16, 4).divisible_by(8)
        (True, False)
        """
        return (self.coeff % value == 0) and (self.base % value == 0)


_ANY = ModularSet(1, 0)


def modular_set(expr, env: dict | None = None) -> ModularSet:
    """The modular set of the integer expression ``expr`` (``ModularSet(1, 0)`` when nothing is known).

    Parameters
    ----------
    expr : PrimExpr
        A scalar integer expression.
    env : dict, optional
        Values of let-bound variables (Var -> PrimExpr); other variables are unknown integers.

    Returns
    -------
    ModularSet
        ``coeff`` and ``base`` with ``expr == coeff * k + base`` for some integer ``k``.

    Examples
    --------
    >>> from tensorize import tir
    >>> x, y = tir.Var("x", "int32"), tir.Var("y", "int32")
    >>> modular_set(x * 256 + y * 64 + 16).coeff
    64
    """
    if isinstance(expr, E.IntImm):
        return ModularSet(0, int(expr.value))
    if isinstance(expr, E.Var):
        return modular_set(env[expr], env) if env and expr in env else _ANY
    if isinstance(expr, (E.Add, E.Sub)):
        a, b = modular_set(expr.a, env), modular_set(expr.b, env)
        base = a.base + b.base if isinstance(expr, E.Add) else a.base - b.base
        return ModularSet.make(gcd(a.coeff, b.coeff), base)
    if isinstance(expr, E.Mul):
        a, b = modular_set(expr.a, env), modular_set(expr.b, env)
        return ModularSet.make(gcd(gcd(a.coeff * b.coeff, a.coeff * b.base), b.coeff * a.base), a.base * b.base)
    if isinstance(expr, E.Cast) and not isinstance(expr.value, E.FloatImm):
        return modular_set(expr.value, env)
    if isinstance(expr, (E.FloorDiv, E.Div)):
        a, b = modular_set(expr.a, env), modular_set(expr.b, env)
        if b.coeff == 0 and b.base > 0 and a.coeff % b.base == 0 and a.base % b.base == 0:
            return ModularSet.make(a.coeff // b.base, a.base // b.base)
        return _ANY
    if isinstance(expr, E.FloorMod):
        a, b = modular_set(expr.a, env), modular_set(expr.b, env)
        if b.coeff == 0 and b.base > 0:  # x % c keeps x's residue modulo gcd(coeff, c)
            return ModularSet.make(gcd(a.coeff, b.base), a.base)
        return _ANY
    return _ANY


def ramp_in_one_block(base, stride: int, lanes: int, block: int) -> bool:
    """Whether ``base + stride * i`` for ``i < lanes`` lies in one aligned block of ``block`` integers.

    Parameters
    ----------
    base : PrimExpr
        The first lane.
    stride : int
        The (non-negative) step between lanes.
    lanes : int
        The number of lanes.
    block : int
        The block size (the divisor of ``floordiv``/``floormod``), positive.

    Returns
    -------
    bool
        True when ``(base + stride * i) // block`` is the same for every lane.

    Examples
    --------
    >>> from tensorize import tir
    >>> x = tir.Var("x", "int32")
    >>> ramp_in_one_block(x * 8, 1, 8, 16), ramp_in_one_block(x * 4, 1, 8, 16)
    (True, False)
    """
    if stride < 0 or block <= 0:
        return False
    span = stride * (lanes - 1)
    ms = modular_set(base)
    if ms.coeff % block == 0:  # coeff 0 (a constant) too: the residue modulo block is known exactly
        return ms.base % block + span < block
    if block % ms.coeff == 0:
        return ms.base % ms.coeff + span < ms.coeff
    return False
