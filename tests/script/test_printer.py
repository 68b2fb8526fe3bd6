"""Exact-text tests of the TVMScript printer on representative programs (TVM 0.20 style, ``T.block``)."""
from __future__ import annotations

import textwrap
import time

import pytest

import tensorize as tvm
from tensorize import te
from tensorize.ir import op
from tensorize.ir.buffer import decl_buffer
from tensorize.ir.expr import Cast, FloatImm, IntImm, Var, floordiv, floormod
from tensorize.ir.stmt import BufferStore, Evaluate, For, LetStmt, SeqStmt
from tensorize.script.printer import script

from tests.script import test_printer_programs as P


def text(s: str) -> str:
    return textwrap.dedent(s).strip("\n")


def test_vector_add_matches_seed_003():
    expected = text('''
        # from tvm.script import ir as I
        # from tvm.script import tir as T

        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), C: T.Buffer((128,), "float32")):
                T.func_attr({"tir.noalias": True})
                # with T.block("root"):
                for i in range(128):
                    with T.block("C"):
                        vi = T.axis.spatial(128, i)
                        T.reads(A[vi], B[vi])
                        T.writes(C[vi])
                        C[vi] = A[vi] + B[vi]
    ''')
    mod = P.vector_add()
    assert mod.script() == expected
    assert str(mod) == expected


def test_mm_relu_uses_grid_remap_init_and_root_allocs():
    expected = text('''
        # from tvm.script import ir as I
        # from tvm.script import tir as T

        @I.ir_module
        class Module:
            @T.prim_func
            def mm_relu(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
                T.func_attr({"tir.noalias": True})
                # with T.block("root"):
                Y = T.alloc_buffer((128, 128))
                for i, j, k in T.grid(128, 128, 128):
                    with T.block("Y"):
                        vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                        T.reads(Y[vi, vj], A[vi, vk], B[vk, vj])
                        T.writes(Y[vi, vj])
                        with T.init():
                            Y[vi, vj] = T.float32(0.0)
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
                for i, j in T.grid(128, 128):
                    with T.block("C"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        T.reads(Y[vi, vj])
                        T.writes(C[vi, vj])
                        C[vi, vj] = T.max(Y[vi, vj], T.float32(0.0))
    ''')
    assert P.mm_relu().script() == expected


