"""Lowering stays linear in the size of unrolled kernels: expressions are hash-consed once
(``ExprShapes``), CSE and Simplify reuse those ids. These tests check the ids and that the
simplifier's cache of results never outlives the loop ranges it was computed under."""
from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.buffer import decl_buffer
from tensorize.ir.function import PrimFunc
from tensorize.transform.common_subexpr_elim import common_subexpr_elim
from tensorize.transform.expr_shapes import ExprShapes
from tensorize.transform.simplify import simplify_func


def test_structurally_equal_pure_expressions_share_one_id():
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    shapes = ExprShapes()
    a, b, c = i * 4 + 1, i * 4 + 1, j * 4 + 1
    assert a is not b
    assert shapes.info(a) == shapes.info(b) == (shapes.info(a)[0], 5)
    assert shapes.info(c)[0] != shapes.info(a)[0]  # variables compare by identity
    assert shapes.eligible(i) is None  # leaves are never CSE candidates


def test_expressions_that_load_have_no_shape():
    i = E.Var("i", "int32")
    A = decl_buffer((16,), "int32", name="A")
    shapes = ExprShapes()
    assert shapes.info(A[i] + 1)[0] is None
    assert shapes.info(i + 1)[0] is not None


def _func(body, *buffers):
    return PrimFunc([b.data for b in buffers], body, buffer_map={b.data: b for b in buffers})


def test_simplify_cache_is_dropped_when_a_loop_variable_gets_a_new_range():
    # The same Var drives two loops of different extents: i // 8 is 0 in the first loop only.
    i = E.Var("i", "int32")
    B = decl_buffer((16,), "int32", name="B")
    first = S.For(i, 0, 8, S.ForKind.SERIAL, S.BufferStore(B, E.floordiv(i, 8), [i]))
    second = S.For(i, 0, 16, S.ForKind.SERIAL, S.BufferStore(B, E.floordiv(i, 8), [i]))
    out = simplify_func(_func(S.SeqStmt([first, second]), B)).body
    assert isinstance(out.seq[0].body.value, E.IntImm) and out.seq[0].body.value.value == 0
    assert isinstance(out.seq[1].body.value, E.FloorDiv), out.seq[1].body.value


def test_cse_names_each_repeated_index_once_per_statement():
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    A, B = decl_buffer((4096,), "float32", name="A"), decl_buffer((4096,), "float32", name="B")
    index = i * 64 + j * 4
    store = S.BufferStore(B, A[index + 1] + A[index + 2] + A[i * 64 + j * 4 + 3], [index])
    loops = S.For(i, 0, 64, S.ForKind.SERIAL, S.For(j, 0, 16, S.ForKind.SERIAL, store))
    out = common_subexpr_elim(_func(loops, A, B)).body.body.body
    assert isinstance(out, S.LetStmt) and out.var.name == "cse_var_1"
    assert not isinstance(out.body, S.LetStmt)  # one binding: i * 64 + j * 4
    loads = []

    def collect(e):
        if isinstance(e, E.BufferLoad):
            loads.append(e)
        for field in getattr(type(e), "_fields", ()):
            child = getattr(e, field)
            if isinstance(child, E.PrimExpr):
                collect(child)

    collect(out.body.value)
    assert all(load.indices[0].a is out.var for load in loads), [str(load.indices[0]) for load in loads]
