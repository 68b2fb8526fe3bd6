import time

import numpy as np
import pytest

from tensorize.ir.buffer import decl_buffer
from tensorize.ir.expr import Cast, Div, FloorDiv, FloorMod, Mod, Ramp, Var, Broadcast
from tensorize.ir.stmt import BufferStore, For
from tensorize.codegen.python import InterpreterError, run_prim_func

from tests.transform.transform_programs import func_of, matmul, two_stage


def test_matmul_with_blocks_matches_numpy_and_is_fast():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 64), dtype="float32"), rng.standard_normal((64, 64), dtype="float32")
    c = np.full((64, 64), 7.0, "float32")  # init must overwrite this
    start = time.perf_counter()
    run_prim_func(matmul(64), a, b, c)
    elapsed = time.perf_counter() - start
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert elapsed < 5.0


def test_int8_accumulates_in_int32_and_wraps_in_int8():
    a = np.full((4, 4), 100, "int8")
    b = np.full((4, 4), 100, "int8")
    c = np.zeros((4, 4), "int32")
    run_prim_func(matmul(4, "int8", "int32"), a, b, c)
    assert (c == 40000).all()
    c8 = np.zeros((4, 4), "int8")
    run_prim_func(matmul(4, "int8", "int8"), a, b, c8)
    assert (c8 == np.int8(np.int32(40000).astype("int8"))).all()


def test_truncdiv_and_floordiv_differ_on_negatives():
    A = decl_buffer((4,), "int32", "A")
    B = decl_buffer((4, 4), "int32", "B")
    i = Var("i")
    x = A[i]
    body = For(i, 0, 4, body=BufferStore(B, Div(x, 3), [i, 0]))
    from tensorize.ir.stmt import SeqStmt

    body = For(i, 0, 4, body=SeqStmt([BufferStore(B, Div(x, 3), [i, 0]), BufferStore(B, Mod(x, 3), [i, 1]),
                                      BufferStore(B, FloorDiv(x, 3), [i, 2]), BufferStore(B, FloorMod(x, 3), [i, 3])]))
    a = np.array([-7, 7, -1, 0], "int32")
    b = np.zeros((4, 4), "int32")
    run_prim_func(func_of([A, B], body), a, b)
    assert b[:, 0].tolist() == [-2, 2, 0, 0]
    assert b[:, 1].tolist() == [-1, 1, -1, 0]
    assert b[:, 2].tolist() == [-3, 2, -1, 0]
    assert b[:, 3].tolist() == [2, 1, 2, 0]


def test_float_to_int_cast_truncates():
    A, B = decl_buffer((3,), "float32", "A"), decl_buffer((3,), "int8", "B")
    i = Var("i")
    f = func_of([A, B], For(i, 0, 3, body=BufferStore(B, Cast("int8", A[i]), [i])))
    b = np.zeros(3, "int8")
    run_prim_func(f, np.array([-2.7, 2.7, 0.5], "float32"), b)
    assert b.tolist() == [-2, 2, 0]


def test_vector_ramp_and_broadcast():
    A, B = decl_buffer((16,), "float32", "A"), decl_buffer((16,), "float32", "B")
    i = Var("i")
    store = BufferStore(B, A[Ramp(i * 8, 1, 8)] * Broadcast(2.0, 8), [Ramp(i * 8, 1, 8)])
    a = np.arange(16, dtype="float32")
    b = np.zeros(16, "float32")
    run_prim_func(func_of([A, B], For(i, 0, 2, body=store)), a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_root_allocated_intermediate():
    f, _ = two_stage()
    a = np.random.default_rng(1).standard_normal((16, 8)).astype("float32")
    c = np.zeros((16, 8), "float32")
    run_prim_func(f, a, c)
    np.testing.assert_allclose(c, a * 2 + 1)


def test_wrong_arguments_are_reported():
    f, _ = two_stage()
    with pytest.raises(InterpreterError, match="float32"):
        run_prim_func(f, np.zeros((16, 8), "float64"), np.zeros((16, 8), "float32"))
    with pytest.raises(InterpreterError, match="shape"):
        run_prim_func(f, np.zeros((8, 8), "float32"), np.zeros((16, 8), "float32"))
    with pytest.raises(InterpreterError, match="takes 2 arguments"):
        run_prim_func(f, np.zeros((16, 8), "float32"))


def test_a_scalar_guard_of_a_vector_load_runs_only_the_taken_side():
    """``if_then_else(i < 3, A[i * 4:i * 4 + 4], 0)``: one condition for all lanes, so the load past A's end (rows 3
    and beyond of a padded copy) is never made, as in the compiled code, which branches."""
    from tensorize.script import tir as T

    @T.prim_func
    def pad_rows(A: T.Buffer((12,), "float32"), B: T.Buffer((20,), "float32")):
        for i in range(5):
            B[i * 4:i * 4 + 4] = T.if_then_else(i < 3, A[i * 4:i * 4 + 4], T.Broadcast(T.float32(0), 4))

    a, b = np.arange(12, dtype=np.float32), np.full(20, 9, np.float32)
    run_prim_func(pad_rows, a, b)
    np.testing.assert_array_equal(b, np.concatenate([a, np.zeros(8, np.float32)]))
