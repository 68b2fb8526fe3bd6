import pytest

import tensorize as tvm
from tensorize import tir
from tensorize.ir import dtype as dt


def test_dtype_parse_and_errors():
    assert dt.DataType("float32x4").lanes == 4
    assert dt.with_lanes("int8", 16) == "int8x16"
    with pytest.raises(ValueError, match="unknown dtype"):
        dt.parse("float33")


def test_operators_build_ir_and_fold_constants():
    i = tir.Var("i", "int32")
    e = i * 4 + 2
    assert isinstance(e, tir.Add) and e.dtype == "int32"
    assert (tir.IntImm("int32", 2) * 3).value == 6
    x = tir.Var("x", "float32")
    assert (x + 1.0).b.dtype == "float32"
    assert (tir.Var("n", "int64") + i).dtype == "int64"


def test_var_equality_is_identity_for_python():
    i, j = tir.Var("i"), tir.Var("i")
    assert {i: 1}[i] == 1
    assert j not in [i]
    assert isinstance((i == j).asobject(), tir.EQ)


def test_nodes_are_immutable():
    i = tir.Var("i")
    with pytest.raises(AttributeError, match="immutable"):
        i.name = "j"


def test_structural_equal_maps_vars_by_position():
    i, j = tir.Var("i"), tir.Var("j")
    assert tvm.ir.structural_equal(i * 4 + 2, j * 4 + 2)
    assert not tvm.ir.structural_equal(i * 4 + 2, j * 4 + 3)
    assert not tvm.ir.structural_equal(i + i, i + j)
    assert tvm.ir.structural_hash(i * 4 + 2) == tvm.ir.structural_hash(j * 4 + 2)
    with pytest.raises(ValueError, match="structural mismatch"):
        tvm.ir.assert_structural_equal(i * 4 + 2, j * 4 + 3)


def test_substitute_and_post_order_visit():
    i, k = tir.Var("i"), tir.Var("k")
    e = tir.stmt_functor.substitute(i * 2 + 1, {i: k})
    assert e.a.a is k
    seen = []
    tir.stmt_functor.post_order_visit(e, lambda n: seen.append(type(n).__name__))
    assert seen == ["Var", "IntImm", "Mul", "IntImm", "Add"]


def test_ir_transform_only_enable():
    A = tir.decl_buffer((16,), "float32", name="A")
    i = tir.Var("i")
    loop = tir.For(i, 0, 16, tir.ForKind.SERIAL, tir.BufferStore(A, tir.FloatImm("float32", 0), [i]))
    out = tir.stmt_functor.ir_transform(
        loop, None, lambda op: op.replace(kind=tir.ForKind.VECTORIZED), ["tir.For"])
    assert out.kind == tir.ForKind.VECTORIZED and out.body is loop.body


def test_structural_hash_is_the_same_in_every_process():
    import subprocess
    import sys

    code = ("from tensorize import tir; from tensorize.ir import structural_hash;"
            "A = tir.decl_buffer((8,), 'float32', name='A'); i = tir.Var('i');"
            "print(structural_hash(tir.For(i, 0, 8, tir.ForKind.SERIAL, tir.BufferStore(A, A[i] + 1.0, [i]))))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": str(seed), "PATH": "", "PYTHONPATH": ":".join(sys.path)}).stdout
            for seed in (1, 2)}
    assert len(outs) == 1
