"""Every CPU code cell of seeds 000, 001 and 003, run as the tutorials write it (imports changed to
tensorize), with what the cells print compared to what the seeds show.

* arrays and TVMScript text printed in the current TVM style (seeds 001, 003) are compared exactly
  (``T.sblock`` read as ``T.block``, the spelling we print);
* seed 000 prints an older TVMScript style (``T.Buffer[8, "float32"]``, ``T.serial``): its text
  (indentation restored) is parsed and compared with what we print by structure;
* ``<class '...'>`` prints are compared by class name (``IRModule``, ``Schedule``, ``Module``);
* the 1024^3 matmul cells of seed 003 run at 128^3 and are checked against numpy;
* the CUDA cells of seed 000 compile with nvcc; they run only where cupy sees a GPU.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from tensorize.ir.structural import assert_structural_equal
from tensorize.runtime.cuda_module import gpu_available
from tensorize.script import from_source
from tests.programs import (
    SEED000_MODULE, SEED001_LOWERED_PRINTED, SEED001_VECTORIZED_PRINTED, SEED003_PARALLEL_PRINTED, SEED003_REORDER_PRINTED, SEED003_SPLIT_PRINTED, SEED003_VECTOR_ADD,
    SEED003_VECTOR_ADD_PRINTED,
)

from tests.seeds.notebook import Notebook, class_names, restore_indent  # noqa: E402

# Class names of the seeds' TVM objects and the analogous tensorize classes.
ANALOGOUS = {"IRModule": "IRModule", "Schedule": "Schedule", "OperatorModule": "Module", "Module": "Module"}


def assert_same_classes(printed: str, seed_printed: str) -> None:
    ours, theirs = class_names(printed), class_names(seed_printed)
    assert len(ours) == len(theirs) and ours == [ANALOGOUS[t] for t in theirs], (ours, theirs)


def assert_same_program(printed: str, seed_printed_flat: str) -> None:
    """Seed 000's older-style text, re-indented and parsed, equals what we printed, parsed."""
    ours = from_source(printed)
    theirs = from_source(restore_indent(seed_printed_flat))
    assert_structural_equal(_without_symbol(ours), _without_symbol(theirs))


def _without_symbol(mod):
    """Older TVM added ``global_symbol`` to every function of a module; current TVM does not."""
    from tensorize.ir.function import IRModule

    return IRModule({gv.name_hint: f.without_attr("global_symbol") if "global_symbol" in f.attrs else f
                      for gv, f in mod.functions.items()})


def exact(seed_text: str) -> str:
    """A seed's printed text as our printer writes it."""
    return seed_text.strip("\n").replace("T.sblock", "T.block") + "\n"


# ================================================================================================
# Seed 000: Blitz Course to TensorIR
# ================================================================================================

S000_IMPORTS = '''
import tvm
from tvm.ir.module import IRModule
from tvm.script import tir as T
import numpy as np
'''

S000_MODULE = SEED000_MODULE + '''
ir_module = MyModule
print(type(ir_module))
print(ir_module.script())
'''

S000_MODULE_OUT = '''
<class 'tvm.ir.module.IRModule'>
# from tvm.script import tir as T
@tvm.script.ir_module
class Module:
@T.prim_func
def main(A: T.Buffer[8, "float32"], B: T.Buffer[8, "float32"]):
# function attr dict
T.func_attr({"tir.noalias": True, "global_symbol": "main"})
# body
# with T.block("root")
for i in T.serial(8):
with T.block("B"):
vi = T.axis.spatial(8, i)
T.reads(A[vi])
T.writes(B[vi])
B[vi] = A[vi] + T.float32(1)
'''

S000_TE = '''
from tvm import te
A = te.placeholder((8,), dtype="float32", name="A")
B = te.compute((8,), lambda *i: A(*i) + 1.0, name="B")
func = te.create_prim_func([A, B])
ir_module_from_te = IRModule({"main": func})
print(ir_module_from_te.script())
'''

S000_TE_OUT = '''
# from tvm.script import tir as T
@tvm.script.ir_module
class Module:
@T.prim_func
def main(A: T.Buffer[8, "float32"], B: T.Buffer[8, "float32"]):
# function attr dict
T.func_attr({"global_symbol": "main", "tir.noalias": True})
# body
# with T.block("root")
for i0 in T.serial(8):
with T.block("B"):
v_i0 = T.axis.spatial(8, i0)
T.reads(A[v_i0])
T.writes(B[v_i0])
B[v_i0] = A[v_i0] + T.float32(1)
'''

