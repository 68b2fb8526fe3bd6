"""Small workloads shared by the schedule tests (and the storage-align pass test)."""
import numpy as np

import tensorize as tvm
from tensorize.script import tir as T
from tests.workloads import matmul_f32
from tensorize.codegen.python import run_prim_func


@T.prim_func
def two_stage(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32))
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


# The float32 matmuls of the schedule tests: B stored (N, K) for the 64 one, (K, N) for the 16 one.
matmul = matmul_f32(64, 64, 64, transpose_b=True, main_attrs=True)
matmul_16 = matmul_f32(16, 16, 16).with_attr("global_symbol", "matmul_16")


def rand(*shape):
    return np.random.default_rng(0).random(shape).astype("float32")


def run(mod, *arrays):
    """Run ``mod["main"]`` (LLVM build when available, else the interpreter) on numpy arrays in place."""
    func = only(mod)
    run_prim_func(func, *arrays)
    return arrays


def check_two_stage(mod):
    a = rand(32, 32)
    c = np.zeros((32, 32), "float32")
    run(mod, a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def check_matmul(mod, b_layout=None):
    a, b = rand(64, 64), rand(64, 64) + 1
    c = np.zeros((64, 64), "float32")
    run(mod, a, b if b_layout is None else b_layout(b), c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-4)


def unchanged(sch, before_mod, before_len):
    assert sch.mod is before_mod
    assert len(sch.trace) == before_len


def only(mod):
    """The single function of a module (or the function itself)."""
    if hasattr(mod, "body"):
        return mod
    funcs = list(mod.functions.values())
    assert len(funcs) == 1
    return funcs[0]


def assert_func_equal(mod, expected):
    """Structural equality of the module's single function with ``expected`` (attributes ignored)."""
    actual = only(mod)
    tvm.ir.assert_structural_equal(actual, expected.replace(attrs=actual.attrs))
