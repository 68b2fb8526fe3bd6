"""Round trips of the node and intrinsic call forms the printer emits: ``T.Add(1, 2)``,
``T.Let(..., where=...)``, ``T.handle("float32", "shared")``, ``T.tvm_storage_sync("shared")``,
and a ``T.`` builder for every operator registered in ``tensorize.ir.op``."""
from __future__ import annotations

import pytest

from tensorize.ir import expr as E
from tensorize.ir.buffer import decl_buffer
from tensorize.ir.expr import Op, PointerType, Var
from tensorize.ir.function import PrimFunc
from tensorize.ir.stmt import BufferStore, Evaluate, For, LetStmt, SeqStmt
from tensorize.ir.structural import assert_structural_equal
from tensorize.script import from_source
from tensorize.script import tir as T


def round_trip(func: PrimFunc, syntax_sugar: bool = True) -> str:
    text = func.script(syntax_sugar=syntax_sugar) if syntax_sugar is False else func.script()
    parsed = from_source(text, check_well_formed=False)
    assert_structural_equal(func, parsed)
    assert parsed.script() == func.script()
    return text


def func_of(buffers, body, scalars=()) -> PrimFunc:
    handles = [Var(b.name + "_handle", "handle") for b in buffers]
    return PrimFunc(list(scalars) + handles, body, buffer_map=dict(zip(handles, buffers)),
                    attrs={"global_symbol": "main"})


def store_func(make_value, dtype: str = "int32") -> PrimFunc:
    A = decl_buffer((8,), dtype, name="A")
    i = Var("i")
    return func_of([A], For(i, 0, 8, body=BufferStore(A, make_value(i), [i])))


NODES = {
    "Add": (E.Add, "int32"), "Sub": (E.Sub, "int32"), "Mul": (E.Mul, "int32"), "FloorDiv": (E.FloorDiv, "int32"),
    "FloorMod": (E.FloorMod, "int32"), "Min": (E.Min, "int32"), "Max": (E.Max, "int32"),
    "Div": (E.Div, "float32"), "Mod": (E.Mod, "int32"),
}


@pytest.mark.parametrize("name", sorted(NODES))
@pytest.mark.parametrize("sugar", [True, False])
def test_binary_nodes_of_constants_round_trip(name, sugar):
    node_class, dtype = NODES[name]
    const = (lambda v: E.FloatImm(dtype, v)) if dtype == "float32" else (lambda v: E.IntImm(dtype, v))
    func = store_func(lambda i: node_class(const(6), const(4)) if dtype != "int32" else
                      E.add(node_class(const(6), const(4)), i), dtype)
    text = round_trip(func, sugar)
    assert f"T.{name}(" in text or (name == "Div" and "T.Div(" in text) or name in ("Mod", "Div", "Min", "Max")
    assert getattr(T, name) is node_class


@pytest.mark.parametrize("name", ["EQ", "NE", "LT", "LE", "GT", "GE"])
def test_comparison_nodes_round_trip(name):
    node_class = getattr(E, name)
    func = store_func(lambda i: E.Select(node_class(E.IntImm("int32", 1), E.IntImm("int32", 2)), i, E.IntImm("int32", 0)))
    text = round_trip(func)
    assert f"T.{name}(1, 2)" in text
    assert isinstance(T.__dict__[name](1, 2), node_class)


def test_logical_nodes_round_trip_with_and_without_sugar():
    def value(i):
        cond = E.Or(E.And(E.LT(i, 4), E.GE(i, 1)), E.Not(E.EQ(i, 6)))
        return E.Select(cond, i, E.IntImm("int32", 0))

    sugared = round_trip(store_func(value))
    assert " and " in sugared and " or " in sugared and "not " in sugared
    plain = round_trip(store_func(value), syntax_sugar=False)
    assert "T.And(" in plain and "T.Or(" in plain and "T.Not(" in plain
    assert isinstance(T.Not(E.LT(Var("x"), 1)), E.Not)


def test_let_expression_round_trips():
    x, y = Var("x"), Var("y")
    func = store_func(lambda i: E.Let(x, i * 2, E.Let(y, x + 1, x * y)))
    text = round_trip(func)
    assert "T.Let(" in text and "where={" in text
    from_python = T.Let(x + 1, where={x: 3})
    assert isinstance(from_python, E.Let) and from_python.var is x


def test_let_expression_errors_name_the_form():
    from tensorize.errors import DiagnosticError

    with pytest.raises(DiagnosticError, match=r"T.Let\(x \+ 1, where=\{x: i \* 2\}\)"):
        from_source('''
@T.prim_func
def f(A: T.Buffer((8,), "int32")):
    for i in range(8):
        A[i] = T.Let(1, where={0: 1})
''')


def test_pointer_typed_handles():
    ptr = T.handle("float32", "shared")
    assert isinstance(ptr, Var) and ptr.type_annotation == PointerType("float32", "shared")
    assert T.handle().dtype == "handle" and T.handle("int8").type_annotation == PointerType("int8", "global")
    p = Var("p", PointerType("float32", "shared"))
    q = Var("q", PointerType("int8", "global"))
    A = decl_buffer((8,), "float32", name="A")
    body = LetStmt(q, E.Call("handle", Op.get("tir.address_of"), (E.BufferLoad(A, [0]),)),
                   Evaluate(E.Call("int32", Op.get("tir.call_extern"), (E.StringImm("use"), p, q))))
    func = func_of([A], body, scalars=[p])
    text = round_trip(func)
    assert 'p: T.handle("float32", "shared")' in text
    assert 'q: T.handle("int8", "global") = ' in text


