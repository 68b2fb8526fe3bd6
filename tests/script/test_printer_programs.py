"""Programs built by hand with the IR constructors, shared by the printer and round-trip tests.

Each builder returns a fresh IRModule or PrimFunc; the tests here check that each one prints."""
from __future__ import annotations

import pytest

from tensorize.ir import op
from tensorize.ir.buffer import decl_buffer
from tensorize.ir.expr import logical_not, truncdiv, truncmod
from tensorize.ir.expr import (
    Broadcast, Call, Cast, FloatImm, IntImm, IterVar, Op, PointerType, Ramp, Range, Select, StringImm, Var,
)
from tensorize.ir.function import IRModule, PrimFunc
from tensorize.ir.stmt import (
    Allocate, AssertStmt, AttrStmt, Block, BlockRealize, BufferRegion, BufferStore, DeclBuffer, Evaluate, For,
    ForKind, IfThenElse, LetStmt, MatchBufferRegion, SeqStmt, While,
)

S, R = IterVar.DataPar, IterVar.CommReduce


def f32(v: float) -> FloatImm:
    return FloatImm("float32", v)


def func(params, body, name="main", attrs=None, private=False):
    """A PrimFunc over buffer parameters (or plain Vars), with the usual attributes."""
    handles = [b if isinstance(b, Var) else Var(b.name + "_handle", "handle") for b in params]
    buffer_map = {h: b for h, b in zip(handles, params) if not isinstance(b, Var)}
    attrs = dict(attrs if attrs is not None else {"tir.noalias": True})
    if not private:
        attrs["global_symbol"] = name
    return PrimFunc(handles, body, buffer_map=buffer_map, attrs=attrs)


def root(body, allocs=()):
    return BlockRealize([], True, Block([], [], [], "root", body, alloc_buffers=allocs))


def point(buffer, *idx):
    return BufferRegion.from_point(buffer, idx)


def vector_add() -> IRModule:
    A, B, C = (decl_buffer((128,), "float32", name=n) for n in "ABC")
    i, vi = Var("i"), Var("vi")
    block = Block([IterVar(Range(0, 128), vi, S)], [point(A, vi), point(B, vi)], [point(C, vi)], "C",
                  BufferStore(C, A[vi] + B[vi], [vi]))
    body = root(For(i, 0, 128, body=BlockRealize([i], True, block)))
    return IRModule({"main": func([A, B, C], body)})


def mm_relu() -> IRModule:
    A, B, C = (decl_buffer((128, 128), "float32", name=n) for n in "ABC")
    Y = decl_buffer((128, 128), "float32", name="Y")
    i, j, k, vi, vj, vk = (Var(n) for n in ("i", "j", "k", "vi", "vj", "vk"))
    ivs = [IterVar(Range(0, 128), vi, S), IterVar(Range(0, 128), vj, S), IterVar(Range(0, 128), vk, R)]
    matmul = Block(ivs, [point(Y, vi, vj), point(A, vi, vk), point(B, vk, vj)], [point(Y, vi, vj)], "Y",
                   BufferStore(Y, Y[vi, vj] + A[vi, vk] * B[vk, vj], [vi, vj]),
                   init=BufferStore(Y, f32(0.0), [vi, vj]))
    nest1 = For(i, 0, 128, body=For(j, 0, 128, body=For(k, 0, 128, body=BlockRealize([i, j, k], True, matmul))))
    i2, j2, vi2, vj2 = Var("i"), Var("j"), Var("vi"), Var("vj")
    relu = Block([IterVar(Range(0, 128), vi2, S), IterVar(Range(0, 128), vj2, S)], [point(Y, vi2, vj2)],
                 [point(C, vi2, vj2)], "C", BufferStore(C, op.max(Y[vi2, vj2], f32(0.0)), [vi2, vj2]))
    nest2 = For(i2, 0, 128, body=For(j2, 0, 128, body=BlockRealize([i2, j2], True, relu)))
    return IRModule({"mm_relu": func([A, B, C], root(SeqStmt([nest1, nest2]), [Y]), name="mm_relu")})