def test_te_matmul_1024_of_seed_003():
    k = te.reduce_axis((0, 1024), "k")
    A = te.placeholder((1024, 1024), name="A")
    B = te.placeholder((1024, 1024), name="B")
    C = te.compute((1024, 1024), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    func = te.create_prim_func([A, B, C]).with_attr("global_symbol", "main")
    expected = text('''
        # from tvm.script import ir as I
        # from tvm.script import tir as T

        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
                T.func_attr({"tir.noalias": True})
                # with T.block("root"):
                for m, n, k in T.grid(1024, 1024, 1024):
                    with T.block("C"):
                        v_m, v_n, v_k = T.axis.remap("SSR", [m, n, k])
                        T.reads(A[v_m, v_k], B[v_k, v_n])
                        T.writes(C[v_m, v_n])
                        with T.init():
                            C[v_m, v_n] = T.float32(0.0)
                        C[v_m, v_n] = C[v_m, v_n] + A[v_m, v_k] * B[v_k, v_n]
    ''')
    assert tvm.IRModule({"main": func}).script() == expected


def test_function_without_global_symbol_is_private():
    A = te.placeholder((8,), dtype="float32", name="A")
    B = te.compute((8,), lambda *i: A(*i) + 1.0, name="B")
    first_lines = tvm.IRModule({"main": te.create_prim_func([A, B]).without_attr("global_symbol")}).script().splitlines()[3:6]
    assert first_lines == ["@I.ir_module", "class Module:", "    @T.prim_func(private=True)"]


def test_loops_of_every_kind():
    expected = text('''
        # from tvm.script import tir as T

        @T.prim_func
        def main(A: T.Buffer((4, 8, 16, 32, 64), "float32")):
            for a in T.parallel(4):
                for b in range(2, 8):
                    for c in T.vectorized(16):
                        for d in T.unroll(32):
                            for e in T.thread_binding(64, thread="threadIdx.x"):
                                A[a, b, c, d, e] = T.float32(1.0)
            for f in T.serial(4, annotations={"pragma_unroll_explicit": 1}):
                A[f, 0, 0, 0, 0] = T.float32(2.0)
    ''')
    assert P.loops_every_kind().script() == expected
    no_sugar = P.loops_every_kind().script(syntax_sugar=False)
    assert "for b in T.serial(2, 8):" in no_sugar


def test_grid_stops_at_dependent_extent_and_non_serial_loops():
    A = decl_buffer((16, 16), "float32", name="A")
    i, j, k = Var("i"), Var("j"), Var("k")
    inner = For(k, 0, 4, body=BufferStore(A, FloatImm("float32", 0.0), [i, j + k]))
    body = For(i, 0, 16, body=For(j, 0, i + 1, body=inner))
    lines = P.func([A], body, attrs={}).script().splitlines()
    assert lines[4:7] == ["    for i in range(16):", "        for j, k in T.grid(i + 1, 4):",
                          "            A[i, j + k] = T.float32(0.0)"]


def test_block_with_where_match_buffer_alloc_buffer_and_attr():
    expected = text('''
        # from tvm.script import tir as T

        @T.prim_func
        def main(A: T.Buffer((130, 16), "float32"), B: T.Buffer((32, 4), "float32")):
            T.func_attr({"tir.noalias": True})
            # with T.block("root"):
            for io, ii, jj in T.grid(9, 4, 4):
                with T.block("compute"):
                    vi = T.axis.spatial(32, io * 4 + ii)
                    vj = T.axis.spatial(4, jj)
                    T.where(io * 4 + ii < 32)
                    T.reads(A[vi * 4:vi * 4 + 4, 0:16])
                    T.writes(B[vi, vj])
                    T.block_attr({"meta_schedule.auto_tensorize": "dot_4x4"})
                    tmp = T.alloc_buffer((4,), "float16", scope="shared")
                    sub_off = T.int32()
                    sub = T.match_buffer(A[vi * 4:vi * 4 + 4, vj * 4:vj * 4 + 4], (4, 4), strides=(16, 1), elem_offset=sub_off)
                    for j in range(4):
                        tmp[j] = T.Cast("float16", sub[0, j])
                    B[vi, vj] = T.Cast("float32", tmp[0]) + T.Cast("float32", tmp[3])
    ''')
    assert P.block_features().script() == expected


def test_lowered_program_of_seed_001():
    expected = text('''
        # from tvm.script import ir as I
        # from tvm.script import tir as T

        @I.ir_module
        class Module:
            @T.prim_func
            def main(a: T.Buffer((128,), "float32"), b: T.Buffer((128,), "float32"), c: T.Buffer((128,), "float32")):
                T.func_attr({"from_legacy_te_schedule": True, "tir.noalias": True})
                for i_outer in range(16):
                    cse_var_1: T.int32 = i_outer * 8
                    c[cse_var_1:cse_var_1 + 8] = a[cse_var_1:cse_var_1 + 8] + b[cse_var_1:cse_var_1 + 8]
    ''')
    assert P.lowered_vector_add().script() == expected


def test_lowered_gpu_statements():
    expected = text('''
        # from tvm.script import tir as T

        @T.prim_func
        def main(A: T.Buffer((256,), "float32")):
            T.func_attr({"target": "cuda", "tir.noalias": True})
            blockIdx_x = T.launch_thread("blockIdx.x", 4)
            threadIdx_x = T.launch_thread("threadIdx.x", 64)
            A_shared = T.allocate([64], "float32", "shared")
            A_shared_1 = T.decl_buffer((64,), data=A_shared, scope="shared")
            A_shared_1[threadIdx_x] = A[blockIdx_x * 64 + threadIdx_x]
            T.call_extern("int32", "__syncthreads")
            if threadIdx_x < 32:
                A[blockIdx_x * 64 + threadIdx_x] = A_shared_1[threadIdx_x] * T.float32(2.0)
            else:
                A[blockIdx_x * 64 + threadIdx_x] = A_shared_1[threadIdx_x]
            n: T.int32 = threadIdx_x % 3
            assert n >= 0, "n is negative"
            while n > 100:
                A[n] = T.float32(0.0)
    ''')
    assert P.lowered_gpu().script() == expected


def test_scoped_statement_not_last_prints_as_with():
    A = decl_buffer((4,), "int32", name="A")
    x = Var("x")
    body = SeqStmt([LetStmt(x, 3, BufferStore(A, x, [0])), BufferStore(A, 1, [1])])
    lines = P.func([A], body, attrs={}).script().splitlines()
    assert lines[4:7] == ["    with T.LetStmt(3) as x:", "        A[0] = x", "    A[1] = 1"]


def test_symbolic_shape_prints_handle_match_buffer_and_size_var():
    expected = text('''
        # from tvm.script import tir as T

        @T.prim_func
        def main(a: T.handle):
            n = T.int32()
            A = T.match_buffer(a, (n, 4))
            for i, j in T.grid(n, 4):
                A[i, j] = A[i, j] * T.float32(2.0)
    ''')
    assert P.symbolic_shape().script() == expected


def test_name_clashes_are_made_unique_and_released_by_scope():
    expected = text('''
        # from tvm.script import tir as T

        @T.prim_func
        def main(A: T.Buffer((8, 8), "float32"), A_1: T.Buffer((8,), "float32")):
            for i, i_1 in T.grid(8, 8):
                A[i, i_1] = A_1[i] + A_1[i_1]
            for i in range(8):
                T_1: T.int32 = i + 1
                A_1[i] = T.Cast("float32", T_1)
    ''')
    assert P.name_clashes().script() == expected


@pytest.mark.parametrize("build, expected", [
    (lambda i, j: (i + 1) * 4 // 2, "(i + 1) * 4 // 2"),
    (lambda i, j: i - (j - 1), "i - (j - 1)"),
    (lambda i, j: i - j - 1, "i - j - 1"),
    (lambda i, j: i * (j * 2), "i * (j * 2)"),
    (lambda i, j: floordiv(i, floordiv(j, 2)), "i // (j // 2)"),
    (lambda i, j: floormod(i + j, 8), "(i + j) % 8"),
    (lambda i, j: op.all(i < j, op.any(i == 0, j > 1)), "i < j and (i == 0 or j > 1)"),
    (lambda i, j: op.any(op.all(i < j, j < 4), i > 8), "i < j and j < 4 or i > 8"),
    (lambda i, j: (i < j).equal(j < i), "(i < j) == (j < i)"),
    (lambda i, j: ~(i < j), "not i < j"),
    (lambda i, j: op.all(~(i < j), j > 0), "not i < j and j > 0"),
    (lambda i, j: i * -1, "i * -1"),
    (lambda i, j: IntImm("int64", 3) + Cast("int64", i), "T.int64(3) + T.Cast(\"int64\", i)"),
    (lambda i, j: IntImm("bool", 1), "T.bool(True)"),
    (lambda i, j: FloatImm("float16", 0.5), "T.float16(0.5)"),
    (lambda i, j: FloatImm("float32", float("-inf")), 'T.float32("-inf")'),
    (lambda i, j: op.max(i, j) + op.min(i, 0), "T.max(i, j) + T.min(i, 0)"),
    (lambda i, j: op.exp(Cast("float32", i)), 'T.exp(T.Cast("float32", i))'),
    (lambda i, j: op.if_then_else(i < j, i, j), "T.if_then_else(i < j, i, j)"),
    (lambda i, j: op.reinterpret("float32", i), 'T.reinterpret("float32", i)'),
    (lambda i, j: op.call_llvm_pure_intrin("int32x16", "llvm.x86.avx512.vpdpbusd.512", i, j),
     'T.call_llvm_pure_intrin("int32x16", "llvm.x86.avx512.vpdpbusd.512", i, j)'),
])
def test_expression_text(build, expected):
    i, j = Var("i"), Var("j")
    assert script(build(i, j)) == expected


def test_two_constants_keep_their_node_form():
    from tensorize.ir.expr import Add, Mul
    assert script(Add(IntImm("int32", 1), IntImm("int32", 2))) == "T.Add(1, 2)"
    assert script(Mul(Var("x"), IntImm("int32", 2)) + 1) == "x * 2 + 1"


def test_standalone_statement_defines_free_variables_and_buffers():
    A = decl_buffer((8,), "float32", name="A")
    n, i = Var("n"), Var("i")
    stmt = For(i, 0, n, body=BufferStore(A, FloatImm("float32", 1.0), [i]))
    assert stmt.script() == text('''
        # from tvm.script import tir as T

        n = T.int32()
        A = T.Buffer((8,), "float32")
        for i in range(n):
            A[i] = T.float32(1.0)
    ''')


def test_evaluate_prints_bare_call_or_T_evaluate():
    x = Var("x")
    assert script(Evaluate(op.call_extern("int32", "f", x))).endswith('\nx = T.int32()\nT.call_extern("int32", "f", x)')
    assert script(Evaluate(x + 1)).endswith("T.evaluate(x + 1)")


def test_show_prints_the_script(capsys):
    mod = P.vector_add()
    mod.show()
    assert capsys.readouterr().out == mod.script() + "\n"


def test_unknown_option_is_an_error():
    with pytest.raises(TypeError, match="unknown option"):
        script(P.vector_add(), colour=True)


def test_printing_1000_statements_is_fast():
    f = P.many_statements(1000)
    best = min(_timed(lambda: f.script()) for _ in range(3))
    assert best < 0.5, f"printing 1,000 statements took {best:.3f} s"


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def test_block_without_realize_zero_dim_buffer_and_pointer_variable():
    from tensorize.ir.expr import IterVar, Range
    from tensorize.ir.stmt import Block, DeclBuffer
    A = decl_buffer((), "float32", name="A")
    B = decl_buffer((4,), "float32", name="B")
    vi = Var("vi")
    block = Block([IterVar(Range(0, 4), vi, IterVar.DataPar)], [], [], "b", BufferStore(A, B[vi], []))
    assert block.script().splitlines()[4:] == ['with T.block("b", no_realize=True):', "    vi = T.axis.spatial(4)",
                                               "    T.reads()", "    T.writes()", "    A[()] = B[vi]"]
    decl = DeclBuffer(B, BufferStore(B, A[()], [0]))
    assert decl.script().splitlines()[2:] == ['A = T.Buffer((), "float32")', 'B = T.handle("float32", "global")',
                                              "B_1 = T.decl_buffer((4,), data=B)", "B_1[0] = A[()]"]


def test_module_functions_print_sorted_by_name():
    from tensorize.ir.function import PrimFunc
    f = PrimFunc([], Evaluate(0))
    mod = tvm.IRModule({"z": f.with_attr("global_symbol", "z"), "a": f.with_attr("global_symbol", "a")})
    lines = mod.script().splitlines()
    assert [l.strip() for l in lines if l.strip().startswith("def ")] == ["def a():", "def z():"]


def test_printing_an_unknown_node_names_it():
    from tensorize.ir.node import Node

    class Strange(Node):
        __slots__ = ()

    with pytest.raises(TypeError, match="cannot print a Strange"):
        script(Strange())
