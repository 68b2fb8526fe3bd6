"""Every module-defining cell of the seed tutorials parses (imports changed to tensorize), and the
IR it gives has the blocks, iterators, regions and buffers TVM gives."""
import numpy as np  # noqa: F401  (the seeds import it)

import tensorize as tvm
from tensorize.ir import IRModule
from tensorize.ir.expr import IterVar
from tensorize.ir.stmt import Block, BlockRealize, For, ForKind
from tensorize.script import ir as I
from tensorize.script import tir as T
from tests.programs import (
    SEED000_BIND_PRINTED, SEED000_PRINTED, SEED000_SPLIT_PRINTED, SEED002_MM_RELU, SEED003_PARALLEL_PRINTED, load,
)


def blocks_of(func):
    """Blocks of a PrimFunc in program order (the root block first)."""
    found = []

    def walk(stmt):
        if isinstance(stmt, BlockRealize):
            found.append(stmt.block)
            walk(stmt.block.body)
        elif isinstance(stmt, For):
            walk(stmt.body)
        elif hasattr(stmt, "seq"):
            for s in stmt.seq:
                walk(s)

    walk(func.body)
    return found


def region_text(regions):
    def fmt(e):
        return str(e.value) if hasattr(e, "value") and not hasattr(e, "name") else e.name

    out = []
    for r in regions:
        parts = []
        for rng in r.region:
            parts.append(fmt(rng.min) if int(rng.extent) == 1 else f"{fmt(rng.min)}:+{int(rng.extent)}")
        out.append(f"{r.buffer.name}[{', '.join(parts)}]")
    return out


# The tutorial cells stand here as Python (this file tests the decorators and the spans they record);
# the programs the tutorials print come from tests/programs.py.


# -- seed 000: "Blitz Course to TensorIR" ------------------------------------------------------------------

@tvm.script.ir_module
class MyModule000:
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


Printed000 = load(SEED000_PRINTED, "printed000")["Module"]
Split000 = load(SEED000_SPLIT_PRINTED, "split000")["Module"]
Bound000 = load(SEED000_BIND_PRINTED, "bound000")["Module"]


def test_seed000_module_is_irmodule_with_inferred_regions():
    assert type(MyModule000) is IRModule
    func = MyModule000["main"]
    assert func.attrs == {"global_symbol": "main", "tir.noalias": True}
    assert [b.name for b in func.buffers] == ["A", "B"]
    assert [int(s) for s in func.buffers[0].shape] == [8] and func.buffers[0].dtype == "float32"
    root, block = blocks_of(func)
    assert root.name_hint == "root" and not root.iter_vars and not root.reads
    assert block.name_hint == "B"
    assert block.iter_vars[0].iter_type == IterVar.DataPar and int(block.iter_vars[0].dom.extent) == 8
    assert region_text(block.reads) == ["A[vi]"] and region_text(block.writes) == ["B[vi]"]


def test_seed000_handle_and_buffer_params_give_equal_ir():
    tvm.ir.assert_structural_equal(MyModule000["main"], Printed000["main"])


def test_seed000_transformed_modules_parse():
    loops = []
    stmt = Split000["main"].body.block.body
    while isinstance(stmt, For):
        loops.append((stmt.loop_var.name, int(stmt.extent), stmt.kind))
        stmt = stmt.body
    assert loops == [("i_0", 2, ForKind.SERIAL), ("i_1", 2, ForKind.SERIAL), ("i_2", 2, ForKind.SERIAL)]
    outer = Bound000["main"].body.block.body
    assert outer.kind == ForKind.THREAD_BINDING and outer.thread_binding.thread_tag == "blockIdx.x"
    assert outer.body.thread_binding.thread_tag == "threadIdx.x"


# -- seed 002: "Understand TensorIR Abstraction" ------------------------------------------------------------

@tvm.script.ir_module
class MyModule002:
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


MyModuleWithAxisRemapSugar = load(SEED002_MM_RELU, "seed002")["MyModuleWithAxisRemapSugar"]


def test_seed002_mm_relu_blocks_axes_and_regions():
    func = MyModule002["mm_relu"]
    root, y, c = blocks_of(func)
    assert [b.name for b in root.alloc_buffers] == ["Y"]
    assert y.name_hint == "Y" and c.name_hint == "C"
    assert [iv.iter_type for iv in y.iter_vars] == [IterVar.DataPar, IterVar.DataPar, IterVar.CommReduce]
    assert [int(iv.dom.extent) for iv in y.iter_vars] == [128, 128, 128]
    assert y.init is not None
    assert region_text(y.reads) == ["A[vi, vk]", "B[vk, vj]"]
    assert region_text(y.writes) == ["Y[vi, vj]"]
    assert region_text(c.reads) == ["Y[vi, vj]"] and region_text(c.writes) == ["C[vi, vj]"]


def test_seed002_remap_equals_explicit_axes():
    tvm.ir.assert_structural_equal(MyModule002["mm_relu"], MyModuleWithAxisRemapSugar["mm_relu"])


def test_seed002_block_iter_spans_point_at_the_axis_line():
    _, y, _ = blocks_of(MyModule002["mm_relu"])
    spans = [iv.span for iv in y.iter_vars]
    assert all(s is not None for s in spans)
    assert [s.line for s in spans] == [spans[0].line, spans[0].line + 1, spans[0].line + 2]
    assert spans[0].source_name.endswith("test_parser_seeds.py")


# -- seed 003: a recent TVM (T.sblock, I.ir_module) -----------------------------------------------------------

@I.ir_module
class MyModule003:
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


Printed003 = load(SEED003_PARALLEL_PRINTED, "printed003")["Module"]


def test_seed003_vector_add():
    func = MyModule003["main"]
    _, c = blocks_of(func)
    assert c.name_hint == "C"
    assert region_text(c.reads) == ["A[vi]", "B[vi]"] and region_text(c.writes) == ["C[vi]"]


def test_seed003_printed_schedule_output_parses():
    func = Printed003["main"]
    # TVM semantics: a public function in a module is exported under its name.
    assert func.attrs == {"tir.noalias": True, "global_symbol": "main"}
    outer = func.body.block.body
    assert outer.kind == ForKind.PARALLEL and int(outer.extent) == 8
    _, c = blocks_of(func)
    assert isinstance(c, Block) and region_text(c.reads) == ["A[vi]", "B[vi]"]
