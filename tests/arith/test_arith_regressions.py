"""Minimised failures found by the property tests, kept as plain regression tests."""
import tensorize as tvm
from tensorize.ir import expr as E
from tensorize.ir import op
from tensorize.ir.expr import Var


def test_narrow_integer_bounds_account_for_wrapping():
    # int8 (i * i) for i < 16 reaches 225, which wraps: the bound is int8's whole range, so
    # min(i * i, -2) must not fold to -2 (it did, and the LLVM build disagreed with the interpreter).
    ana = tvm.arith.Analyzer()
    i = Var("i")
    ana.bind(i, tvm.ir.Range(0, 16))
    c = E.cast("int8", i)
    bound = ana.const_int_bound(c * c)
    assert (bound.min_value, bound.max_value) == (-128, 127)
    assert not isinstance(ana.simplify(op.min(c * c, E.make_const("int8", -2))), E.IntImm)
    u = E.cast("uint8", i)
    bound = ana.const_int_bound(u - E.make_const("uint8", 3))  # 0 - 3 wraps to 253
    assert (bound.min_value, bound.max_value) == (0, 255)
    assert (ana.const_int_bound(c + E.make_const("int8", 100)).max_value) == 115  # no wrap: stays exact


def test_int32_arithmetic_is_assumed_not_to_overflow():
    ana = tvm.arith.Analyzer()
    i = Var("i")
    ana.bind(i, tvm.ir.Range(0, 1 << 20))
    bound = ana.const_int_bound(i * i)  # as in TVM (the LLVM code marks it nsw)
    assert bound.max_value == ((1 << 20) - 1) ** 2


def test_nested_floordiv_merge_is_simplified_again():
    """floordiv(floordiv(x * 3, 2), 3) merges into floordiv(x * 3, 6), whose common factor then cancels: the
    result is a fixpoint (hypothesis found x * 3 // 6, which a second simplification turned into x // 2)."""
    x = Var("x", "int32")
    first = tvm.arith.Analyzer().simplify(x * 3 // 2 // 3)
    assert str(first) == "x // 2"
    assert tvm.ir.structural_equal(tvm.arith.Analyzer().simplify(first), first)
