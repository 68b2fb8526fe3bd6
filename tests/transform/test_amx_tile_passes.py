"""The AMX lowering passes: ``HoistTileConfig`` (one ``ldtilecfg`` per thread's share of the work) and
``FuseTileZero`` (a zeroed C loaded into tiles becomes ``tilezero``). Programs are written as lowered TIR, run on
the tile model (``intrinsics.x86_amx_model``) before and after each pass, and compared."""
from __future__ import annotations

import numpy as np
import pytest

import tensorize as tvm
from tensorize.codegen.python.interpreter import run_prim_func
from tensorize.script import tir as T
from tensorize.transform import PassContext
from tensorize.transform.fuse_tile_zero import fuse_tile_zero
from tensorize.transform.tile_code import tile_shapes
from tensorize.transform.hoist_tile_config import hoist_tile_config
from tensorize.transform.promote_tile_accumulators import promote_tile_accumulators

from intrinsics.x86_amx_model import AMXModel
from intrinsics.x86_amx_schedule import amx_gemm, pack_b, schedule_amx_gemm
from intrinsics.x86_amx_tiles import tile_config

W = tile_config()  # every tile 16 rows x 64 bytes


def _calls(func, name):
    return func.script().count(f'"llvm.x86.{name}"')


def _run(func, *arrays):
    out = [a.copy() for a in arrays]
    run_prim_func(func, *out, externs=AMXModel().externs())
    return out


@T.prim_func
def per_block_config(A: T.Buffer((2048,), "uint8"), B: T.Buffer((2048,), "int8"), C: T.Buffer((1024,), "int32")):
    # 4 threads x 2 blocks of 16 x 16 int32 each: C[row block i, column block j] = A_i . B_j over one K step
    for i in T.parallel(2):
        for j in range(2):
            cfg = T.allocate([8], "int64", "local")
            cfg_1 = T.decl_buffer((8,), "int64", data=cfg, scope="local")
            cfg_1[0] = T.int64(W[0])
            cfg_1[1] = T.int64(W[1])
            cfg_1[2] = T.int64(W[2])
            cfg_1[3] = T.int64(W[3])
            cfg_1[4] = T.int64(W[4])
            cfg_1[5] = T.int64(W[5])
            cfg_1[6] = T.int64(W[6])
            cfg_1[7] = T.int64(W[7])
            T.call_llvm_intrin("void", "llvm.x86.ldtilecfg", T.address_of(cfg_1[0]))
            for r, c in T.grid(16, 16):
                C[i * 512 + r * 32 + j * 16 + c] = 0
            T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(0), T.address_of(C[i * 512 + j * 16]),
                               T.int64(128))
            T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(1), T.address_of(A[i * 1024]), T.int64(64))
            T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(2), T.address_of(B[j * 1024]), T.int64(64))
            T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(0), T.int8(1), T.int8(2))
            T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(0), T.address_of(C[i * 512 + j * 16]),
                               T.int64(128))


def _operands(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, 2048).astype(np.uint8), rng.integers(-128, 128, 2048).astype(np.int8),
            np.full(1024, 7, np.int32))


def test_hoisted_configuration_loads_once_per_parallel_iteration_and_releases():
    hoisted = hoist_tile_config(per_block_config)
    text = hoisted.script()
    assert _calls(hoisted, "ldtilecfg") == 1 and _calls(hoisted, "tilerelease") == 1
    assert text.index("T.parallel(2)") < text.index("ldtilecfg") < text.index("for j in range(2)")
    assert text.index("tilestored64") < text.index("tilerelease")
    assert all(np.array_equal(x, y) for x, y in zip(_run(per_block_config, *_operands()),
                                                     _run(hoisted, *_operands())))


def _with(text: str, after: str, line: str, before: bool = False):
    """``text`` (TVMScript) with ``line`` inserted after (or before) the first line containing ``after``, at its
    indentation."""
    lines = text.splitlines()
    at = next(n for n, ln in enumerate(lines) if after in ln)
    indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    at += 0 if before else 1
    return tvm.script.from_source("\n".join(lines[:at] + [indent + line] + lines[at:]))


@pytest.mark.parametrize("extra", [
    'T.evaluate(T.call_extern("int32", "other_kernel"))',       # foreign code may configure the tiles itself
    'T.call_llvm_intrin("void", "llvm.x86.tilerelease")',        # the program manages the state itself
    'cfg_1[7] = T.Cast("int64", j)',                             # a descriptor computed per block
    'if j == 1: cfg_1[6] = T.int64(0x0808080808080808)'])         # two descriptors, one per block
def test_hoisting_leaves_regions_it_cannot_prove(extra):
    func = _with(per_block_config.script(), '"llvm.x86.tdpbusd"' if "cfg" not in extra else "cfg_1[7] =", extra)
    assert hoist_tile_config(func).script() == func.script()


