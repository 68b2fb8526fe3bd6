"""detect_iter_map, subspace_divide and regions: known cases plus brute-force property tests."""
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from tests.hypothesis_setup import examples

import tensorize as tvm
from tensorize.arith import (
    detect_iter_map, evaluate, iter_map_simplify, normalize_iter_map_to_expr, region_covers, region_union,
    relax_region, subspace_divide,
)
from tensorize.ir.expr import Range, Var, floordiv, floormod
from tests.arith.exprtext import text


def doms(*pairs):
    return {v: Range(0, e) for v, e in pairs}


def test_recognised_patterns():
    i, j, k = Var("i"), Var("j"), Var("k")
    d = doms((i, 8), (j, 4), (k, 2))
    cases = [
        [i, j, k],
        [i * 4 + j, k],
        [i * 8 + j * 2 + k],                       # multi-level fusion
        [floordiv(i, 2), floormod(i, 2), j, k],    # split
        [floormod(floordiv(i, 2), 2), floordiv(i, 4), floormod(i, 2), j * 2 + k],
        [floordiv(i * 4 + j, 8), floormod(i * 4 + j, 8), k],  # fuse then split
        [j * 2 + k + 3, i],                         # constant offset
    ]
    for indices in cases:
        res = detect_iter_map(indices, d, check_level="bijective")
        assert res.errors == [], [text(x) for x in indices]
        assert len(res.indices) == len(indices)
        for idx, got in zip(indices, res.indices):
            back = normalize_iter_map_to_expr(got)
            for point in itertools.product(range(8), range(4), range(2)):
                env = dict(zip((i, j, k), point))
                assert evaluate(back, env) == evaluate(idx, env)


def test_rejections_name_the_reason():
    i, j = Var("i"), Var("j")
    d = doms((i, 8), (j, 4))
    assert "overlap" in detect_iter_map([i + j], d).errors[0]
    assert "not used" in detect_iter_map([i], d, check_level="bijective").errors[0]
    assert detect_iter_map([i], d).errors == []  # surjective allows unused iterators
    assert "overlapping" in detect_iter_map([floormod(i, 4), floormod(i, 8)], d).errors[0]
    assert "not affine" in detect_iter_map([i * j], d).errors[0]
    assert "divisible" in detect_iter_map([floordiv(i, 3)], d).errors[0]
    n = Var("n")
    assert "not an input iterator" in detect_iter_map([i + n], d).errors[0]
    with pytest.raises(ValueError, match="check_level"):
        detect_iter_map([i], d, check_level="exact")


def test_trivial_iterators_and_predicate():
    i, j, u = Var("i"), Var("j"), Var("u")
    res = detect_iter_map([i * 4 + j + u], {i: Range(0, 8), j: Range(0, 4), u: Range(0, 1)}, check_level="bijective")
    assert res.errors == []
    # A padded fusion: 10 of the 12 points of i*4+j are valid.
    res = detect_iter_map([i * 4 + j], {i: Range(0, 3), j: Range(0, 4)}, predicate=i * 4 + j < 10)
    assert res.errors == [] and int(res.indices[0].args[0].source.extent) == 10


def test_iter_map_simplify():
    i, j = Var("i"), Var("j")
    d = doms((i, 8), (j, 4))
    out = iter_map_simplify([floordiv(i * 4 + j, 4), floormod(i * 4 + j, 4)], d)
    assert out[0].same_as(i) and out[1].same_as(j)
    assert text(iter_map_simplify([floordiv(i, 2) * 2 + floormod(i, 2)], d)[0]) == "i"


def test_subspace_divide_blockize_shape():
    io, ii, jo, ji = Var("io"), Var("ii"), Var("jo"), Var("ji")
    d = doms((io, 4), (ii, 16), (jo, 8), (ji, 16))
    res = subspace_divide([io * 16 + ii, jo * 16 + ji], d, [ii, ji])
    assert len(res) == 3
    outer = [text(normalize_iter_map_to_expr(r[0].source)) for r in res[:2]]
    inner = [text(normalize_iter_map_to_expr(r[1].source)) for r in res[:2]]
    assert outer == ["io", "jo"] and inner == ["ii", "ji"]
    assert [int(r[1].extent) for r in res[:2]] == [16, 16]
    assert all(bool(m.extent) for m in res[2])  # trivial predicates
    # An inner iterator above an outer one cannot be divided.
    assert subspace_divide([ii * 4 + io], d, [ii]) == []


