"""The seed tutorials' TVMScript cells, run with imports changed to tensorize, printed by our printer.

Seed 003 (current TVM) is compared as exact text (``T.sblock`` read as ``T.block``); seeds 000 and
002 show an older print style, so their printed text is parsed back and compared by structure.
Schedule outputs (split/reorder/parallel/bind) are tested with the schedule primitives."""
from __future__ import annotations

import importlib.util
import textwrap

import tensorize
from tensorize import te
from tensorize.ir.function import IRModule
from tensorize.ir.structural import assert_structural_equal
from tensorize.script import from_source

IMPORTS = textwrap.dedent('''
    import numpy as np
    import tensorize as tvm
    from tensorize.ir.module import IRModule
    from tensorize.script import ir as I
    from tensorize.script import tir as T
''')


def run_cell(tmp_path, name: str, code: str) -> dict:
    """Run a notebook cell as a module file (the decorators read their source from it)."""
    path = tmp_path / f"{name}.py"
    path.write_text(IMPORTS + textwrap.dedent(code))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def reparse(text: str):
    return from_source(text, extra_vars={"tvm": tensorize})


def assert_prints_and_round_trips(mod) -> str:
    text = mod.script()
    assert_structural_equal(mod, reparse(text))
    return text


# -- seed 003 (TVM 0.20+ print style) ---------------------------------------------------------

SEED_003_VECTOR_ADD = '''
@I.ir_module
class MyModule:
    @T.prim_func
    def main(A: T.Buffer((128,), "float32"),
             B: T.Buffer((128,), "float32"),
             C: T.Buffer((128,), "float32")):
        # extra annotations for the function
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i in range(128):
            with T.sblock("C"):
                # declare a data parallel iterator on spatial domain
                vi = T.axis.spatial(128, i)
                C[vi] = A[vi] + B[vi]
'''

SEED_003_VECTOR_ADD_PRINTED = '''
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), C: T.Buffer((128,), "float32")):
        T.func_attr({"tir.noalias": True})
        # with T.sblock("root"):
        for i in range(128):
            with T.sblock("C"):
                vi = T.axis.spatial(128, i)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] + B[vi]
'''


def test_seed_003_vector_add_prints_exactly(tmp_path):
    mod = run_cell(tmp_path, "seed003_vector_add", SEED_003_VECTOR_ADD)["MyModule"]
    assert isinstance(mod, IRModule)
    expected = SEED_003_VECTOR_ADD_PRINTED.strip("\n").replace("T.sblock", "T.block")
    assert mod.script() == expected
    assert_prints_and_round_trips(mod)
    # The seed's printed text is itself valid TVMScript (with either block spelling).
    assert_structural_equal(mod, reparse(SEED_003_VECTOR_ADD_PRINTED))


def test_seed_003_te_modules_print_and_round_trip():
    A = te.placeholder((128,), name="A")
    B = te.placeholder((128,), name="B")
    C = te.compute((128,), lambda i: A[i] + B[i], name="C")
    func = te.create_prim_func([A, B, C]).with_attr("global_symbol", "main")
    text = assert_prints_and_round_trips(IRModule({"main": func}))
    assert "v_i = T.axis.spatial(128, i)" in text
    k = te.reduce_axis((0, 1024), "k")
    A = te.placeholder((1024, 1024), name="A")
    B = te.placeholder((1024, 1024), name="B")
    C = te.compute((1024, 1024), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    func = te.create_prim_func([A, B, C]).with_attr("global_symbol", "main")
    text = assert_prints_and_round_trips(IRModule({"main": func}))
    assert "v_m, v_n, v_k = T.axis.remap(\"SSR\", [m, n, k])" in text


# -- seed 000 (older print style; indentation restored from the tutorial page) -----------------

SEED_000_MODULE = '''
@tvm.script.ir_module
class MyModule:
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        # We exchange data between function by handles, which are similar to pointer.
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        # Create buffer from handles.
        A = T.match_buffer(a, (8,), dtype="float32")
        B = T.match_buffer(b, (8,), dtype="float32")
        for i in range(8):
            # A block is an abstraction for computation.
            with T.block("B"):
                # Define a spatial block iterator and bind it to value i.
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + 1.0
'''

SEED_000_MODULE_PRINTED = '''
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

SEED_000_TE_PRINTED = '''
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


def test_seed_000_module_matches_the_printed_structure(tmp_path):
    mod = run_cell(tmp_path, "seed000_module", SEED_000_MODULE)["MyModule"]
    assert_structural_equal(mod, reparse(SEED_000_MODULE_PRINTED))
    text = assert_prints_and_round_trips(mod)
    assert 'def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):' in text
    assert "B[vi] = A[vi] + T.float32(1.0)" in text


def test_seed_000_te_module_matches_the_printed_structure():
    A = te.placeholder((8,), dtype="float32", name="A")
    B = te.compute((8,), lambda *i: A(*i) + 1.0, name="B")
    func = te.create_prim_func([A, B]).with_attr("global_symbol", "main")  # older TVM added it itself
    mod = IRModule({"main": func})
    assert_structural_equal(mod, reparse(SEED_000_TE_PRINTED))
    assert_prints_and_round_trips(mod)


# -- seed 002 (mm_relu, with and without the T.axis.remap sugar) --------------------------------

SEED_002_MODULES = '''
@tvm.script.ir_module
class MyModule:
    @T.prim_func
    def mm_relu(A: T.Buffer((128, 128), "float32"),
                B: T.Buffer((128, 128), "float32"),
                C: T.Buffer((128, 128), "float32")):
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                vk = T.axis.reduce(128, k)
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

@tvm.script.ir_module
class MyModuleWithAxisRemapSugar:
    @T.prim_func
    def mm_relu(A: T.Buffer((128, 128), "float32"),
                B: T.Buffer((128, 128), "float32"),
                C: T.Buffer((128, 128), "float32")):
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
'''


def test_seed_002_modules_print_alike_and_round_trip(tmp_path):
    cell = run_cell(tmp_path, "seed002_mm_relu", SEED_002_MODULES)
    plain, sugared = cell["MyModule"], cell["MyModuleWithAxisRemapSugar"]
    assert_structural_equal(plain, sugared)
    text = assert_prints_and_round_trips(plain)
    assert text == sugared.script()
    lines = text.splitlines()
    assert lines[7:10] == ['        # with T.block("root"):', "        Y = T.alloc_buffer((128, 128))",
                           "        for i, j, k in T.grid(128, 128, 128):"]
    assert '                vi, vj, vk = T.axis.remap("SSR", [i, j, k])' in lines
    assert "                    Y[vi, vj] = T.float32(0.0)" in lines
