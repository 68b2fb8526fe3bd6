"""The seed tutorials' programs, each written once, shared by the tests of script, seeds, schedule and ir.

The texts are the tutorials' cells (TVM spelling: ``tvm.script.ir_module``, ``I.ir_module``,
``T.block``/``T.sblock``) and the programs the tutorials print after each step, with the
indentation of the older tutorial pages restored. :func:`load` runs a text the way a notebook
cell runs (``@T.prim_func`` reads the source of what it decorates from a file), e.g.::

    from tests.programs import SEED002_MM_RELU, load
    mm_relu = load(SEED002_MM_RELU)["MyModule"]["mm_relu"]
"""
from __future__ import annotations

import importlib.util
import itertools
import tempfile
import textwrap
from pathlib import Path

# -- seed 000: "Blitz Course to TensorIR" (older print style) --------------------------------------

SEED000_MODULE = '''
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

_SEED000_HEADER = '''
# from tvm.script import tir as T
@tvm.script.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer[8, "float32"], B: T.Buffer[8, "float32"]):
        # function attr dict
        T.func_attr({"tir.noalias": True, "global_symbol": "main"})
        # body
        # with T.block("root")
'''

SEED000_PRINTED = _SEED000_HEADER + '''        for i in T.serial(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] + T.float32(1)
'''

SEED000_SPLIT_PRINTED = _SEED000_HEADER + '''        for i_0, i_1, i_2 in T.grid(2, 2, 2):
            with T.block("B"):
                vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] + T.float32(1)
'''

SEED000_REORDER_PRINTED = _SEED000_HEADER + '''        for i_0, i_2, i_1 in T.grid(2, 2, 2):
            with T.block("B"):
                vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = A[vi] + T.float32(1)
'''

SEED000_BIND_PRINTED = _SEED000_HEADER + '''        for i_0 in T.thread_binding(2, thread="blockIdx.x"):
            for i_2 in T.thread_binding(2, thread="threadIdx.x"):
                for i_1 in T.serial(2):
                    with T.block("B"):
                        vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
                        T.reads(A[vi])
                        T.writes(B[vi])
                        B[vi] = A[vi] + T.float32(1)
'''

SEED000_TE_PRINTED = '''
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

# -- seed 001: "Customize Optimization" (legacy TE schedule, lowered) -----------------------------

_SEED001_HEADER = '''
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def main(a: T.Buffer((128,), "float32"), b: T.Buffer((128,), "float32"), c: T.Buffer((128,), "float32")):
        T.func_attr({"from_legacy_te_schedule": T.bool(True), "tir.noalias": T.bool(True)})
'''

SEED001_LOWERED_PRINTED = _SEED001_HEADER + '''        for i in range(128):
            c[i] = a[i] + b[i]
'''

SEED001_VECTORIZED_PRINTED = _SEED001_HEADER + '''        for i_outer in range(16):
            cse_var_1: T.int32 = i_outer * 8
            c[cse_var_1:cse_var_1 + 8] = a[cse_var_1:cse_var_1 + 8] + b[cse_var_1:cse_var_1 + 8]
'''

# -- seed 002: "Understand TensorIR Abstraction" (mm_relu, with and without T.axis.remap) ---------

SEED002_MM_RELU = '''
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

# -- seed 003: "Tensor Program Abstraction" (current print style) ---------------------------------

SEED003_VECTOR_ADD = '''
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

_SEED003_HEADER = '''
# from tvm.script import ir as I
# from tvm.script import tir as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), C: T.Buffer((128,), "float32")):
        T.func_attr({"tir.noalias": True})
        # with T.sblock("root"):
'''

SEED003_VECTOR_ADD_PRINTED = _SEED003_HEADER + '''        for i in range(128):
            with T.sblock("C"):
                vi = T.axis.spatial(128, i)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] + B[vi]
'''

SEED003_SPLIT_PRINTED = _SEED003_HEADER + '''        for i_0, i_1, i_2 in T.grid(8, 4, 4):
            with T.sblock("C"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1 * 4 + i_2)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] + B[vi]
'''

SEED003_REORDER_PRINTED = _SEED003_HEADER + '''        for i_0, i_2, i_1 in T.grid(8, 4, 4):
            with T.sblock("C"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1 * 4 + i_2)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] + B[vi]
'''

SEED003_PARALLEL_PRINTED = _SEED003_HEADER + '''        for i_0 in T.parallel(8):
            for i_2, i_1 in T.grid(4, 4):
                with T.sblock("C"):
                    vi = T.axis.spatial(128, i_0 * 16 + i_1 * 4 + i_2)
                    T.reads(A[vi], B[vi])
                    T.writes(C[vi])
                    C[vi] = A[vi] + B[vi]
'''

# -- running a program text ----------------------------------------------------------------------

IMPORTS = textwrap.dedent('''
    import numpy as np
    import tensorize as tvm
    from tensorize.ir.module import IRModule
    from tensorize.script import ir as I
    from tensorize.script import tir as T
''')

_folder: tempfile.TemporaryDirectory | None = None
_counter = itertools.count()


def load(text: str, name: str = "program") -> dict:
    """Run ``text`` (with the tensorize imports as ``tvm``, ``T``, ``I``, ``IRModule``, ``np``) as a
    module file and return its namespace; the file stays until the test process ends."""
    global _folder
    if _folder is None:
        _folder = tempfile.TemporaryDirectory(prefix="tensorize-test-programs-")
    path = Path(_folder.name) / f"{name}_{next(_counter)}.py"
    path.write_text(IMPORTS + textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)
