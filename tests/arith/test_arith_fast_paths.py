"""Comparison normalisation, interval sets of products, and the shared caches behind fast simplification
(they must give the same answers as the slow paths)."""
import itertools

import pytest
from hypothesis import given, settings

from tests.hypothesis_setup import examples

import tensorize as tvm
from tensorize.arith import evaluate
from tensorize.ir import expr as E
from tensorize.ir.expr import Range, SizeVar, Var
from tensorize.ir.functor import collect_vars, post_order_visit
from tests.arith.exprtext import text
from tests.arith.test_arith_properties import X, Y, Z, exprs

I, J = Var("i"), Var("j")


@pytest.mark.parametrize("build, expected", [
    (lambda: I + 1 < 10, "(i < 9)"),
    (lambda: I - 1 >= 0, "(i >= 1)"),
    (lambda: E.LE(E.IntImm("int32", 4), J + 2), "(2 <= j)"),
    (lambda: I * 4 + J < 10, "(((i * 4) + j) < 10)"),  # already normal: unchanged
    (lambda: E.EQ(I + 3, J + 1), "((i + 3) == (j + 1))"),  # variables on both sides: kept as written
])
def test_comparisons_gather_constants(build, expected):
    assert text(tvm.arith.Analyzer().simplify(build())) == expected


def test_comparison_normalisation_keeps_decisions():
    ana = tvm.arith.Analyzer()
    ana.bind(I, Range(0, 8))
    assert ana.can_prove(I + 1 < 10)
    assert not ana.can_prove(I + 1 < 8)
    assert text(ana.simplify(I + 1 < 8)) == "(i < 7)"


@pytest.mark.parametrize("build, dom, lo, hi", [
    (lambda n: (I + 1) * 4, {I: Range(0, 8)}, "4", "32"),
    (lambda n: I * n, {I: Range(0, 8)}, "0", "(n * 7)"),
    (lambda n: n * (I + 1), {I: Range(0, 8)}, "n", "(n * 8)"),
    (lambda n: I * (0 - n), {I: Range(0, 8)}, "(n * -7)", "0"),
])
def test_int_set_of_products_with_a_fixed_factor(build, dom, lo, hi):
    n = SizeVar("n", "int32")
    s = tvm.arith.Analyzer().int_set(build(n), dom)
    assert (text(s.min_value), text(s.max_value)) == (lo, hi)


def test_int_set_of_unbounded_product_is_open_not_an_error():
    s = tvm.arith.Analyzer().int_set(I * J, {I: Range(0, 8)})
    assert not s.has_lower_bound() and not s.has_upper_bound()


@settings(max_examples=examples(150), deadline=None)
@given(exprs([X, Y, Z]))
def test_shared_cache_answers_like_a_fresh_analyzer(e):
    """Simplification through the shared cache equals the value of the input everywhere, is
    idempotent, and a second simplification of the result returns the very same object."""
    first = tvm.arith.Analyzer().simplify(e)
    again = tvm.arith.Analyzer().simplify(e)
    tvm.ir.assert_structural_equal(first, again)
    assert tvm.arith.Analyzer().simplify(first) is first or \
        tvm.ir.structural_equal(tvm.arith.Analyzer().simplify(first), first)
    for point in itertools.product(range(-5, 6, 5), range(-4, 5, 4), range(-3, 4, 3)):
        env = dict(zip((X, Y, Z), point))
        assert evaluate(first, env) == evaluate(e, env), f"{text(e)} -> {text(first)} at {point}"


@settings(max_examples=examples(150), deadline=None)
@given(exprs([X, Y, Z]))
def test_collect_vars_of_expressions_matches_a_full_walk(e):
    e = E.Select(e < X, e + Y, Z) if isinstance(e, E.PrimExpr) else e
    seen = {}
    post_order_visit(e, lambda n: isinstance(n, E.Var) and seen.setdefault(id(n), n))
    assert collect_vars(e) == list(seen.values())


def test_simplified_affine_expression_is_returned_as_is():
    e = I * 4 + J * 2 - I + 3
    s = tvm.arith.Analyzer().simplify(e)
    assert text(s) == "(((i * 3) + (j * 2)) + 3)"
    assert tvm.arith.Analyzer().simplify(s) is s


def test_substituting_analyzer_does_not_use_shared_forms():
    e = I * 2 + 1
    assert text(tvm.arith.Analyzer().simplify(e)) == "((i * 2) + 1)"
    ana = tvm.arith.Analyzer()
    ana.bind(I, J + 1)
    assert text(ana.simplify(e)) == "((j * 2) + 3)"
    assert text(tvm.arith.Analyzer().simplify(e)) == "((i * 2) + 1)"
