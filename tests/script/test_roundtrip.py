"""Round trip: ``from_source(script(x))`` is structurally equal to ``x``, and printing is a fixed point."""
from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.hypothesis_setup import examples

from tensorize import te
from tensorize.ir import expr as E
from tensorize.ir import op
from tensorize.ir.buffer import decl_buffer
from tensorize.ir.function import IRModule
from tensorize.ir.stmt import BufferStore
from tensorize.ir.structural import assert_structural_equal
from tensorize.script import from_source

from tests.script import test_printer_programs as P


def assert_round_trip(node):
    text = node.script()
    parsed = from_source(text)
    assert_structural_equal(node, parsed)
    assert parsed.script() == text


@pytest.mark.parametrize("builder", P.BUILDERS, ids=lambda b: b.__name__)
def test_hand_built_programs_round_trip(builder):
    assert_round_trip(builder())


def test_te_programs_round_trip():
    k = te.reduce_axis((0, 64), "k")
    A = te.placeholder((64, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    C = te.compute((64, 64), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    D = te.compute((64, 64), lambda m, n: te.max(C[m, n], 0.0), name="D")
    assert_round_trip(IRModule({"main": te.create_prim_func([A, B, D]).with_attr("global_symbol", "main")}))
    X = te.placeholder((8,), dtype="float32", name="X")
    Y = te.compute((8,), lambda *i: X(*i) + 1.0, name="Y")
    assert_round_trip(IRModule({"main": te.create_prim_func([X, Y])}))


SOURCES = [
    '''
@I.ir_module
class Module:
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        A = T.match_buffer(a, (8,), dtype="float32")
        B = T.match_buffer(b, (8,), dtype="float32")
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + 1.0
''',
    '''
@T.prim_func
def main(A: T.Buffer((16, 16), "int8"), B: T.Buffer((16,), "int32")):
    for i in T.parallel(16):
        for k in T.unroll(16):
            with T.block("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = 0
                B[vi] = B[vi] + T.Cast("int32", A[vi, vk])
''',
    '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i_0 in T.thread_binding(4, thread="blockIdx.x"):
        for i_1 in T.thread_binding(16, thread="threadIdx.x"):
            with T.block("B"):
                vi = T.axis.spatial(64, i_0 * 16 + i_1)
                B[vi] = T.if_then_else(vi < 32, A[vi] * T.float32(2.0), T.exp(A[vi]))
''',
    '''
@T.prim_func
def main(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128,), "float32")):
    A_shared = T.alloc_buffer((128, 128), scope="shared")
    for i, j in T.grid(128, 128):
        with T.block("copy"):
            vi, vj = T.axis.remap("SS", [i, j])
            A_shared[vi, vj] = A[vi, vj]
    for i in range(128):
        for j in T.vectorized(128):
            with T.block("rowsum"):
                vi, vj = T.axis.remap("SR", [i, j])
                T.reads(A_shared[vi, vj])
                T.writes(C[vi])
                with T.init():
                    C[vi] = T.float32(0.0)
                C[vi] = C[vi] + T.max(A_shared[vi, vj], T.float32(0.0))
''',
]


@pytest.mark.parametrize("source", SOURCES, ids=range(len(SOURCES)))
def test_parsed_programs_round_trip(source):
    assert_round_trip(from_source(source))


# -- random expressions ------------------------------------------------------------------------

_I, _J = E.Var("i"), E.Var("j")
_INT_BINARY = [E.add, E.sub, E.mul, E.floordiv, E.floormod, E.truncdiv, E.truncmod, op.min, op.max]
_CMP = [lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b,
        lambda a, b: a.equal(b) if isinstance(a, E.PrimExpr) else E.convert(a).equal(b),
        lambda a, b: E._compare(E.NE, a, b)]


def _nonzero(e):
    # Keep divisions away from constant-zero divisors (those raise when built).
    return e if not (isinstance(e, E.IntImm) and e.value == 0) else E.IntImm("int32", 7)


int_leaves = st.one_of(st.sampled_from([_I, _J]), st.integers(-50, 50).map(lambda v: E.IntImm("int32", v)))


def _extend_int(children):
    binary = st.tuples(st.sampled_from(_INT_BINARY), children, children).map(
        lambda t: t[0](t[1], _nonzero(t[2])) if t[0] in (E.floordiv, E.floormod, E.truncdiv, E.truncmod) else t[0](t[1], t[2]))
    select = st.tuples(bool_exprs(children), children, children).map(lambda t: E.Select(*t))
    ite = st.tuples(bool_exprs(children), children, children).map(lambda t: op.if_then_else(*t))
    cast = children.map(lambda e: E.cast("int32", E.cast("float32", e) * E.FloatImm("float32", 0.5)))
    return st.one_of(binary, select, ite, cast)


def bool_exprs(ints):
    cmp = st.tuples(st.sampled_from(_CMP), ints, ints).map(lambda t: t[0](t[1], t[2]))
    return st.recursive(cmp, lambda b: st.one_of(
        st.tuples(b, b).map(lambda t: E.logical_and(*t)),
        st.tuples(b, b).map(lambda t: E.logical_or(*t)),
        b.map(E.logical_not)), max_leaves=4)


int_exprs = st.recursive(int_leaves, _extend_int, max_leaves=12)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_exprs)
def test_random_expressions_round_trip(expression):
    out = decl_buffer((1,), "int32", name="out")
    func = P.func([_I, _J, out], BufferStore(out, E.convert(expression), [0]), attrs={})
    assert_round_trip(func)


@pytest.mark.parametrize("fetch", ["bind", "tma"])
def test_tensorized_wgmma_schedules_round_trip(fetch):
    """Symbolic strides and offsets of match buffers, declared together (``s0, s1 = T.int32(), T.int32()``),
    keep their names when read back; the TMA copies' calls print and parse."""
    from intrinsics.cuda_wgmma_schedule import gemm_nt, schedule_wgmma_gemm

    sch = schedule_wgmma_gemm(gemm_nt(256, 512, 256), stages=3, fetch=fetch, group=2)
    assert_round_trip(sch.mod)


def test_lowered_programs_round_trip():
    """A lowered program's flattened views of its parameters print as ``A_1 = T.Buffer((4096,), data=A.data)``
    and read back as views of the same data."""
    import tensorize as tvm
    from intrinsics.cuda_wgmma_schedule import gemm_nt, schedule_wgmma_gemm

    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    lowered = tvm.lower(te.create_prim_func([A, B]))
    assert 'A_1 = T.Buffer((4096,), "float32", data=A.data)' in lowered.script()
    assert_round_trip(lowered)
    assert_round_trip(tvm.lower(schedule_wgmma_gemm(gemm_nt(256, 512, 256), stages=3, fetch="tma").mod))


@pytest.mark.parametrize("builder", [b for b in P.BUILDERS if b.__name__ != "expression_zoo"],
                         ids=lambda b: b.__name__)
def test_lowered_hand_built_programs_round_trip(builder):
    """Lowered, the printer's programs read back as themselves: unrolled copies define their own loop, let and
    thread variables, as the parser gives each its own. (The expression zoo's ``if_then_else`` on a constant
    condition folds when parsed, as TVM's builder folds it.)"""
    import tensorize as tvm

    try:
        lowered = tvm.lower(builder())
    except Exception as err:  # noqa: BLE001 - programs made to test printing need not lower
        pytest.skip(f"does not lower: {err}")
    assert_round_trip(lowered)


def test_predicated_vector_stores_parse():
    """``B.vstore([i], value, predicate=mask)``, as the printer writes a predicated store, reads back."""
    A = decl_buffer((16,), "float32", name="A")
    i = E.Var("i", "int32")
    store = A.vstore([i], E.Broadcast(E.FloatImm("float32", 1.0), 4), predicate=E.Broadcast(E.IntImm("bool", 1), 4))
    assert store.predicate is not None and store.indices[0].lanes == 4