def test_hoisting_needs_one_descriptor_per_region():
    """The second block of each thread configures 8-row tiles: both loads stay where they are."""
    source = per_block_config.script()
    lines = source.splitlines()
    loop = next(n for n, ln in enumerate(lines) if "for j in range(2):" in ln)
    body = [ln for ln in lines[loop + 1:] if ln.strip()]
    renamed = [ln.replace("cfg_1", "cfg2_1").replace("cfg = ", "cfg2 = ").replace("data=cfg,", "data=cfg2,")
               for ln in body]
    second = [ln.replace("j *", "1 *").replace(f"T.int64({W[6]})", f"T.int64({tile_config(rows=8)[6]})")
              for ln in renamed]
    first = [ln.replace("j *", "0 *") for ln in body]
    func = tvm.script.from_source("\n".join(lines[:loop] + [ln[4:] for ln in first + second]))
    assert _calls(func, "ldtilecfg") == 2 * _calls(per_block_config, "ldtilecfg")
    assert hoist_tile_config(func).script() == func.script()


def test_tilezero_replaces_the_zero_fill_and_the_accumulator_loads():
    fused = fuse_tile_zero(hoist_tile_config(per_block_config))
    text = fused.script()
    assert _calls(fused, "tilezero") == 1 and "= 0" not in text.split("ldtilecfg")[1]
    assert text.count('"llvm.x86.tileloadd64", T.int8(0)') == 0
    before, after = _run(per_block_config, *_operands(1)), _run(fused, *_operands(1))
    assert all(np.array_equal(x, y) for x, y in zip(before, after))


def test_tilezero_needs_every_zeroed_element_loaded_and_stored():
    """A fill wider than the tile it loads (the rest would stay unzeroed), or C read in between: unchanged."""
    wide = tvm.script.from_source(per_block_config.script().replace("T.grid(16, 16)", "T.grid(16, 32)"))
    assert _calls(fuse_tile_zero(wide), "tilezero") == 0
    read = _with(per_block_config.script(), '"llvm.x86.tileloadd64", T.int8(0)', 'A[0] = T.Cast("uint8", C[i * 512])',
                 before=True)
    assert "A[0] = " in read.script() and _calls(fuse_tile_zero(per_block_config), "tilezero") == 1
    assert _calls(fuse_tile_zero(read), "tilezero") == 0


@pytest.mark.parametrize("kwargs,guarded", [({}, False), ({"k_steps": 2}, False), ({"k_steps": 1, "m_tiles": 1,
                                                                                   "n_tiles": 1}, False),
                                            ({"k_steps": 2, "stationary": "b"}, True)])
def test_lowered_gemms_zero_their_accumulators_in_tiles_and_stay_exact(kwargs, guarded):
    """Whole K per call; K split over calls, the K loop directly around them (the accumulators zeroed before it and
    kept in their tiles, ``PromoteTileAccumulators``) or outside the blocks of a B-stationary region (``if k == 0:
    tilezero else tileloadd``); one tile per call: no zero fill is left, and the tile model gives the GEMM."""
    M, N, K = 64, 64, 512
    sch = schedule_amx_gemm(amx_gemm(M, N, K), parallel=True, **kwargs)
    lowered = tvm.lower(sch.mod)["main"]
    text = lowered.script()
    assert _calls(lowered, "tilezero") >= 1 and _calls(lowered, "ldtilecfg") == 1
    assert ("if " in text.split("tilezero")[0][-200:]) == guarded
    assert "] = 0\n" not in text
    if "k_steps" in kwargs and not guarded:
        with PassContext(disabled_pass=["tir.PromoteTileAccumulators"]):
            assert "if " in tvm.lower(sch.mod)["main"].script().split("tilezero")[0][-200:]
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 256, (M, K)).astype(np.uint8), rng.integers(-128, 128, (N, K)).astype(np.int8)
    c = np.full((M, N), 7, np.int32)
    run_prim_func(lowered, a, pack_b(b), c, externs=AMXModel().externs())
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32).T)


def test_both_passes_can_be_disabled():
    sch = schedule_amx_gemm(amx_gemm(64, 64, 256), parallel=True)
    with PassContext(disabled_pass=["tir.HoistTileConfig", "tir.FuseTileZero"]):
        per_call = tvm.lower(sch.mod)["main"]
    assert _calls(per_call, "ldtilecfg") == 1 and "for " in per_call.script().split("ldtilecfg")[0].split("parallel")[1]
    assert _calls(per_call, "tilezero") == 0 and _calls(per_call, "tilerelease") == 0


def test_tile_shapes_decode_the_descriptor():
    assert tile_shapes(tile_config()) == [(16, 64)] * 8
    assert tile_shapes(tile_config(rows=8, colsb=32, tiles=2))[:3] == [(8, 32), (8, 32), (0, 0)]


