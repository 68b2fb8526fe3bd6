"""Legacy TE schedule: te.create_schedule + lowering to plain loops (seed 001)."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize import te
from tensorize.ir.stmt import Allocate, Block, For, IfThenElse
from tensorize.te.legacy import lower_te_schedule
from tensorize.codegen.python import run_prim_func
from tests.programs import SEED001_LOWERED_PRINTED


def vector_add():
    n = tvm.tir.const(128, "int32")
    a = te.placeholder((n,), name="a")
    b = te.placeholder((n,), name="b")
    c = te.compute((n,), lambda i: a[i] + b[i], name="c")
    return a, b, c


def test_seed001_lower_text():
    a, b, c = vector_add()
    sch = te.create_schedule(c.op)
    assert str(tvm.lower(sch, [a, b, c])).strip() == SEED001_LOWERED_PRINTED.strip()


def test_lower_te_schedule_structure_and_numbers():
    a, b, c = vector_add()
    mod = lower_te_schedule(te.create_schedule(c.op), [a, b, c])
    func = mod["main"]
    assert [p.name for p in func.params] == ["a", "b", "c"]
    assert set(func.attrs) == {"from_legacy_te_schedule", "tir.noalias"}
    loop = func.body
    assert isinstance(loop, For) and loop.loop_var.name == "i" and int(loop.extent) == 128
    x, y, z = np.arange(128, dtype="float32"), np.ones(128, "float32"), np.zeros(128, "float32")
    run_prim_func(func, x, y, z)
    np.testing.assert_array_equal(z, x + y)


def test_reduction_with_intermediate_and_where():
    k = te.reduce_axis((0, 4), "k")
    A = te.placeholder((3, 4), name="A")
    B = te.compute((3,), lambda i: te.sum(A[i, k], axis=k, where=k > 0), name="B")
    C = te.compute((3,), lambda i: B[i] * 2.0, name="C")
    func = lower_te_schedule(te.create_schedule(C.op), [A, C])["main"]
    assert isinstance(func.body, Allocate)
    found = []
    tvm.tir.stmt_functor.post_order_visit(func.body, lambda n: found.append(type(n)))
    assert Block not in found and IfThenElse in found
    a, c = np.random.default_rng(1).standard_normal((3, 4)).astype("float32"), np.zeros(3, "float32")
    run_prim_func(func, a, c)
    np.testing.assert_allclose(c, a[:, 1:].sum(axis=1) * 2, rtol=1e-5)


def test_schedule_stage_lookup_and_errors():
    a, b, c = vector_add()
    sch = te.create_schedule([c.op])
    assert sch[c].op is c.op and sch[c.op] is sch[c]
    assert [op.name for op in sch.ops] == ["a", "b", "c"]
    with pytest.raises(NotImplementedError, match="tvm.tir.Schedule"):
        sch[c].split(c.op.axis[0], factor=8)
    with pytest.raises(ValueError, match="placeholder 'b' .* not in the argument list"):
        lower_te_schedule(sch, [a, c])
