"""Modular sets (``expr = coeff * k + base``) and the vector index rules built on them: every member the
expression takes is in its set, and a ramp that stays inside one block of ``c`` divides into a broadcast."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tensorize.arith.modular import modular_set, ramp_in_one_block
from tensorize.ir import expr as E
from tensorize.transform.vectorize_loop import vector_binary

x, y = E.Var("x", "int32"), E.Var("y", "int32")


@settings(max_examples=200, deadline=None)
@given(a=st.integers(-64, 64), b=st.integers(-64, 64), c=st.integers(-64, 64), d=st.integers(1, 16),
       xv=st.integers(-100, 100), yv=st.integers(-100, 100), form=st.integers(0, 3))
def test_members_lie_in_the_set(a, b, c, d, xv, yv, form):
    exprs = [x * a + y * b + c, (x * a + c) * b, E.floordiv(x * (a * d) + c * d, d), E.floormod(x * a + c, d) + y * b]
    expr = exprs[form]
    from tensorize.ir.functor import substitute

    value = substitute(expr, {x: E.IntImm("int32", xv), y: E.IntImm("int32", yv)})
    from tensorize.arith import Analyzer

    got = int(Analyzer().simplify(value).value)
    ms = modular_set(expr)
    if ms.coeff == 0:
        assert got == ms.base
    else:
        assert (got - ms.base) % ms.coeff == 0


@settings(max_examples=200, deadline=None)
@given(coeff=st.integers(1, 64), base=st.integers(0, 63), lanes=st.sampled_from([2, 4, 8, 16]),
       block=st.sampled_from([2, 4, 8, 16, 32, 64, 256]), k=st.integers(0, 50))
def test_ramp_in_one_block_is_sound(coeff, base, lanes, block, k):
    start = x * coeff + base
    if ramp_in_one_block(start, 1, lanes, block):
        first = coeff * k + base
        assert first // block == (first + lanes - 1) // block


def test_ramp_divided_by_a_block_it_stays_in_is_a_broadcast():
    ramp = E.Ramp(x * 8, 1, 8)
    assert isinstance(vector_binary(E.FloorDiv, ramp, E.IntImm("int32", 16)), E.Broadcast)
    rem = vector_binary(E.FloorMod, ramp, E.Broadcast(E.IntImm("int32", 16), 8))
    assert isinstance(rem, E.Ramp) and rem.lanes == 8
    # x * 4 + [0..7] crosses a block of 16 for odd x: stays a vector division
    assert not isinstance(vector_binary(E.FloorDiv, E.Ramp(x * 4, 1, 8), E.IntImm("int32", 16)), E.Broadcast)