def _nest_program(order: str) -> str:
    """C (16 x 32 int32, two 16 x 16 blocks) zeroed, then for each block ``b`` and K step ``k`` (loop order
    ``order``) its accumulator loaded, multiplied by A's and B's tiles of step k, and stored."""
    loops = {"kb": "for k, b in T.grid(2, 2):", "bk": "for b, k in T.grid(2, 2):", "b": "for b in range(2):"}[order]
    k = "0" if order == "b" else "k"
    cfg = "\n".join(f"    cfg_1[{i}] = T.int64({w})" for i, w in enumerate(W))
    return f'''
@T.prim_func
def nest(A: T.Buffer((2048,), "uint8"), B: T.Buffer((4096,), "int8"), C: T.Buffer((512,), "int32")):
    cfg = T.allocate([8], "int64", "local")
    cfg_1 = T.decl_buffer((8,), "int64", data=cfg, scope="local")
{cfg}
    T.call_llvm_intrin("void", "llvm.x86.ldtilecfg", T.address_of(cfg_1[0]))
    for b0, r, c in T.grid(2, 16, 16):
        C[b0 * 16 + r * 32 + c] = 0
    {loops}
        T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(0), T.address_of(C[b * 16]), T.int64(128))
        T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(1), T.address_of(A[{k} * 64]), T.int64(128))
        T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(2), T.address_of(B[b * 2048 + {k} * 1024]),
                           T.int64(64))
        T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(0), T.int8(1), T.int8(2))
        T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(0), T.address_of(C[b * 16]), T.int64(128))
'''


@pytest.mark.parametrize("order,condition", [("kb", "if k == 0:"), ("bk", "if k == 0:"), ("b", None)])
def test_tilezero_through_loop_nests_around_the_calls(order, condition):
    """The calls in a nest of K steps and blocks: the accumulator load becomes ``tilezero`` where it reads the
    fill's zeros, the first K step (any loop order), or every iteration of a loop over blocks alone."""
    func = tvm.script.from_source(_nest_program(order))
    fused = fuse_tile_zero(func)
    text = fused.script()
    assert _calls(fused, "tilezero") == 1 and "] = 0" not in text
    assert (condition in text) if condition else ("if " not in text)
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 256, 2048).astype(np.uint8), rng.integers(-128, 128, 4096).astype(np.int8)
    c = np.full(512, 7, np.int32)
    np.testing.assert_array_equal(_run(func, a, b, c)[2], _run(fused, a, b, c)[2])


@pytest.mark.parametrize("order,promoted", [("bk", True), ("kb", False), ("b", False)])
def test_accumulators_stay_in_tiles_across_a_k_loop(order, promoted):
    """After ``FuseTileZero``, a K loop inside the loop over blocks (``bk``) loads nothing from C: the tile is
    zeroed before it and stored after it. With the blocks inside the K loop (``kb``) the one tile holds each block
    in turn and must go through C; a loop over blocks alone has nothing to carry."""
    func = tvm.script.from_source(_nest_program(order))
    fused = fuse_tile_zero(func)
    out = promote_tile_accumulators(fused)
    text = out.script()
    if promoted:
        loop = text[text.index("for k in range(2)"):]
        assert "tilezero" not in loop and "tilestored" not in loop.split("\n        T.call")[0]
        assert text.index("tilezero") < text.index("for k in range(2)") < text.index("tilestored")
        assert "if " not in text
    else:
        assert text == fused.script()
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 256, 2048).astype(np.uint8), rng.integers(-128, 128, 4096).astype(np.int8)
    c = np.full(512, 7, np.int32)
    np.testing.assert_array_equal(_run(func, a, b, c)[2], _run(out, a, b, c)[2])


def test_accumulators_are_not_promoted_when_c_is_read_in_the_loop():
    func = tvm.script.from_source(_nest_program("bk"))
    read = _with(func.script(), '"llvm.x86.tdpbusd"', 'A[0] = T.Cast("uint8", C[b * 16])')
    assert promote_tile_accumulators(fuse_tile_zero(read)).script() == fuse_tile_zero(read).script()


def test_unrolled_taps_keep_the_accumulator_in_its_tile():
    """The K loop of ``_nest_program("bk")`` unrolled (as the search's unroll annotations leave it): each step's
    reload of the tile just stored is dropped, and so is every store but the last."""
    source = _nest_program("b")
    lines = source.splitlines()
    loop = next(n for n, ln in enumerate(lines) if "for b in range(2):" in ln)
    body = lines[loop + 1:]
    steps = [ln.replace("A[0 * 64]", f"A[{k} * 64]").replace("+ 0 * 1024", f"+ {k} * 1024") for k in range(2)
             for ln in body if ln.strip()]
    func = tvm.script.from_source("\n".join(lines[:loop + 1] + steps))
    assert _calls(func, "tileloadd64") == 2 * 3 * 1 and _calls(func, "tilestored64") == 2
    out = promote_tile_accumulators(fuse_tile_zero(func))
    text = out.script()
    assert _calls(out, "tilestored64") == 1 and _calls(out, "tilezero") == 1
    assert "T.address_of(C[b * 16])" not in text.split("tilestored64")[0].split("tilezero")[1]
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 256, 2048).astype(np.uint8), rng.integers(-128, 128, 4096).astype(np.int8)
    c = np.full(512, 7, np.int32)
    np.testing.assert_array_equal(_run(func, a, b, c)[2], _run(out, a, b, c)[2])