def _random_composition(draw):
    """Loops of random extents, split/fused into random index expressions that stay bijective."""
    n = draw(st.integers(1, 3))
    exts = [draw(st.sampled_from([2, 3, 4, 6, 8])) for _ in range(n)]
    vars_ = [Var(f"v{k}") for k in range(n)]
    pieces = []  # (expr, extent)
    for v, e in zip(vars_, exts):
        factors = [f for f in (2, 3, 4) if e % f == 0 and f < e]
        if factors and draw(st.booleans()):
            f = draw(st.sampled_from(factors))
            pieces += [(floordiv(v, f), e // f), (floormod(v, f), f)]
        else:
            pieces.append((v, e))
    order = draw(st.permutations(range(len(pieces))))
    pieces = [pieces[k] for k in order]
    indices = []
    while pieces:
        take = draw(st.integers(1, min(2, len(pieces))))
        group, pieces = pieces[:take], pieces[take:]
        expr, total = group[0]
        for e, ext in group[1:]:
            expr, total = expr * ext + e, total * ext
        if total % 2 == 0 and total > 2 and draw(st.booleans()):
            indices += [floordiv(expr, 2), floormod(expr, 2)]
        else:
            indices.append(expr)
    return vars_, exts, indices


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_random_split_fuse_is_detected_and_bijective(data):
    vars_, exts, indices = _random_composition(data.draw)
    dom = {v: Range(0, e) for v, e in zip(vars_, exts)}
    res = detect_iter_map(indices, dom, check_level="bijective")
    assert res.errors == [], [text(x) for x in indices]
    seen = set()
    for point in itertools.product(*(range(e) for e in exts)):
        env = dict(zip(vars_, point))
        value = tuple(evaluate(normalize_iter_map_to_expr(x), env) for x in res.indices)
        assert value == tuple(evaluate(x, env) for x in indices)
        seen.add(value)
    assert len(seen) == len(list(itertools.product(*(range(e) for e in exts))))


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_random_non_bijective_maps_are_rejected(data):
    vars_, exts, indices = _random_composition(data.draw)
    dom = {v: Range(0, e) for v, e in zip(vars_, exts)}
    kind = data.draw(st.sampled_from(["duplicate", "drop", "sum"]))
    if kind == "duplicate":
        indices = indices + [indices[0]]
    elif kind == "drop" and len(indices) > 1:
        indices = indices[1:]
    else:
        v = vars_[0]
        indices = [indices[0] + v] + indices[1:] if exts[0] > 1 else indices + [v]
    points = list(itertools.product(*(range(e) for e in exts)))
    images = {tuple(evaluate(x, dict(zip(vars_, p))) for x in indices) for p in points}
    injective = len(images) == len(points)
    res = detect_iter_map(indices, dom, check_level="bijective")
    if not injective:  # two loop points collide: no bijective map can describe it
        assert res.errors, [text(x) for x in indices]


@settings(max_examples=examples(100), deadline=None)
@given(st.data())
def test_subspace_divide_recomposes(data):
    vars_, exts, indices = _random_composition(data.draw)
    dom = {v: Range(0, e) for v, e in zip(vars_, exts)}
    sub = [v for v in vars_ if data.draw(st.booleans())]
    res = subspace_divide(indices, dom, sub)
    if not res:
        return
    for point in itertools.product(*(range(e) for e in exts)):
        env = dict(zip(vars_, point))
        for idx, (outer, inner) in zip(indices, res[:-1]):
            o = evaluate(normalize_iter_map_to_expr(outer.source), env)
            i = evaluate(normalize_iter_map_to_expr(inner.source), env)
            assert 0 <= i < int(inner.extent) and 0 <= o < int(outer.extent)
            assert o * int(inner.extent) + i == evaluate(idx, env)


def test_subspace_divide_succeeds_on_inner_suffix():
    io, ii = Var("io"), Var("ii")
    res = subspace_divide([floordiv(io * 8 + ii, 4), floormod(io * 8 + ii, 4)], doms((io, 4), (ii, 8)), [ii])
    assert res, "a split of the fused binding inside the inner digits must divide"


def test_regions():
    i, io, j = Var("i"), Var("io"), Var("j")
    r = relax_region([Range.from_min_extent(io * 32 + i, 1), Range.from_min_extent(j * 2, 2)],
                     {i: Range(0, 32), j: Range(0, 64)})
    assert [(text(x.min), text(x.extent)) for x in r] == [("(io * 32)", "32"), ("0", "128")]
    u = region_union([[Range.from_min_extent(0, 4)], [Range.from_min_extent(2, 8)]])
    assert [(text(x.min), text(x.extent)) for x in u] == [("0", "10")]
    assert region_covers([Range.from_min_extent(io * 32, 32)], [Range.from_min_extent(io * 32 + 4, 8)])
    assert not region_covers([Range.from_min_extent(io * 32, 32)], [Range.from_min_extent(io * 32 + 30, 8)])
    ana = tvm.arith.Analyzer()
    s = ana.int_set(floormod(i, 8) + j, {i: Range(0, 32), j: Range(0, 4)})
    assert (int(s.min_value), int(s.max_value)) == (0, 10)


def test_inverse_affine_iter_map_brute_force():
    from tensorize.arith.iter_map_inverse import inverse_affine_iter_map
    from tensorize.arith import Analyzer

    a, b, c = Var("a"), Var("b"), Var("c")
    d = doms((a, 6), (b, 8), (c, 5))
    indices = [floordiv(a * 8 + b, 16), c, floormod(a * 8 + b, 16)]
    res = detect_iter_map(indices, d, check_level="bijective")
    assert not res.errors
    outs = [Var("o0"), Var("o1"), Var("o2")]
    inv = inverse_affine_iter_map(res.indices, outs)
    for va, vb, vc in itertools.product(range(6), range(8), range(5)):
        point = {a: va, b: vb, c: vc}
        out_vals = {o: evaluate(e, point) for o, e in zip(outs, indices)}
        for var, expr in inv.items():
            assert evaluate(expr, out_vals) == point[var]
