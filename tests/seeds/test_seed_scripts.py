"""The seed tutorials' TVMScript cells, run with imports changed to tensorize, printed by our printer.

Seed 003 (current TVM) is compared as exact text (``T.sblock`` read as ``T.block``); seeds 000 and
002 show an older print style, so their printed text is parsed back and compared by structure.
Schedule outputs (split/reorder/parallel/bind) are tested with the schedule primitives."""
from __future__ import annotations

import tensorize
from tensorize import te
from tensorize.ir.function import IRModule
from tensorize.ir.structural import assert_structural_equal
from tensorize.script import from_source
from tests.programs import (
    SEED000_MODULE, SEED000_PRINTED, SEED000_TE_PRINTED, SEED002_MM_RELU, SEED003_VECTOR_ADD, SEED003_VECTOR_ADD_PRINTED,
    load,
)


def reparse(text: str):
    return from_source(text, extra_vars={"tvm": tensorize})


def assert_prints_and_round_trips(mod) -> str:
    text = mod.script()
    assert_structural_equal(mod, reparse(text))
    return text


# -- seed 003 (TVM 0.20+ print style) ---------------------------------------------------------


def test_seed_003_vector_add_prints_exactly():
    mod = load(SEED003_VECTOR_ADD, "seed003_vector_add")["MyModule"]
    assert isinstance(mod, IRModule)
    expected = SEED003_VECTOR_ADD_PRINTED.strip("\n").replace("T.sblock", "T.block")
    assert mod.script() == expected
    assert_prints_and_round_trips(mod)
    # The seed's printed text is itself valid TVMScript (with either block spelling).
    assert_structural_equal(mod, reparse(SEED003_VECTOR_ADD_PRINTED))


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


def test_seed_000_module_matches_the_printed_structure():
    mod = load(SEED000_MODULE, "seed000_module")["MyModule"]
    assert_structural_equal(mod, reparse(SEED000_PRINTED))
    text = assert_prints_and_round_trips(mod)
    assert 'def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):' in text
    assert "B[vi] = A[vi] + T.float32(1.0)" in text


def test_seed_000_te_module_matches_the_printed_structure():
    A = te.placeholder((8,), dtype="float32", name="A")
    B = te.compute((8,), lambda *i: A(*i) + 1.0, name="B")
    func = te.create_prim_func([A, B]).with_attr("global_symbol", "main")  # older TVM added it itself
    mod = IRModule({"main": func})
    assert_structural_equal(mod, reparse(SEED000_TE_PRINTED))
    assert_prints_and_round_trips(mod)


# -- seed 002 (mm_relu, with and without the T.axis.remap sugar) --------------------------------


def test_seed_002_modules_print_alike_and_round_trip():
    cell = load(SEED002_MM_RELU, "seed002_mm_relu")
    plain, sugared = cell["MyModule"], cell["MyModuleWithAxisRemapSugar"]
    assert_structural_equal(plain, sugared)
    text = assert_prints_and_round_trips(plain)
    assert text == sugared.script()
    lines = text.splitlines()
    assert lines[7:10] == ['        # with T.block("root"):', "        Y = T.alloc_buffer((128, 128))",
                           "        for i, j, k in T.grid(128, 128, 128):"]
    assert '                vi, vj, vk = T.axis.remap("SSR", [i, j, k])' in lines
    assert "                    Y[vi, vj] = T.float32(0.0)" in lines