def loops_every_kind() -> PrimFunc:
    A = decl_buffer((4, 8, 16, 32, 64), "float32", name="A")
    vs = [Var(n) for n in ("a", "b", "c", "d", "e", "f")]
    tx = IterVar(Range(0, 64), Var("threadIdx.x"), IterVar.ThreadIndex, "threadIdx.x")
    store = BufferStore(A, f32(1.0), [vs[0], vs[1], vs[2], vs[3], vs[4]])
    inner = For(vs[4], 0, 64, ForKind.THREAD_BINDING, store, thread_binding=tx)
    inner = For(vs[3], 0, 32, ForKind.UNROLLED, inner)
    inner = For(vs[2], 0, 16, ForKind.VECTORIZED, inner)
    inner = For(vs[1], 2, 6, ForKind.SERIAL, inner)  # range(2, 8)
    inner = For(vs[0], 0, 4, ForKind.PARALLEL, inner)
    annotated = For(vs[5], 0, 4, ForKind.SERIAL, BufferStore(A, f32(2.0), [vs[5], 0, 0, 0, 0]),
                    annotations={"pragma_unroll_explicit": 1})
    return func([A], SeqStmt([inner, annotated]), attrs={})


def block_features() -> PrimFunc:
    """A block with T.where, T.match_buffer, T.alloc_buffer, T.block_attr and a region read."""
    A = decl_buffer((130, 16), "float32", name="A")
    B = decl_buffer((32, 4), "float32", name="B")
    io, ii, jj, vi, vj = Var("io"), Var("ii"), Var("jj"), Var("vi"), Var("vj")
    sub = decl_buffer((4, 4), "float32", name="sub", strides=(16, 1), elem_offset=Var("sub_off"), offset_factor=1)
    tmp = decl_buffer((4,), "float16", name="tmp", scope="shared")
    j = Var("j")
    body = SeqStmt([
        For(j, 0, 4, body=BufferStore(tmp, Cast("float16", sub[0, j]), [j])),
        BufferStore(B, Cast("float32", tmp[0]) + Cast("float32", tmp[3]), [vi, vj]),
    ])
    block = Block([IterVar(Range(0, 32), vi, S), IterVar(Range(0, 4), vj, S)],
                  [BufferRegion(A, [Range.from_min_extent(vi * 4, 4), Range.from_min_extent(0, 16)])],
                  [point(B, vi, vj)], "compute", body, alloc_buffers=[tmp],
                  match_buffers=[MatchBufferRegion(sub, BufferRegion(A, [Range.from_min_extent(vi * 4, 4),
                                                                         Range.from_min_extent(vj * 4, 4)]))],
                  annotations={"meta_schedule.auto_tensorize": "dot_4x4"})
    realize = BlockRealize([io * 4 + ii, jj], io * 4 + ii < 32, block)
    loops = For(io, 0, 9, body=For(ii, 0, 4, body=For(jj, 0, 4, body=realize)))
    return func([A, B], root(loops))


def lowered_vector_add() -> IRModule:
    """Seed 001 after the custom vectorize pass: LetStmt and ramp accesses."""
    a, b, c = (decl_buffer((128,), "float32", name=n) for n in "abc")
    io, cse = Var("i_outer"), Var("cse_var_1")
    ramp = Ramp(cse, 1, 8)
    store = BufferStore(c, a[ramp] + b[ramp], [ramp])
    body = For(io, 0, 16, body=LetStmt(cse, io * 8, store))
    return IRModule({"main": func([a, b, c], body, attrs={"from_legacy_te_schedule": True, "tir.noalias": True})})


def lowered_gpu() -> PrimFunc:
    """Launch threads, an allocation with its buffer declaration, a sync call, if/else, let, assert, while."""
    A = decl_buffer((256,), "float32", name="A")
    bx = IterVar(Range(0, 4), Var("blockIdx.x"), IterVar.ThreadIndex, "blockIdx.x")
    tx = IterVar(Range(0, 64), Var("threadIdx.x"), IterVar.ThreadIndex, "threadIdx.x")
    shared_ptr = Var("A_shared", PointerType("float32", "shared"))
    shared = decl_buffer((64,), "float32", name="A_shared", data=shared_ptr, scope="shared")
    idx = bx.var * 64 + tx.var
    n = Var("n")
    body = SeqStmt([
        BufferStore(shared, A[idx], [tx.var]),
        Evaluate(Call("int32", Op.get("tir.call_extern"), [StringImm("__syncthreads")])),
        IfThenElse(tx.var < 32, BufferStore(A, shared[tx.var] * f32(2.0), [idx]),
                   BufferStore(A, shared[tx.var], [idx])),
        LetStmt(n, tx.var % 3, AssertStmt(n >= 0, StringImm("n is negative"),
                                          While(n > 100, BufferStore(A, f32(0.0), [n])))),
    ])
    body = DeclBuffer(shared, body)
    body = Allocate(shared_ptr, "float32", [64], True, body)
    body = AttrStmt(tx, "thread_extent", 64, body)
    body = AttrStmt(bx, "thread_extent", 4, body)
    return func([A], body, attrs={"tir.noalias": True, "target": "cuda"})


