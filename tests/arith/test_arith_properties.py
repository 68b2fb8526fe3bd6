"""Property tests against brute-force enumeration on small domains."""
import itertools

from hypothesis import given, settings, strategies as st

from tests.hypothesis_setup import examples

import tensorize as tvm
from tensorize.arith import evaluate
from tensorize.ir import op
from tensorize.ir.expr import Range, Var, floordiv, floormod
from tests.arith.exprtext import text

X, Y, Z = Var("x"), Var("y"), Var("z")


def exprs(variables):
    leaf = st.one_of(st.sampled_from(variables), st.integers(-6, 9))

    def extend(children):
        const = st.integers(1, 9)
        return st.one_of(
            st.tuples(children, children).map(lambda t: t[0] + t[1]),
            st.tuples(children, children).map(lambda t: t[0] - t[1]),
            st.tuples(children, st.integers(-4, 5)).map(lambda t: t[0] * t[1]),
            st.tuples(children, const).map(lambda t: floordiv(t[0], t[1])),
            st.tuples(children, const).map(lambda t: floormod(t[0], t[1])),
            st.tuples(children, children).map(lambda t: op.min(t[0], t[1])),
            st.tuples(children, children).map(lambda t: op.max(t[0], t[1])),
        )

    return st.recursive(leaf, extend, max_leaves=8).map(lambda e: e if not isinstance(e, int) else tvm.tir.const(e, "int32"))


domains = st.tuples(st.integers(-3, 2), st.integers(1, 6))


def _points(doms):
    return itertools.product(*(range(lo, lo + ext) for lo, ext in doms))


@settings(max_examples=examples(300), deadline=None)
@given(exprs([X, Y, Z]), domains, domains, domains)
def test_simplify_preserves_value(e, dx, dy, dz):
    ana = tvm.arith.Analyzer()
    for v, (lo, ext) in zip((X, Y, Z), (dx, dy, dz)):
        ana.bind(v, Range.from_min_extent(lo, ext))
    s = ana.simplify(e)
    bound = ana.const_int_bound(e)
    for point in _points((dx, dy, dz)):
        env = dict(zip((X, Y, Z), point))
        want = evaluate(e, env)
        assert evaluate(s, env) == want, f"{text(e)} -> {text(s)} at {point}"
        assert bound.min_value <= want <= bound.max_value, f"{text(e)}: {want} outside {bound}"


@settings(max_examples=examples(150), deadline=None)
@given(exprs([X, Y]))
def test_simplify_without_bounds_is_identity_everywhere(e):
    ana = tvm.arith.Analyzer()
    s = ana.simplify(e)
    for point in itertools.product(range(-9, 10, 3), range(-7, 8, 2)):
        env = dict(zip((X, Y), point))
        assert evaluate(s, env) == evaluate(e, env), f"{text(e)} -> {text(s)} at {point}"


@settings(max_examples=examples(150), deadline=None)
@given(exprs([X, Y]), exprs([X, Y]), domains, domains)
def test_can_prove_is_sound(a, b, dx, dy):
    ana = tvm.arith.Analyzer()
    ana.bind(X, Range.from_min_extent(*dx))
    ana.bind(Y, Range.from_min_extent(*dy))
    for cond in (a < b, a <= b, a.equal(b) if hasattr(a, "equal") else a < b):
        if ana.can_prove(cond):
            for point in _points((dx, dy)):
                assert evaluate(cond, dict(zip((X, Y), point))), f"claimed {text(cond)}"


def split_fused(variables):
    """Index expressions a split of a fused loop leaves behind, ``sum_l floormod(floordiv(x, s_l), f_l)
    * s_l`` (with the outermost level a plain ``floordiv``), over a small random dividend ``x``, with
    random scaling, a stray term and sometimes a wrong stride (where nothing may collapse)."""
    dividend = exprs(variables).filter(lambda e: not isinstance(e, tvm.tir.IntImm))
    factors = st.lists(st.integers(1, 4), min_size=1, max_size=3)

    @st.composite
    def build(draw):
        x = draw(dividend)
        fs = draw(factors)
        scale = draw(st.integers(-3, 3))
        stride, terms = 1, []
        for f in fs:
            terms.append(floormod(floordiv(x, stride), f) * stride if stride > 1 else floormod(x, f))
            stride *= f
        outer_stride = stride + draw(st.sampled_from([0, 0, 0, 1]))  # sometimes off by one
        terms.append(floordiv(x, outer_stride) * outer_stride)
        order = draw(st.permutations(range(len(terms))))
        e = terms[order[0]]
        for i in order[1:]:
            e = e + terms[i]
        return e * scale + draw(st.sampled_from(variables))

    return build()


@settings(max_examples=examples(200), deadline=None)
@given(split_fused([X, Y]), domains, domains)
def test_recomposed_split_fused_preserves_value(e, dx, dy):
    for bounded in (False, True):
        ana = tvm.arith.Analyzer()
        if bounded:
            ana.bind(X, Range.from_min_extent(*dx))
            ana.bind(Y, Range.from_min_extent(*dy))
        s = ana.simplify(e)
        points = _points((dx, dy)) if bounded else itertools.product(range(-9, 10, 2), range(-7, 8, 3))
        for point in points:
            env = dict(zip((X, Y), point))
            assert evaluate(s, env) == evaluate(e, env), f"{text(e)} -> {text(s)} at {point}"


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.integers(-50, 50))
def test_split_fused_index_recomposes_to_the_variable(fs, shift):
    """Every exact multi-level split of ``x`` (any integer, no bounds) simplifies back to ``x``."""
    x = X + shift
    stride, e = 1, None
    for f in fs:
        term = floormod(floordiv(x, stride), f) * stride if stride > 1 else floormod(x, f)
        e = term if e is None else e + term
        stride *= f
    e = e + floordiv(x, stride) * stride
    s = tvm.arith.Analyzer().simplify(e)
    assert text(s) == text(tvm.arith.Analyzer().simplify(x)), f"{text(e)} -> {text(s)}"
