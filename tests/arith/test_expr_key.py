"""``same_key`` decides exactly what comparing ``expr_key``s decides, on every pair of a varied set."""
import itertools

import tensorize as tvm
from tensorize.arith.expr_key import expr_key, same_key
from tensorize.arith.linear import canonical_affine
from tensorize.ir import expr as E


def _exprs():
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    i_again = E.Var("i", "int32")  # same name, another variable
    buf = tvm.tir.decl_buffer((16,), "int32", name="A")
    out = []
    for x in (i, j, i_again):
        out += [x, x * 4 + 1, x * 4 + 2, E.floordiv(x, 4), E.floormod(x, 4), tvm.tir.min(x, j), tvm.tir.max(x, j),
                E.Cast("int64", x), buf[x], E.Select(x > 1, x, j), x * 4 + 1 - j]
    out += [E.IntImm("int32", 1), E.IntImm("int64", 1), E.IntImm("int32", 2),
            E.floordiv(i * 4 + 1, 4), E.floordiv(i * 4 + 1, 8)]
    return out


def test_same_key_agrees_with_expr_key_on_every_pair():
    exprs = _exprs()
    for a, b in itertools.product(exprs, repeat=2):
        assert same_key(a, b) == bool(expr_key(a) == expr_key(b)), (a, b)


def test_rebuilt_expression_is_same_key_and_other_variable_is_not():
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    assert same_key(E.floordiv(i * 4 + j, 8), E.floordiv(i * 4 + j, 8))
    assert not same_key(E.floordiv(i * 4 + j, 8), E.floordiv(i * 4 + E.Var("j", "int32"), 8))


def test_canonical_affine_keeps_an_already_canonical_object():
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    canonical = canonical_affine(i * 4 + j + 2 - j)
    assert str(canonical) == "i * 4 + 2"
    fresh = i * 4 + 2  # structurally the canonical form: the very object comes back
    assert canonical_affine(fresh) is fresh
