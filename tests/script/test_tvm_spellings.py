"""Older TVM spellings of intrinsic calls parse to the same IR as the current ones, so intrinsic
code ported from TVM works unchanged."""
import tensorize as tvm
from tensorize.script import tir as T

OLD = '''
@T.prim_func
def f(A: T.Buffer((4,), "uint8"), B: T.Buffer((1,), "int32")):
    with T.block("root"):
        T.reads(A[0:4])
        T.writes(B[0])
        B[0] = T.reinterpret(A.vload([0], "uint8x4"), dtype="int32")
        B[0] = T.call_llvm_pure_intrin(T.llvm_lookup_intrinsic_id("llvm.ctpop.i32"), T.uint32(1), B[0], dtype="int32")
'''

NEW = '''
@T.prim_func
def f(A: T.Buffer((4,), "uint8"), B: T.Buffer((1,), "int32")):
    with T.block("root"):
        T.reads(A[0:4])
        T.writes(B[0])
        B[0] = T.reinterpret("int32", A.vload([0], "uint8x4"))
        B[0] = T.call_llvm_pure_intrin("int32", "llvm.ctpop.i32", B[0])
'''


def test_keyword_dtype_spellings_match_the_current_ones():
    old, new = tvm.script.from_source(OLD), tvm.script.from_source(NEW)
    tvm.ir.assert_structural_equal(old, new)
    assert tvm.script.from_source(new.script()) is not None


def test_reinterpret_from_python():
    x = T.uint32(7)
    assert T.reinterpret(x, dtype="int32").dtype == "int32"
    assert T.reinterpret("float32", x).dtype == "float32"
