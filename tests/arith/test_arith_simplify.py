"""Known rewrite cases of Analyzer.simplify, can_prove and const_int_bound."""
import pytest

import tensorize as tvm
from tensorize.ir import op
from tensorize.ir.expr import EQ, LT, Range, SizeVar, Var, floordiv, floormod, truncdiv, truncmod
from tests.arith.exprtext import text


@pytest.fixture
def ana():
    return tvm.arith.Analyzer()


def test_identities(ana):
    i = Var("i")
    assert ana.simplify(i * 1 + 0).same_as(i)
    assert ana.simplify((i + 1) - 1).same_as(i)
    assert text(ana.simplify(i + i * 3 - 2 * i)) == "(i * 2)"
    assert text(ana.simplify(3 - i + 2 * i - 3)) == "i"
    assert text(ana.simplify((i + 2) * 3 - i)) == "((i * 2) + 6)"


def test_split_fuse_patterns(ana):
    i, j = Var("i"), Var("j")
    ana.bind(j, Range(0, 4))
    assert ana.simplify(floordiv(i * 4 + j, 4)).same_as(i)
    assert ana.simplify(floormod(i * 4 + j, 4)).same_as(j)
    x, y = Var("x"), Var("y")
    # Holds with no knowledge of y at all.
    assert text(ana.simplify(floordiv(x * 8 + y, 8) * 8 + floormod(x * 8 + y, 8))) == "((x * 8) + y)"
    k = Var("k")
    ana.bind(k, Range(0, 4))
    assert text(ana.simplify(floordiv(i * 16 + j * 4 + k, 4))) == "((i * 4) + j)"
    assert text(ana.simplify(floormod(i * 16 + j * 4 + k, 16))) == "((j * 4) + k)"


def test_recompose_split_of_fused_index(ana):
    x, v, y = Var("x"), Var("v"), Var("y")
    # Exact for every integer x (no bounds needed): floordiv(x, a*b)*b + floormod(floordiv(x, a), b).
    assert text(ana.simplify(floordiv(x, 12) * 3 + floormod(floordiv(x, 4), 3))) == "floordiv(x, 4)"
    # The floormod's constant is reduced ((x - 1) % 2 reads (x + 1) % 2): the pair still collapses.
    assert text(ana.simplify(floordiv(x - 1, 2) * 2 + floormod(x - 1, 2))) == "(x - 1)"
    # The multi-level form collapses all the way to the fused variable.
    assert ana.simplify(floordiv(v, 18) * 18 + floormod(floordiv(v, 6), 3) * 6 + floormod(v, 6)).same_as(v)
    # Scaled, offset and mixed with other terms.
    e = floordiv(v, 18) * 36 + floormod(floordiv(v, 6), 3) * 12 + floormod(v, 6) * 2 + y + 1
    assert text(ana.simplify(e)) == "(((v * 2) + y) + 1)"
    # Over a compound dividend.
    assert text(ana.simplify(floordiv(x + y, 18) * 3 + floormod(floordiv(x + y, 6), 3))) == "floordiv((x + y), 6)"
    # Coefficients that do not match are left alone.
    assert text(ana.simplify(floordiv(x, 12) * 2 + floormod(floordiv(x, 4), 3))) == \
        "((floordiv(x, 12) * 2) + floormod(floordiv(x, 4), 3))"
    # A partial recomposition keeps what is left.
    assert text(ana.simplify(floordiv(v, 18) * 18 + floormod(floordiv(v, 6), 3) * 6)) == "(floordiv(v, 6) * 6)"


def test_nested_division(ana):
    x = Var("x")
    ana.bind(x, Range(0, 1024))
    assert text(ana.simplify(floordiv(floordiv(x, 4), 2))) == "floordiv(x, 8)"
    assert text(ana.simplify(floormod(floormod(x, 16), 4))) == "floormod(x, 4)"
    # Truncated division of a non-negative value is floor division.
    assert text(ana.simplify(truncdiv(x, 4))) == "floordiv(x, 4)"
    assert text(ana.simplify(truncmod(x, 4))) == "floormod(x, 4)"
    assert text(ana.simplify(floormod(x * 4 + 8, 16))) == "(floormod((x + 2), 4) * 4)"