def expression_zoo() -> PrimFunc:
    """Every kind of expression the printer knows, stored into buffers."""
    X = decl_buffer((16,), "float32", name="X")
    I8 = decl_buffer((64,), "int8", name="I8")
    O = decl_buffer((16,), "int32", name="O")
    V = decl_buffer((16,), "int32x16", name="V")
    i = Var("i")
    j64 = Var("j", "int64")
    x = X[i]
    vec = Call("int32x16", Op.get("tir.call_llvm_pure_intrin"),
               [StringImm("llvm.x86.avx512.vpdpbusd.512"), V[0], op.reinterpret("int32x16", I8[Ramp(0, 1, 64)]),
                Broadcast(IntImm("int32", 7), 16)])
    stores = [
        BufferStore(X, op.exp(x) + op.sqrt(x) * f32(0.5) - op.max(x, f32(-1.5)) / op.min(x, f32(3.0)), [i]),
        BufferStore(X, op.if_then_else(i < 8, x, f32(float("inf"))), [i]),
        BufferStore(X, Select(op.all(i >= 2, i < 10), x, Cast("float32", i)), [i]),
        BufferStore(O, (i + 1) * (i - 2) // 3 % 5 - truncdiv(i, 4) + truncmod(i, 3), [i]),
        BufferStore(O, Cast("int32", j64 * IntImm("int64", 3) + IntImm("int64", 1)), [i]),
        BufferStore(O, i - (2 - i) - (-1) * i, [i]),
        BufferStore(O, Select(op.any((i < 2).equal(i > 3), logical_not(i.equal(4))), 1, 0), [i]),
        BufferStore(O, Cast("int32", I8[i * 4]) << 2 | IntImm("int32", 1), [i]),
        BufferStore(V, vec, [i]),
    ]
    return func([X, I8, O, V, j64], For(i, 0, 16, body=SeqStmt(stores)), attrs={})


def symbolic_shape() -> PrimFunc:
    """A buffer whose shape is a variable: a handle parameter with ``T.match_buffer`` and ``n = T.int32()``."""
    n = Var("n")
    A = decl_buffer((n, 4), "float32", name="A")
    i, j = Var("i"), Var("j")
    body = For(i, 0, n, body=For(j, 0, 4, body=BufferStore(A, A[i, j] * f32(2.0), [i, j])))
    a = Var("a", "handle")
    return PrimFunc([a], body, buffer_map={a: A}, attrs={"global_symbol": "main"})


def name_clashes() -> PrimFunc:
    """Different variables and buffers sharing name hints."""
    A = decl_buffer((8, 8), "float32", name="A")
    A2 = decl_buffer((8,), "float32", name="A")
    i1, i2, i3 = Var("i"), Var("i"), Var("i")
    T_var = Var("T")
    body = SeqStmt([
        For(i1, 0, 8, body=For(i2, 0, 8, body=BufferStore(A, A2[i1] + A2[i2], [i1, i2]))),
        For(i3, 0, 8, body=LetStmt(T_var, i3 + 1, BufferStore(A2, Cast("float32", T_var), [i3]))),
    ])
    return func([A, A2], body, attrs={})


def many_statements(n: int = 1000) -> PrimFunc:
    """``n`` buffer stores in one function (for timing)."""
    A = decl_buffer((n,), "float32", name="A")
    B = decl_buffer((n,), "float32", name="B")
    return func([A, B], SeqStmt([BufferStore(B, A[k] * f32(2.0) + f32(1.0), [k]) for k in range(n)]))


BUILDERS = [vector_add, mm_relu, loops_every_kind, block_features, lowered_vector_add, lowered_gpu, expression_zoo,
            symbolic_shape, name_clashes, many_statements]


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_every_program_prints(builder):
    text = builder().script()
    assert text.startswith("# from tvm.script import")
    assert "object at 0x" not in text
