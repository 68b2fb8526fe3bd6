"""float32 exp and erf compile to polynomials (vectorizable) with the documented accuracy and special values."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorize as tvm
from tensorize import te, tir

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 88.7, -87.3, 1e-30, 100.0, -100.0]


def _run(fn: str, values: np.ndarray, lanes: int) -> np.ndarray:
    n = len(values)
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: getattr(tir, fn)(A[i]), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    if lanes > 1:
        (i,) = sch.get_loops(sch.get_block("B"))
        sch.vectorize(sch.split(i, [None, lanes])[1])
    out = tvm.nd.array(np.zeros(n, "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(values.astype("float32")), out)
    return out.numpy()


@pytest.mark.parametrize("lanes", [1, 16])
def test_exp_is_within_two_ulp_and_keeps_special_values(lanes):
    x = np.linspace(-87, 88, 4096).astype("float32")
    got = _run("exp", x, lanes).astype("float64")
    want = np.exp(x.astype("float64"))
    normal = np.isfinite(want) & (want > 1.2e-38) & (want < 3.4e38)
    assert np.max(np.abs(got[normal] - want[normal]) / want[normal]) < 2.4e-7  # 2 ulp
    special = _run("exp", np.array(SPECIAL + [0.0] * 6, "float32"), lanes)[:len(SPECIAL)]
    assert np.isnan(special[0]) and special[1] == np.inf and special[2] == 0.0
    assert special[3] == 1.0 and special[4] == 1.0 and special[8] == np.inf and special[9] == 0.0
    assert np.isclose(special[5], math.exp(float(np.float32(88.7))), rtol=3e-7)
    assert np.isclose(special[6], math.exp(float(np.float32(-87.3))), rtol=3e-7)


@pytest.mark.parametrize("lanes", [1, 16])
def test_erf_is_within_1e6_and_saturates(lanes):
    x = np.linspace(-6, 6, 4096).astype("float32")
    got = _run("erf", x, lanes).astype("float64")
    want = np.array([math.erf(float(v)) for v in x])
    assert np.max(np.abs(got - want)) < 1e-6
    special = _run("erf", np.array(SPECIAL + [0.0] * 6, "float32"), lanes)[:len(SPECIAL)]
    assert np.isnan(special[0]) and special[1] == 1.0 and special[2] == -1.0 and special[3] == 0.0
    assert np.isclose(special[7], 2 / math.sqrt(math.pi) * 1e-30, rtol=1e-6)


def test_float32_exp_vectorizes_without_libm_calls():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: tir.exp(A[i]) + tir.erf(A[i]), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.vectorize(sch.split(i, [None, 16])[1])
    ll = tvm.build(sch.mod, target="llvm").get_source("ll")
    assert "expf" not in ll and "erff" not in ll and "llvm.exp" not in ll
    assert "<16 x float>" in ll


def test_float64_keeps_libm():
    A = te.placeholder((8,), "float64", name="A")
    B = te.compute((8,), lambda i: tir.erf(A[i]), name="B")
    ll = tvm.build(te.create_prim_func([A, B]), target="llvm").get_source("ll")
    assert "@erf(" in ll or "call double @erf" in ll