def test_storage_sync_and_matrix_intrinsics_round_trip():
    A = decl_buffer((256,), "float16", name="A", scope="wmma.matrix_a")
    C = decl_buffer((256,), "float32", name="C", scope="wmma.accumulator")
    calls = [
        T.tvm_storage_sync("shared"),
        T.tvm_fill_fragment(C.data, 16, 16, 16, 0, T.float32(0)),
        T.tvm_load_matrix_sync(A.data, 16, 16, 16, 0, T.address_of(A[0]), 16, "row_major"),
        T.tvm_mma_sync(C.data, 0, A.data, 0, A.data, 0, C.data, 0),
        T.tvm_store_matrix_sync(C.data, 16, 16, 16, 0, T.address_of(C[0]), 16, "row_major"),
        T.call_packed("my.packed_func", A.data, 3),
        T.prefetch(A.data, 0),
        T.tvm_stack_make_shape(16, 16),
        T.tvm_thread_allreduce(1, T.float32(0), True, C.data, 0),
        T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A.data, 0, A.data, 0, C.data, 0,
                  False),
        T.ptx_ldmatrix("float16", False, 4, ".b16", A.data, 0, A.data, 0),
    ]
    func = func_of([A, C], SeqStmt([Evaluate(c) for c in calls]))
    text = round_trip(func)
    assert 'T.tvm_storage_sync("shared")' in text and 'T.call_packed("my.packed_func", A.data, 3)' in text
    assert T.tvm_storage_sync("shared").dtype == "int32" and T.tvm_mma_sync(*[0] * 8).dtype == "handle"


def test_vector_halves_round_trip():
    A = decl_buffer((16,), "int8", name="A")
    B = decl_buffer((16,), "int8", name="B")
    whole = E.BufferLoad(A, [E.Ramp(0, 1, 16)])
    low, high = T.vectorlow("int8x8", whole), T.vectorhigh("int8x8", whole)
    body = BufferStore(B, T.vectorcombine("int8x16", high, low), [E.Ramp(0, 1, 16)])
    func = func_of([A, B], body)
    text = round_trip(func)
    assert 'T.vectorcombine("int8x16", T.vectorhigh("int8x8", ' in text
    with pytest.raises(ValueError, match="16 lanes"):
        T.vectorcombine("int8x32", low, high)


def test_every_registered_operator_has_a_T_builder():
    import tensorize.ir.op  # noqa: F401 - registers the built-in operators

    missing = [name for name in sorted(Op._registry) if name.startswith("tir.") and not hasattr(T, name[4:])]
    assert not missing, f"no T.<name> builder for {missing}"


@pytest.mark.parametrize("sugar", [True, False])
def test_float_division_of_variables_round_trips(sugar):
    A = decl_buffer((8,), "float32", name="A")
    i = Var("i")
    func = func_of([A], For(i, 0, 8, body=BufferStore(A, E.Div(A[i], A[7 - i]), [i])))
    text = round_trip(func, sugar)
    assert ("A[i] / A[7 - i]" in text) if sugar else ("T.Div(A[i], A[T.Sub(7, i)])" in text)


def _reduce_func(reduction_builder):
    from tensorize import te

    k = te.reduce_axis((2, 16), "k")
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B", dtype="int32")
    C = te.compute((16,), lambda m: reduction_builder(A, B, m, k), name="C")
    reduce_node = C.op.body[0]
    m = C.op.axis[0].var
    buffers = [decl_buffer((16, 16), "float32", name="A"), decl_buffer((16, 16), "int32", name="B")]

    def to_buffer(e):  # te tensors read as buffers of the same names
        if isinstance(e, E.ProducerLoad):
            buffer = buffers[0] if e.producer.name == "A" else buffers[1]
            return E.BufferLoad(buffer, e.indices)
        return None

    from tensorize.ir.functor import ir_transform

    body = ir_transform(Evaluate(reduce_node), None, to_buffer, ["tir.ProducerLoad"])
    return func_of(buffers, For(m, 0, 16, body=For(k.var, 2, 14, body=body)))


def test_reduce_round_trips_with_its_combiner():
    from tensorize import te

    func = _reduce_func(lambda A, B, m, k: te.sum(A[m, k] * 2.0, axis=k, where=k < 9))
    text = round_trip(func)
    assert "T.reduce(T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)]), source=[A[m, k] * T.float32(2.0)]" in text
    assert 'axis=[T.iter_var(k, T.Range(2, 16), "CommReduce", "")]' in text


def test_multi_value_reduce_round_trips():
    from tensorize import te

    argmax = te.comm_reducer(lambda x, y: (te.if_then_else(x[1] >= y[1], x[0], y[0]),
                                           te.if_then_else(x[1] >= y[1], x[1], y[1])),
                             lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), name="argmax")
    func = _reduce_func(lambda A, B, m, k: argmax((B[m, k], A[m, k]), axis=k)[1])
    text = round_trip(func)
    assert "T.comm_reducer(lambda x_0, x_1, y_0, y_1: (T.if_then_else(x_1 >= y_1, x_0, y_0), " in text
    assert "value_index=1" in text


def test_comm_reducer_from_python_and_errors():
    r = T.comm_reducer(lambda x, y: T.max(x, y), [T.float32(0)])
    assert isinstance(r, E.CommReducer) and isinstance(r.result[0], E.Max)
    with pytest.raises(ValueError, match="2 values for 1 identity"):
        T.comm_reducer(lambda x, y: (x, y), [T.float32(0)])
    with pytest.raises(TypeError, match="T.comm_reducer"):
        T.reduce(None, [T.float32(1)])
    with pytest.raises(ValueError, match="unknown iterator type"):
        T.iter_var(Var("k"), E.Range(0, 4), "Reduce")
