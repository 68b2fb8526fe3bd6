"""``tir.ceildiv`` / ``T.ceildiv``: division rounding up, as TVM's."""
import tensorize.tir as tir
from tensorize.ir.expr import Var
from tensorize.script import tir as T


def test_ceildiv_of_integers_and_expressions():
    assert int(tir.ceildiv(7, 2)) == 4 and int(tir.ceildiv(8, 2)) == 4
    assert str(T.ceildiv(Var("n"), 4)) == "(n + 3) // 4"


def test_ceildiv_of_floats_is_ceil_of_the_quotient():
    expr = tir.ceildiv(tir.const(7.0, "float32"), tir.const(2.0, "float32"))
    assert "ceil" in str(expr)
