"""The cached flags of ScheduleState (affine_binding, region_cover, stage_pipeline), as TVM computes
them, and the parser's implicit cast of a stored value to the buffer's dtype."""
import tensorize as tvm
from tensorize.s_tir.schedule.state import CachedFlags
from tensorize.script import tir as T


def flags(func, name):
    state = tvm.s_tir.ScheduleState(func)
    found = []
    tvm.tir.stmt_functor.post_order_visit(
        func.body, lambda n: found.append(n) if isinstance(n, tvm.tir.Block) and n.name_hint == name else None)
    return state._get_cached_flags(state.get_sref(found[0]))


@T.prim_func
def two_stages(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16))
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def consumer_first(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = B[vi] + T.float32(1)
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi] * T.float32(2)


@T.prim_func
def half_produced(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    C = T.alloc_buffer((16,))
    for i in range(8):
        with T.block("P"):
            vi = T.axis.spatial(16, i)
            C[vi] = A[vi]
    for i in range(16):
        with T.block("Q"):
            vi = T.axis.spatial(16, i)
            B[vi] = C[vi]


@T.prim_func
def strided(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(64, i * 16)
            B[vi] = A[vi]


@T.prim_func
def int_into_float(A: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("A"):
            vi = T.axis.spatial(8, i)
            A[vi] = vi + 1


def test_two_stages_are_a_covered_pipeline():
    for name in ("B", "C", "root"):
        assert flags(two_stages, name) == CachedFlags(True, True, True)


def test_write_after_read_breaks_the_pipeline():
    assert flags(consumer_first, "root") == CachedFlags(True, True, False)


def test_half_produced_buffer_is_not_covered():
    assert flags(half_produced, "Q") == CachedFlags(True, False, True)
    assert flags(half_produced, "root").stage_pipeline is False


def test_strided_binding_is_not_affine():
    assert flags(strided, "B").affine_binding is False


def test_stored_int_is_cast_to_the_buffer_dtype():
    store = int_into_float.body.block.body.body.block.body
    assert store.value.dtype == "float32" and isinstance(store.value, tvm.tir.Cast)