def test_min_max_select(ana):
    x, y = Var("x"), Var("y")
    ana.bind(x, Range(0, 10))
    assert ana.simplify(op.min(x, x + 1)).same_as(x)
    assert text(ana.simplify(op.max(x, 20))) == "20"
    assert text(ana.simplify(op.min(x, 9))) == "x"
    assert text(ana.simplify(op.min(x, y))) == "min(x, y)"
    assert ana.simplify(op.if_then_else(x < 10, y, x)).same_as(y)
    assert ana.simplify(tvm.tir.Select(x >= 10, y, x)).same_as(x)


def test_conditions(ana):
    i, n = Var("i"), Var("n")
    ana.bind(i, Range(0, 16))
    assert ana.can_prove(i < 16)
    assert not ana.can_prove(i < 15)
    assert ana.can_prove(i * 4 + 3 < 64)
    assert text(ana.simplify(tvm.tir.all(i < 16, n > 0))) == "(n > 0)"
    assert text(ana.simplify(tvm.tir.any(i < 16, n > 0))) == "True"
    assert text(ana.simplify(tvm.tir.Not(i >= 16))) == "True"
    assert ana.can_prove(EQ(floormod(i * 2, 2), 0))
    assert ana.can_prove(i * 2 != 7)  # parity
    assert not ana.can_prove(n < 10)
    assert not ana.can_prove(LT(n, n))
    assert ana.can_prove_equal(floordiv(i, 4) * 4 + floormod(i, 4), i)


def test_constraint_scope(ana):
    i, n = Var("i"), Var("n")
    with ana.constraint_scope(i < 100):
        assert ana.can_prove(i < 128)
        assert not ana.can_prove(i < 99)
    assert not ana.can_prove(i < 128)
    with ana.constraint_scope(tvm.tir.all(i < n, i >= 0)):
        assert ana.can_prove(i < n)
        assert ana.can_prove(i <= n - 1)
        assert ana.can_prove(i + 1 <= n)
        assert ana.can_prove(i >= 0)
    assert not ana.can_prove(i < n)


def test_const_int_bound(ana):
    x, y = Var("x"), Var("y")
    ana.bind(x, Range(0, 8))
    ana.bind(y, Range(-4, 4))
    b = ana.const_int_bound(x * 4 + y)
    assert (b.min_value, b.max_value) == (-4, 31)
    b = ana.const_int_bound(floordiv(x * 4 + 3, 8))
    assert (b.min_value, b.max_value) == (0, 3)
    b = ana.const_int_bound(floormod(y, 3))
    assert (b.min_value, b.max_value) == (0, 2)
    b = ana.const_int_bound(op.max(x, y) - op.min(x, 2))
    assert (b.min_value, b.max_value) == (-2, 7)
    assert ana.const_int_bound(x - x).max_value == 0
    z = Var("z")
    assert ana.const_int_bound(z).max_value == 2**31 - 1
    assert ana.const_int_bound(SizeVar("n")).min_value == 0
    assert ana.const_int_bound(Var("w", "int64")).max_value == tvm.arith.ConstIntBound.POS_INF
    ana.update(z, tvm.arith.ConstIntBound(1, 5))
    assert ana.const_int_bound(z * z).max_value == 25


def test_bind_expression(ana):
    x, y = Var("x"), Var("y")
    ana.bind(x, y * 2 + 1)
    assert text(ana.simplify(x - y)) == "(y + 1)"


def test_errors(ana):
    with pytest.raises(TypeError, match="ConstIntBound"):
        ana.update(Var("x"), (0, 1))
    with pytest.raises(ZeroDivisionError):
        ana.simplify(floordiv(Var("x"), Var("y") * 0))


def test_floordiv_low_bits_and_reduced_remainder(ana):
    x, k, n = Var("x"), Var("k"), Var("n")
    # floordiv(8x + 7, 16): the low bits 7 < 8 never carry.
    assert text(ana.simplify(floordiv(x * 8 + 7, 16))) == text(floordiv(x, 2))
    ana.bind(x, Range(0, 2))
    # 360 = 22 * 16 + 8: with x in [0, 1] the remainder 8x + 359 stays in one block of 16.
    assert text(ana.simplify(floordiv(x * 360 + 359, 16))) == text(ana.simplify(x * 22 + 22))
    # A fact scaled by a matching coefficient: k < n gives 32k + 31 < 32n.
    ana.bind(k, Range(0, n))
    assert ana.can_prove(LT(k * 32 + 31, n * 32))
