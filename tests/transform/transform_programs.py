"""Small hand-built TensorIR programs shared by the transform tests (independent of the parser)."""
from tensorize.ir.buffer import decl_buffer
from tensorize.ir.expr import IterVar, Range, Var
from tensorize.ir.function import PrimFunc
from tensorize.ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, ForKind, SeqStmt


def func_of(buffers, body, name="main"):
    return PrimFunc([b.data for b in buffers], body, buffer_map={b.data: b for b in buffers},
                    attrs={"global_symbol": name, "tir.noalias": True})


def root(body, alloc=()):
    return BlockRealize((), True, Block((), (), (), "root", body, alloc_buffers=alloc))


def matmul(n=64, dtype="float32", acc_dtype=None):
    """C[i, j] = sum_k A[i, k] * B[k, j] with a reduction block and an init."""
    acc_dtype = acc_dtype or dtype
    A, B = decl_buffer((n, n), dtype, "A"), decl_buffer((n, n), dtype, "B")
    C = decl_buffer((n, n), acc_dtype, "C")
    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    ivs = [IterVar(Range(0, n), vi, IterVar.DataPar), IterVar(Range(0, n), vj, IterVar.DataPar),
           IterVar(Range(0, n), vk, IterVar.CommReduce)]
    from tensorize.ir.expr import cast, make_const

    update = BufferStore(C, C[vi, vj] + cast(acc_dtype, A[vi, vk]) * cast(acc_dtype, B[vk, vj]), [vi, vj])
    block = Block(ivs, [BufferRegion.from_point(A, [vi, vk]), BufferRegion.from_point(B, [vk, vj])],
                  [BufferRegion.from_point(C, [vi, vj])], "C", update,
                  init=BufferStore(C, make_const(acc_dtype, 0), [vi, vj]))
    body = For(i, 0, n, body=For(j, 0, n, body=For(k, 0, n, body=BlockRealize([i, j, k], True, block))))
    return func_of([A, B, C], root(body))


def two_stage(n=16, m=8):
    """B = A * 2 into a root-allocated intermediate, then C = B + 1, both under one outer loop
    (the intermediate's allocation moves into the loop and compacts to one row)."""
    A, C = decl_buffer((n, m), "float32", "A"), decl_buffer((n, m), "float32", "C")
    Bt = decl_buffer((n, m), "float32", "B")
    i, j, j2 = Var("i"), Var("j"), Var("j2")
    vi, vj, wi, wj = Var("vi"), Var("vj"), Var("wi"), Var("wj")
    sp = lambda v, e: IterVar(Range(0, e), v, IterVar.DataPar)  # noqa: E731
    b1 = Block([sp(vi, n), sp(vj, m)], [BufferRegion.from_point(A, [vi, vj])], [BufferRegion.from_point(Bt, [vi, vj])],
               "B", BufferStore(Bt, A[vi, vj] * 2.0, [vi, vj]))
    b2 = Block([sp(wi, n), sp(wj, m)], [BufferRegion.from_point(Bt, [wi, wj])], [BufferRegion.from_point(C, [wi, wj])],
               "C", BufferStore(C, Bt[wi, wj] + 1.0, [wi, wj]))
    body = For(i, 0, n, body=SeqStmt([For(j, 0, m, body=BlockRealize([i, j], True, b1)),
                                      For(j2, 0, m, body=BlockRealize([i, j2], True, b2))]))
    return func_of([A, C], root(body, alloc=[Bt])), Bt


def vector_add(n=128, kind=ForKind.SERIAL):
    a, b, c = (decl_buffer((n,), "float32", x) for x in "abc")
    i = Var("i")
    return func_of([a, b, c], For(i, 0, n, kind, BufferStore(c, a[i] + b[i], [i])))