S000_BUILD = '''
mod = tvm.build(ir_module, target="llvm") # The module for CPU backends.
print(type(mod))
'''
S000_BUILD_OUT = "<class 'tvm.driver.build_module.OperatorModule'>\n"

S000_RUN = '''
a = tvm.nd.array(np.arange(8).astype("float32"))
b = tvm.nd.array(np.zeros((8,)).astype("float32"))
mod(a, b)
print(a)
print(b)
'''
S000_RUN_OUT = '''[0. 1. 2. 3. 4. 5. 6. 7.]
[1. 2. 3. 4. 5. 6. 7. 8.]
'''

S000_SCHEDULE = '''
sch = tvm.tir.Schedule(ir_module)
print(type(sch))
'''
S000_SCHEDULE_OUT = "<class 'tvm.tir.schedule.schedule.Schedule'>\n"

S000_SPLIT = '''
# Get block by its name
block_b = sch.get_block("B")
# Get loops surrounding the block
(i,) = sch.get_loops(block_b)
# Tile the loop nesting.
i_0, i_1, i_2 = sch.split(i, factors=[2, 2, 2])
print(sch.mod.script())
'''
S000_SPLIT_OUT = '''
# from tvm.script import tir as T
@tvm.script.ir_module
class Module:
@T.prim_func
def main(A: T.Buffer[8, "float32"], B: T.Buffer[8, "float32"]):
# function attr dict
T.func_attr({"tir.noalias": True, "global_symbol": "main"})
# body
# with T.block("root")
for i_0, i_1, i_2 in T.grid(2, 2, 2):
with T.block("B"):
vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
T.reads(A[vi])
T.writes(B[vi])
B[vi] = A[vi] + T.float32(1)
'''

S000_REORDER = '''
sch.reorder(i_0, i_2, i_1)
print(sch.mod.script())
'''
S000_REORDER_OUT = '''
# from tvm.script import tir as T
@tvm.script.ir_module
class Module:
@T.prim_func
def main(A: T.Buffer[8, "float32"], B: T.Buffer[8, "float32"]):
# function attr dict
T.func_attr({"tir.noalias": True, "global_symbol": "main"})
# body
# with T.block("root")
for i_0, i_2, i_1 in T.grid(2, 2, 2):
with T.block("B"):
vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
T.reads(A[vi])
T.writes(B[vi])
B[vi] = A[vi] + T.float32(1)
'''

S000_BIND = '''
sch.bind(i_0, "blockIdx.x")
sch.bind(i_2, "threadIdx.x")
print(sch.mod.script())
'''
S000_BIND_OUT = '''
# from tvm.script import tir as T
@tvm.script.ir_module
class Module:
@T.prim_func
def main(A: T.Buffer[8, "float32"], B: T.Buffer[8, "float32"]):
# function attr dict
T.func_attr({"tir.noalias": True, "global_symbol": "main"})
# body
# with T.block("root")
for i_0 in T.thread_binding(2, thread="blockIdx.x"):
for i_2 in T.thread_binding(2, thread="threadIdx.x"):
for i_1 in T.serial(2):
with T.block("B"):
vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
T.reads(A[vi])
T.writes(B[vi])
B[vi] = A[vi] + T.float32(1)
'''


@pytest.fixture()
def seed000(tmp_path):
    nb = Notebook(tmp_path, "seed000")
    assert nb.run(S000_IMPORTS) == ""
    return nb


def test_seed000_module_cell(seed000):
    out = seed000.run(S000_MODULE)
    first, script = out.split("\n", 1)
    assert_same_classes(first, S000_MODULE_OUT)
    assert_same_program(script, S000_MODULE_OUT.split("\n", 2)[2])


def test_seed000_te_cell(seed000):
    assert_same_program(seed000.run(S000_TE), S000_TE_OUT)


def test_seed000_build_and_run_cells(seed000):
    seed000.run(S000_MODULE)
    assert_same_classes(seed000.run(S000_BUILD), S000_BUILD_OUT)
    assert seed000.run(S000_RUN) == S000_RUN_OUT


def test_seed000_schedule_cells(seed000):
    seed000.run(S000_MODULE)
    assert_same_classes(seed000.run(S000_SCHEDULE), S000_SCHEDULE_OUT)
    assert_same_program(seed000.run(S000_SPLIT), S000_SPLIT_OUT)
    assert_same_program(seed000.run(S000_REORDER), S000_REORDER_OUT)
    assert_same_program(seed000.run(S000_BIND), S000_BIND_OUT)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
