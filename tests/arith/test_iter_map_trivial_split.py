"""A floordiv that leaves nothing of its iterator is the constant 0, not a piece of extent 1."""
from tensorize.arith import detect_iter_map
from tensorize.arith.subspace import subspace_divide
from tensorize.ir.expr import Range, Var
from tensorize.tir import floordiv, floormod


def test_floordiv_by_the_whole_extent_is_zero():
    x = Var("x")
    res = detect_iter_map([floordiv(x, 4) + 3], {x: Range(0, 4)}, True, "surjective", True)
    assert not res.errors and not res.indices[0].args and int(res.indices[0].base) == 3
    # x no longer appears: not bijective
    assert detect_iter_map([floordiv(x, 4)], {x: Range(0, 4)}, True, "bijective", True).errors


def test_bindings_of_a_fused_warp_loop_over_batch_tiles_divide():
    """The init of a batched Tensor Core contraction: a thread loop ``f`` fused from (1, 2, 2) tiles gives
    ``f // 4`` (always 0) next to the block-level batch iterator; blockize must divide these bindings."""
    a, f, d, e, h = (Var(n) for n in "a f d e h".split())
    iters = {a: Range(0, 2), f: Range(0, 4), d: Range(0, 16), e: Range(0, 2), h: Range(0, 16)}
    binds = [a + floordiv(f, 4), floormod(floordiv(f, 2), 2), floormod(f, 2) * 16 + d, e * 16 + h]
    assert not detect_iter_map(binds, iters, True, "surjective", True).errors
    divided = subspace_divide(binds, iters, [d, h])
    assert [[int(m.extent) for m in pair] for pair in divided[:4]] == [[2, 1], [2, 1], [2, 16], [2, 16]]
