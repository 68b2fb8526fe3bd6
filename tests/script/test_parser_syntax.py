"""Alternative spellings give equal IR; the wider TVMScript syntax parses into the right nodes."""
import pytest

import tensorize as tvm
from tensorize.ir import structural_equal
from tensorize.ir.expr import (
    Broadcast, BufferLoad, Call, Cast, FloatImm, IntImm, IterVar, Max, Ramp, Select, StringImm, Var,
)
from tensorize.ir.stmt import (
    Allocate, AssertStmt, AttrStmt, BlockRealize, BufferStore, DeclBuffer, Evaluate, For, ForKind, IfThenElse,
    LetStmt, SeqStmt,
)
from tensorize.script import ir as I
from tensorize.script import tir as T

M = 16
DTYPE = "float32"


def inner_block(func):
    """The first non-root block of ``func``."""
    stmt = func.body.block.body
    while not isinstance(stmt, BlockRealize):
        stmt = stmt.seq[0] if isinstance(stmt, SeqStmt) else stmt.body
    return stmt.block


def test_block_and_sblock_are_the_same():
    @T.prim_func
    def a(A: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("A"):
                vi = T.axis.spatial(8, i)
                T.block_attr({"k": 1})
                A[vi] = T.float32(0)

    @T.prim_func
    def b(A: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.sblock("A"):
                vi = T.axis.spatial(8, i)
                T.sblock_attr({"k": 1})
                A[vi] = T.float32(0)

    assert structural_equal(a.without_attr("global_symbol"), b.without_attr("global_symbol"))
    assert inner_block(a).annotations == {"k": 1}


def test_buffer_subscript_and_call_spellings_and_range_vs_serial():
    @T.prim_func
    def a(A: T.Buffer[(8, 4), "float32"], B: T.Buffer[8, "float32"]):
        for i in range(8):
            for j in range(0, 4):
                A[i, j] = B[i]

    @T.prim_func
    def b(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.serial(8):
            for j in T.serial(0, 4):
                A[i, j] = B[i]

    tvm.ir.assert_structural_equal(a.without_attr("global_symbol"), b.without_attr("global_symbol"))


def test_python_scope_names_resolve():
    @T.prim_func
    def f(A: T.Buffer((M, M * 2), DTYPE)):
        for i, j in T.grid(M, M * 2):
            A[i, j] = T.float32(M // 4)

    buf = f.buffer_map[f.params[0]]
    assert [int(s) for s in buf.shape] == [16, 32] and buf.dtype == "float32"
    store = f.body.body.body
    assert isinstance(store.value, FloatImm) and store.value.value == 4.0


def test_closure_values_resolve():
    n = 12

    def make():
        @T.prim_func
        def f(A: T.Buffer((n,), "int32")):
            for i in range(n):
                A[i] = i * n

        return f

    f = make()
    assert int(f.body.extent) == 12


def test_loop_kinds_and_annotations():
    @T.prim_func
    def f(A: T.Buffer((64,), "float32")):
        for i in T.parallel(4):
            for j in T.unroll(2, annotations={"pragma_x": 1}):
                for k in T.vectorized(8):
                    A[i * 16 + j * 8 + k] = T.float32(1)
        for t in T.thread_binding(64, thread="threadIdx.x"):
            A[t] = T.float32(2)

    first, second = f.body.seq
    assert first.kind == ForKind.PARALLEL and first.body.kind == ForKind.UNROLLED
    assert first.body.annotations == {"pragma_x": 1}
    assert first.body.body.kind == ForKind.VECTORIZED
    assert second.kind == ForKind.THREAD_BINDING and second.thread_binding.thread_tag == "threadIdx.x"


def test_axis_kinds_where_and_explicit_regions():
    @T.prim_func
    def f(A: T.Buffer((10, 16), "float32"), B: T.Buffer((10,), "float32")):
        for io, ii, k in T.grid(3, 4, 16):
            with T.block("B"):
                vi = T.axis.S(10, io * 4 + ii)
                vk = T.axis.R(16, k)
                T.where(io * 4 + ii < 10)
                T.reads(A[vi, 0:16])
                T.writes(B[vi])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]

    realize = f.body.block.body.body.body.body
    block = realize.block
    assert [iv.iter_type for iv in block.iter_vars] == [IterVar.DataPar, IterVar.CommReduce]
    assert not isinstance(realize.predicate, IntImm)
    assert int(block.reads[0].region[1].extent) == 16
    assert int(block.reads[0].region[0].extent) == 1


def test_scan_and_opaque_axes_and_tuple_domain():
    @T.prim_func
    def f(A: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("A"):
                vi = T.axis.scan(8, i)
                vo = T.axis.opaque((0, 8), i)
                A[vi] = A[vo]

    kinds = [iv.iter_type for iv in inner_block(f).iter_vars]
    assert kinds == [IterVar.Ordered, IterVar.Opaque]


def test_inferred_regions_relax_inner_loops():
    @T.prim_func
    def f(A: T.Buffer((64, 64), "float32"), B: T.Buffer((16, 64), "float32")):
        for io in range(16):
            with T.block("B"):
                vo = T.axis.spatial(16, io)
                for ii, j in T.grid(4, 64):
                    B[vo, j] = B[vo, j] + A[vo * 4 + ii, j]

    block = inner_block(f)
    # As TVM: a block without T.init lists the buffer it updates among its reads too.
    (acc, read), (write,) = block.reads, block.writes
    assert acc.buffer.name == "B" and int(acc.region[1].extent) == 64
    assert read.buffer.name == "A"
    assert int(read.region[0].extent) == 4 and int(read.region[1].extent) == 64
    assert structural_equal(read.region[0].min, block.iter_vars[0].var * 4)
    assert write.buffer.name == "B" and int(write.region[1].extent) == 64


def test_nested_blocks_match_buffer_and_block_alloc():
    @T.prim_func
    def f(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(4):
            with T.block("outer"):
                vi = T.axis.spatial(4, i)
                scratch = T.sblock_alloc_buffer((4, 16), "float32", scope="local")
                for ii, j in T.grid(4, 16):
                    with T.block("load"):
                        vii, vj = T.axis.remap("SS", [ii, j])
                        scratch[vii, vj] = A[vi * 4 + vii, vj]
                for ii in range(4):
                    with T.block("store"):
                        vii = T.axis.spatial(4, ii)
                        sub = T.match_buffer(C[vi * 4 + vii, 0:16], (16,), "float32")
                        for j in range(16):
                            sub[j] = scratch[vii, j]

    outer = inner_block(f)
    assert [b.name for b in outer.alloc_buffers] == ["scratch"] and outer.alloc_buffers[0].scope() == "local"
    assert [r.buffer.name for r in outer.reads] == ["A"] and [r.buffer.name for r in outer.writes] == ["C"]
    assert int(outer.reads[0].region[0].extent) == 4 and int(outer.writes[0].region[0].extent) == 4
    store = outer.body.seq[1].body.block
    assert store.match_buffers[0].buffer.name == "sub"
    assert [r.buffer.name for r in store.writes] == ["C"]


def test_statements_let_if_evaluate_allocate_attr_assert():
    @T.prim_func
    def f(a: T.handle, n: T.int32):
        A = T.match_buffer(a, (n,), "float32", offset_factor=1)
        for i_outer in range(n // 8):
            cse_var_1: T.int32 = i_outer * 8
            x = cse_var_1 + 1
            if x < n:
                A[x] = T.float32(1)
            else:
                T.evaluate(T.call_extern("int32", "puts", 0))
        buf = T.allocate([16], "float32", "global")
        T.attr(buf, "storage_alignment", 64)
        B = T.Buffer((16,), "float32", data=buf)
        assert n > 0, "n must be positive"
        B[0] = T.float32(0)

    loop, alloc = f.body.seq
    let = loop.body
    assert isinstance(let, LetStmt) and let.var.name == "cse_var_1" and let.var.dtype == "int32"
    assert isinstance(let.body, LetStmt) and isinstance(let.body.body, IfThenElse)
    assert isinstance(let.body.body.else_case, Evaluate)
    assert isinstance(alloc, Allocate) and alloc.dtype == "float32"
    attr = alloc.body
    assert isinstance(attr, AttrStmt) and attr.node is alloc.buffer_var
    assertion = attr.body
    assert isinstance(assertion, AssertStmt)
    store = assertion.body
    assert isinstance(store, BufferStore) and store.buffer.data is alloc.buffer_var
    assert f.params[1].dtype == "int32" and f.buffer_map[f.params[0]].elem_offset is not None


def test_vector_slices_and_ramp_vload():
    @T.prim_func
    def f(a: T.Buffer((128,), "float32"), c: T.Buffer((128,), "float32"), d: T.Buffer((4,), "int8")):
        for i_outer in range(16):
            cse_var_1: T.int32 = i_outer * 8
            c[cse_var_1:cse_var_1 + 8] = a[cse_var_1:cse_var_1 + 8] + a[T.ramp(cse_var_1, 1, 8)]
        T.evaluate(T.reinterpret("int32", d.vload([0], "int8x4")))

    store = f.body.seq[0].body.body
    assert isinstance(store.indices[0], Ramp) and store.indices[0].lanes == 8
    assert store.value.dtype == "float32x8"
    load = f.body.seq[1].value.args[0]
    assert isinstance(load, BufferLoad) and load.dtype == "int8x4"


def test_expression_builders_work_in_plain_python():
    x = Var("x", "float32")
    assert isinstance(T.float32(1), FloatImm) and T.float32(1).value == 1.0
    assert isinstance(T.int64(3), IntImm) and T.int64(3).dtype == "int64"
    assert T.bool(True).dtype == "bool"
    assert isinstance(T.max(x, T.float32(0)), Max)
    assert isinstance(T.Cast("float16", x), Cast) and T.cast(x, "float16").dtype == "float16"
    assert isinstance(T.Select(x > 0, x, T.float32(0)), Select)
    assert T.if_then_else(x > 0, x, T.float32(0)).op.name == "tir.if_then_else"
    assert isinstance(T.broadcast(x, 4), Broadcast) and T.broadcast(x, 4).dtype == "float32x4"
    assert T.exp(x).op.name == "tir.exp" and T.sigmoid(x).dtype == "float32"
    assert T.float32x4 is T.float32x4 and T.float32x4(0).dtype == "float32x4"
    buf = T.Buffer((4, 4), "int8")
    assert buf.dtype == "int8" and [int(s) for s in buf.shape] == [4, 4]


def test_llvm_intrinsic_call_forms_are_equal():
    @T.prim_func
    def tvm_form(A: T.Buffer((16,), "int32"), B: T.Buffer((64,), "uint8"), C: T.Buffer((64,), "int8")):
        A[T.ramp(0, 1, 16)] = T.call_llvm_pure_intrin(
            "int32x16", T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"), T.uint32(3),
            A[T.ramp(0, 1, 16)], T.reinterpret("int32x16", B[T.ramp(0, 1, 64)]),
            T.reinterpret("int32x16", C[T.ramp(0, 1, 64)]))

    @T.prim_func
    def short_form(A: T.Buffer((16,), "int32"), B: T.Buffer((64,), "uint8"), C: T.Buffer((64,), "int8")):
        A[0:16] = T.call_llvm_pure_intrin(
            "int32x16", "llvm.x86.avx512.vpdpbusd.512",
            A[0:16], T.reinterpret("int32x16", B[0:64]), T.reinterpret("int32x16", C[0:64]))

    tvm.ir.assert_structural_equal(tvm_form.without_attr("global_symbol"), short_form.without_attr("global_symbol"))
    call = tvm_form.body.value
    assert isinstance(call, Call) and isinstance(call.args[0], StringImm) and len(call.args) == 4


def test_func_attr_spellings_normalize():
    @T.prim_func(private=True)
    def a(A: T.Buffer((4,), "float32")):
        T.func_attr({"tirx.noalias": T.bool(True)})
        A[0] = T.float32(0)

    @T.prim_func(s_tir=True)
    def b(A: T.Buffer((4,), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        A[0] = T.float32(0)

    assert a.attrs == {"tir.noalias": True}
    assert b.attrs == {"global_symbol": "main", "tir.noalias": True}


def test_public_function_gets_its_name_as_global_symbol():
    @T.prim_func
    def my_kernel(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(0)

    assert my_kernel.attrs == {"global_symbol": "my_kernel"}


def test_module_keeps_declaration_order_and_calls_between_cells():
    @I.ir_module
    class Mod:
        @T.prim_func
        def second(A: T.Buffer((4,), "float32")):
            A[0] = T.float32(0)

        @T.prim_func
        def first(A: T.Buffer((4,), "float32")):
            A[0] = T.float32(1)

    assert type(Mod) is tvm.ir.IRModule
    assert Mod.function_names() == ["second", "first"]


def test_tvm_access_ptr_type_annotation_address_of_and_assume():
    @T.prim_func
    def f(A: T.Buffer((16,), "float16")):
        T.evaluate(T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 16, 1))
        T.evaluate(T.address_of(A[0]))
        T.evaluate(T.assume(A[0] > T.float16(0)))

    ptr, addr, assume = f.body.seq
    assert ptr.value.op.name == "tir.tvm_access_ptr" and ptr.value.args[0].dtype == "float16"
    assert addr.value.op.name == "tir.address_of" and assume.value.op.name == "tir.assume"


def test_launch_thread_and_decl_buffer_and_let_with():
    @T.prim_func
    def f(A: T.Buffer((32,), "float32")):
        tx = T.launch_thread("threadIdx.x", 32)
        S = T.decl_buffer((32,), "float32", scope="shared")
        with T.LetStmt(tx * 1) as y:
            S[y] = A[y]

    attr = f.body
    assert isinstance(attr, AttrStmt) and attr.attr_key == "thread_extent"
    assert attr.node.thread_tag == "threadIdx.x" and attr.node.var.name == "tx"
    alloc = attr.body
    assert isinstance(alloc, Allocate) and isinstance(alloc.body, DeclBuffer)
    assert alloc.body.buffer.scope() == "shared"
    assert isinstance(alloc.body.body, LetStmt)