def test_seed000_cuda_cell_compiles(seed000, tmp_path):
    seed000.run(S000_MODULE + S000_SCHEDULE + S000_SPLIT + S000_REORDER + S000_BIND)
    seed000.run('cuda_mod = tvm.build(sch.mod, target="cuda")')
    source = seed000.eval("cuda_mod.imported_modules[0].get_source()")
    (tmp_path / "seed000.cu").write_text(source)
    done = subprocess.run(["nvcc", "-arch=sm_80", "--ptx", "-Werror", "all-warnings", "-o", str(tmp_path / "k.ptx"),
                           str(tmp_path / "seed000.cu")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert "blockIdx.x" in source and "threadIdx.x" in source


@pytest.mark.skipif(not gpu_available(), reason="seed 000's CUDA run needs a GPU visible to cupy (none here)")
def test_seed000_cuda_cells(seed000):
    seed000.run(S000_MODULE + S000_SCHEDULE + S000_SPLIT + S000_REORDER + S000_BIND)
    out = seed000.run('''
ctx = tvm.cuda(0)
cuda_mod = tvm.build(sch.mod, target="cuda")
cuda_a = tvm.nd.array(np.arange(8).astype("float32"), ctx)
cuda_b = tvm.nd.array(np.zeros((8,)).astype("float32"), ctx)
cuda_mod(cuda_a, cuda_b)
print(cuda_a)
print(cuda_b)
''')
    assert out == S000_RUN_OUT


# ================================================================================================
# Seed 001: Writing a Customized Pass
# ================================================================================================

S001_IMPORTS = '''
import tvm
from tvm import te
import numpy as np
'''

S001_LOWER = '''
n = tvm.tir.const(128, "int32")
a = te.placeholder((n,), name="a")
b = te.placeholder((n,), name="b")
c = te.compute((n,), lambda i: a[i] + b[i], name="c")
sch = te.create_schedule(c.op)
ir = tvm.lower(sch, [a, b, c])
print(ir)
'''

S001_VISITOR = '''
loops = []


def find_width8(op):
    """Find all the 'tir.For' nodes whose extent can be divided by 8."""
    if isinstance(op, tvm.tir.For):
        if isinstance(op.extent, tvm.tir.IntImm):
            if op.extent.value % 8 == 0:
                loops.append(op)
'''

S001_TRANSFORM = '''
def vectorize8(op):
    """Split can vectorize the loops found in `find_width8`."""
    if op in loops:
        extent = op.extent.value
        name = op.loop_var.name
        lo, li = te.var(name + ".outer"), te.var(name + ".inner")
        body = tvm.tir.stmt_functor.substitute(op.body, {op.loop_var: lo * 8 + li})
        body = tvm.tir.For(li, 0, 8, tvm.tir.ForKind.VECTORIZED, body)
        body = tvm.tir.For(lo, 0, extent // 8, tvm.tir.ForKind.SERIAL, body)
        return body
    return None


@tvm.tir.transform.prim_func_pass(opt_level=0)
def vectorize(f, mod, ctx):
    global loops

    tvm.tir.stmt_functor.post_order_visit(f.body, find_width8)

    if not loops:
        return f

    # The last list arugment indicates what kinds of nodes will be transformed.
    # Thus, in this case only `For` nodes will call `vectorize8`
    return f.with_body(tvm.tir.stmt_functor.ir_transform(f.body, None, vectorize8, ["tir.For"]))
'''

# The seed shows this cell's output but not its code; the tutorial's code is this.
S001_GLUE = '''
with tvm.transform.PassContext(config={"tir.add_lower_pass": [(1, vectorize)]}):
    print(tvm.lower(sch, [a, b, c]))
'''


@pytest.fixture()
def seed001(tmp_path):
    nb = Notebook(tmp_path, "seed001")
    assert nb.run(S001_IMPORTS) == ""
    return nb


def test_seed001_lowered_vector_add_prints_exactly(seed001):
    assert seed001.run(S001_LOWER) == exact(SEED001_LOWERED_PRINTED)


def test_seed001_custom_pass_after_phase_1_prints_exactly(seed001):
    seed001.run(S001_LOWER)
    assert seed001.run(S001_VISITOR) == "" and seed001.run(S001_TRANSFORM) == ""
    assert seed001.run(S001_GLUE) == exact(SEED001_VECTORIZED_PRINTED)
    assert len(seed001.namespace["loops"]) == 1  # the visitor found the one loop of extent 128


def test_seed001_custom_pass_result_runs(seed001):
    """The vectorized program computes c = a + b (built with the pass in the pipeline)."""
    seed001.run(S001_LOWER + S001_VISITOR + S001_TRANSFORM)
    seed001.run('''
with tvm.transform.PassContext(config={"tir.add_lower_pass": [(1, vectorize)]}):
    lowered = tvm.lower(sch, [a, b, c])
built = tvm.build(lowered, target="llvm")
x = tvm.nd.array(np.arange(128).astype("float32"))
y = tvm.nd.array(np.full(128, 2, dtype="float32"))
z = tvm.nd.array(np.zeros(128, dtype="float32"))
built(x, y, z)
''')
    ns = seed001.namespace
    np.testing.assert_allclose(ns["z"].numpy(), np.arange(128) + 2.0)


def test_old_style_comparison_tells_programs_apart():
    """The structural comparison of seed 000's text is not vacuous: split and reorder differ."""
    split = from_source(restore_indent(S000_SPLIT_OUT))
    assert "for i_0, i_1, i_2 in T.grid(2, 2, 2):" in split.script()
    with pytest.raises(AssertionError, match="structural|mismatch|differ"):
        try:
            assert_same_program(split.script(), S000_REORDER_OUT)
        except ValueError as err:  # assert_structural_equal reports with ValueError
            raise AssertionError(str(err)) from None


# ================================================================================================
# Seed 003: Tensor Program Abstraction in Action (current TVM; T.sblock printed as T.block)
# ================================================================================================

S003_IMPORTS = '''
import tvm
from tvm.ir.module import IRModule
from tvm.script import ir as I
from tvm.script import tir as T
import numpy as np
'''


S003_ARANGE_OUT = '''
[  0.   1.   2.   3.   4.   5.   6.   7.   8.   9.  10.  11.  12.  13.
  14.  15.  16.  17.  18.  19.  20.  21.  22.  23.  24.  25.  26.  27.
  28.  29.  30.  31.  32.  33.  34.  35.  36.  37.  38.  39.  40.  41.
  42.  43.  44.  45.  46.  47.  48.  49.  50.  51.  52.  53.  54.  55.
  56.  57.  58.  59.  60.  61.  62.  63.  64.  65.  66.  67.  68.  69.
  70.  71.  72.  73.  74.  75.  76.  77.  78.  79.  80.  81.  82.  83.
  84.  85.  86.  87.  88.  89.  90.  91.  92.  93.  94.  95.  96.  97.
  98.  99. 100. 101. 102. 103. 104. 105. 106. 107. 108. 109. 110. 111.
 112. 113. 114. 115. 116. 117. 118. 119. 120. 121. 122. 123. 124. 125.
 126. 127.]
'''
# The seed's page cuts the print of b (and of c) short: these are the lines it shows.
S003_ONES_SHOWN = '''
[1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1.
 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1.
 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1.
 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1. 1.
'''


@pytest.fixture()
def seed003(tmp_path):
    nb = Notebook(tmp_path, "seed003")
    assert nb.run(S003_IMPORTS) == ""
    assert nb.run(SEED003_VECTOR_ADD) == ""
    return nb


def test_seed003_module_type_and_print(seed003):
    assert type(seed003.eval("MyModule")).__name__ == "IRModule"  # the cell shows tvm.ir.module.IRModule
    assert seed003.run("print(MyModule.script())\n# TVM의 IRModule 객체를 Python 스크립트 형태의 문자열로 변환\n") \
        == exact(SEED003_VECTOR_ADD_PRINTED)
    assert seed003.run("MyModule.show()") == exact(SEED003_VECTOR_ADD_PRINTED)


def test_seed003_s_tir_schedule_cells_print_exactly(seed003):
    assert seed003.run('''
from tvm import s_tir
sch = s_tir.Schedule(MyModule)
''') == ""
    assert seed003.run("print(sch.mod.script())") == exact(SEED003_VECTOR_ADD_PRINTED)
    assert seed003.run('''
block = sch.get_sblock("C") #block C 반환
i, = sch.get_loops(block) #block C의 루프 반환 (for문을 slice할거임)
''') == ""
    assert seed003.run('''
i0, i1, i2 = sch.split(i, factors = [None, 4, 4])#for loop를 분할할거임

print(sch.mod.script())
''') == exact(SEED003_SPLIT_PRINTED)
    assert seed003.run("sch.reorder(i2, i1) #루프 순서 변경") == ""
    assert seed003.run("print(sch.mod.script())") == exact(SEED003_REORDER_PRINTED)
    assert seed003.run('''
sch.parallel(i0) #가장 바깥 루프를 병렬화하고 싶으면 
print(sch.mod.script())
''') == exact(SEED003_PARALLEL_PRINTED)


def test_seed003_build_and_run_cells(seed003):
    seed003.run('''
from tvm import s_tir
sch = s_tir.Schedule(MyModule)
block = sch.get_sblock("C")
i, = sch.get_loops(block)
i0, i1, i2 = sch.split(i, factors = [None, 4, 4])
sch.reorder(i2, i1)
sch.parallel(i0)
''')
    assert_same_classes(seed003.run('''
rt_mod = tvm.build(sch.mod, target="llvm")  # The module for CPU backends.
print(type(rt_mod))
'''), "<class 'tvm.runtime.module.Module'>")
    assert seed003.run('func = rt_mod["main"]') == ""
    assert callable(seed003.eval("func"))  # the cell displays ffi.Function(0x...)
    assert seed003.run('''
a = tvm.runtime.tensor(np.arange(128, dtype="float32"))
b = tvm.runtime.tensor(np.ones(128, dtype="float32"))
c = tvm.runtime.tensor(np.zeros(128, dtype="float32"))
''') == ""
    before = seed003.run("print(a)\nprint(b)\nprint(c)\n")
    assert before.startswith(S003_ARANGE_OUT.lstrip("\n") + S003_ONES_SHOWN.lstrip("\n"))
    assert before.endswith(str(np.zeros(128, dtype="float32")) + "\n")
    assert seed003.run("func(a, b, c)") == ""
    shown = repr(seed003.eval("a"))  # the cell displays the tensor
    assert shown.splitlines()[0] == "<tvm.runtime.Tensor shape=(128,), cpu:0>"
    assert shown.split("\n", 1)[1] == repr(np.arange(128, dtype="float32"))
    after = seed003.run("print(a)\nprint(b)\nprint(c)\n")
    assert after.startswith(S003_ARANGE_OUT.lstrip("\n") + S003_ONES_SHOWN.lstrip("\n"))
    assert after.endswith(str(np.arange(128, dtype="float32") + 1) + "\n")
    assert seed003.run("sch.mod.show()") == exact(SEED003_PARALLEL_PRINTED)


def test_seed003_tir_schedule_cells(seed003):
    """The "Transform the Tensor Program" cells fail in the seed (TVM 0.27 dropped tvm.tir.Schedule);
    both spellings work here, so the cells run and show the same programs."""
    assert class_names(seed003.run("sch = tvm.tir.Schedule(MyModule)\nprint(type(sch))")) == ["Schedule"]
    assert seed003.run('''
# Get block by its name
block_c = sch.get_block("C")
# Get loops surronding the block
(i,) = sch.get_loops(block_c)
# Tile the loop nesting.
i_0, i_1, i_2 = sch.split(i, factors=[None, 4, 4])
sch.mod.show()
''') == exact(SEED003_SPLIT_PRINTED)
    assert seed003.run("sch.reorder(i_0, i_2, i_1)\nsch.mod.show()") == exact(SEED003_REORDER_PRINTED)
    assert seed003.run("sch.mod.show()") == exact(SEED003_REORDER_PRINTED)
    assert seed003.run("sch.parallel(i_0)\nsch.mod.show()") == exact(SEED003_PARALLEL_PRINTED)
    seed003.run('''
a = tvm.runtime.tensor(np.arange(128, dtype="float32"))
b = tvm.runtime.tensor(np.ones(128, dtype="float32"))
c = tvm.runtime.tensor(np.zeros(128, dtype="float32"))
transformed_mod = tvm.build(sch.mod, target="llvm")  # The module for CPU backends.
transformed_mod["main"](a, b, c)
''')
    np.testing.assert_array_equal(seed003.eval("c").numpy(), np.arange(128, dtype="float32") + 1)


def test_seed003_te_cell(seed003):
    out = seed003.run('''
# namespace for tensor expression utility
from tvm import te

# declare the computation using the expression API
A = te.placeholder((128, ), name="A")
B = te.placeholder((128, ), name="B")
C = te.compute((128,), lambda i: A[i] + B[i], name="C")

# create a function with the specified list of arguments. 
func = te.create_prim_func([A, B, C])
# mark that the function name is main
func = func.with_attr("global_symbol", "main")
ir_mod_from_te = IRModule({"main": func})

ir_mod_from_te.show()
''')
    assert out == exact(SEED003_VECTOR_ADD_PRINTED).replace("vi", "v_i")


MATMUL_SIZE = 128  # the seed uses 1024; the cells run at this size in tests

S003_MATMUL = '''
from tvm import te

M = 1024
K = 1024
N = 1024

# The default tensor type in tvm
dtype = "float32"

target = "llvm"
dev = tvm.device(target, 0)

# Algorithm
k = te.reduce_axis((0, K), "k")
A = te.placeholder((M, K), name="A")
B = te.placeholder((K, N), name="B")
C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")

# Default schedule
func = te.create_prim_func([A, B, C])
func = func.with_attr("global_symbol", "main")
ir_module = IRModule({"main": func})
ir_module.show()


func = tvm.build(ir_module, target="llvm")  # The module for CPU backends.

a = tvm.runtime.tensor(np.random.rand(M, K).astype(dtype), dev)
b = tvm.runtime.tensor(np.random.rand(K, N).astype(dtype), dev)
c = tvm.runtime.tensor(np.zeros((M, N), dtype=dtype), dev)
func(a, b, c)

evaluator = func.time_evaluator(func.entry_name, dev, number=1)
print("Baseline: %f" % evaluator(a, b, c).mean)
'''

S003_TILED = '''
sch = tvm.s_tir.Schedule(ir_module)
print(type(sch))
block_c = sch.get_sblock("C")
# Get loops surronding the block
(y, x, k) = sch.get_loops(block_c)
block_size = 32
yo, yi = sch.split(y, [None, block_size]) #yi = 32 -> 내부 루프, yo =외부부 루프
xo, xi = sch.split(x, [None, block_size]) #xi = 32 -> 내부 루프, xo =외부부 루프

sch.reorder(yo, xo, k, yi, xi)
{parallel}sch.mod.show()

func = tvm.build(sch.mod, target="llvm")  # The module for CPU backends.

c = tvm.runtime.tensor(np.zeros((M, N), dtype=dtype), dev)
func(a, b, c)

evaluator = func.time_evaluator(func.entry_name, dev, number=1)
print("after transformation: %f" % evaluator(a, b, c).mean)
'''


def _check_matmul(nb) -> None:
    ns = nb.namespace
    expected = ns["a"].numpy() @ ns["b"].numpy()
    np.testing.assert_allclose(ns["c"].numpy(), expected, rtol=1e-4, atol=1e-4)


def test_seed003_matmul_cells(seed003):
    code = S003_MATMUL.replace("= 1024", f"= {MATMUL_SIZE}")
    out = seed003.run(code)
    script, last = out.rstrip("\n").rsplit("\n", 1)
    assert re.fullmatch(r"Baseline: \d+\.\d{6}", last), last
    assert 'v_m, v_n, v_k = T.axis.remap("SSR", [m, n, k])' in script
    assert f"for m, n, k in T.grid({MATMUL_SIZE}, {MATMUL_SIZE}, {MATMUL_SIZE}):" in script
    _check_matmul(seed003)

    for parallel in ("", "sch.parallel(yo)\n"):
        out = seed003.run(S003_TILED.format(parallel=parallel))
        lines = out.rstrip("\n").splitlines()
        assert_same_classes(lines[0], "<class 'tvm.s_tir.schedule.schedule.Schedule'>")
        assert re.fullmatch(r"after transformation: \d+\.\d{6}", lines[-1]), lines[-1]
        script = "\n".join(lines[1:-1])
        tiles = MATMUL_SIZE // 32
        outer = (f"for m_0 in T.parallel({tiles}):" if parallel else f"for m_0, n_0, k, m_1, n_1 in T.grid({tiles}, "
                 f"{tiles}, {MATMUL_SIZE}, 32, 32):")
        assert outer in script, script
        assert "v_m = T.axis.spatial(128, m_0 * 32 + m_1)".replace("128", str(MATMUL_SIZE)) in script
        _check_matmul(seed003)
