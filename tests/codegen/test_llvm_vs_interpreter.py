"""Differential property: the LLVM build and the IR interpreter compute the same values for random
expression trees over several dtypes (casts, floordiv/floormod/truncdiv on negatives, min/max,
select, if_then_else, math intrinsics in safe domains), in serial, vectorized, unrolled and parallel
loops. Integers and exact float computations must agree bit for bit; transcendental results to a
tolerance."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypothesis_setup import examples

import tensorize as tvm
from tensorize.ir import stmt as S
from tensorize.ir.expr import Var
from tensorize.codegen.python import run_prim_func

from tests.codegen.codegen_kernels import buffers, func
from tests.codegen.random_exprs import DTYPES, INPUT_RANGES, expressions

N = 16
_INPUTS = buffers(*[(f"A_{d}", (N,), d) for d in DTYPES])
_RTOL = {"float16": 2e-2, "float32": 1e-4, "float64": 1e-9}


def _input_arrays(seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for d in DTYPES:
        lo, hi = INPUT_RANGES[d]
        if d.startswith(("int", "uint")):
            a = rng.integers(lo, hi, size=N, endpoint=True).astype(d)
            a[:2] = [lo, hi]  # the extremes, where wrapping and division corner cases live
        else:
            a = (rng.random(N) * (hi - lo) + lo).astype(d)
        arrays.append(a)
    return arrays


def _float_dtypes(stmt) -> set:
    """The float dtypes of the values computed in ``stmt`` (loads and casts included)."""
    seen = set()
    tvm.tir.stmt_functor.post_order_visit(stmt, lambda n: seen.add(str(getattr(n, "dtype", ""))))
    return {d for d in seen if d.startswith("float")}


@st.composite
def programs(draw):
    i = Var("i", "int32")
    loads = {d: b[i] for d, b in zip(DTYPES, _INPUTS)}
    out_dtype = draw(st.sampled_from(DTYPES))
    g = draw(expressions(loads, i, out_dtype))
    kind = draw(st.sampled_from([S.ForKind.SERIAL, S.ForKind.VECTORIZED, S.ForKind.UNROLLED, S.ForKind.PARALLEL]))
    (out,) = buffers(("Out", (N,), out_dtype))
    body = S.For(i, 0, N, kind, S.BufferStore(out, g.expr, [i]))
    return func(_INPUTS + [out], body), out_dtype, g


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**16))
def test_llvm_agrees_with_interpreter(program, seed):
    f, out_dtype, g = program
    inputs = _input_arrays(seed)
    expected = np.zeros(N, out_dtype)
    run_prim_func(f, *[a.copy() for a in inputs], expected)
    out = tvm.nd.array(np.zeros(N, out_dtype))
    tvm.build(f, target="llvm")(*[tvm.nd.array(a) for a in inputs], out)
    got = out.numpy()
    if out_dtype in _RTOL and not g.exact:
        # an inexact value computed in a narrower float (exp of a float32, cast to float64) is as close as
        # that float allows: LLVM's and numpy's float32 exp differ in the last place
        rtol = max(_RTOL[d] for d in _float_dtypes(f.body) | {out_dtype} if d in _RTOL)
        scale = max(1.0, abs(g.lo), abs(g.hi))
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * scale, err_msg=f.script())
    else:
        np.testing.assert_array_equal(got, expected, err_msg=f.script())
