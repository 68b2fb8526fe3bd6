"""The programs the round-trip and fuzz tests draw from: the seed tutorials' texts, the printer's
test programs, the integer workloads, and scheduled and lowered variants of some of them."""
from __future__ import annotations

import functools
import inspect

import tensorize as tvm
from tensorize.ir.function import IRModule, PrimFunc
from tests import programs, workloads


def _functions(value) -> list[tuple[str, PrimFunc]]:
    if isinstance(value, PrimFunc):
        return [("", value)]
    if isinstance(value, IRModule):
        return [(f".{getattr(name, 'name_hint', name)}", f) for name, f in value.functions.items()
                if isinstance(f, PrimFunc)]
    return []


def _scheduled(func: PrimFunc) -> dict[str, object]:
    """A few schedules of a one-reduction-block program (split, reorder, cache_read, parallel...)."""
    out = {}
    sch = tvm.tir.Schedule(func)
    try:
        block = sch.get_block("C") if "C" in func.script() else None
    except tvm.TVMError:
        block = None
    if block is None:
        return out
    loops = sch.get_loops(block)
    i_outer, i_inner = sch.split(loops[0], [None, 4])
    sch.reorder(i_inner, i_outer)
    out["split_reorder"] = sch.mod
    sch.parallel(sch.get_loops(block)[1])
    out["parallel"] = sch.mod
    try:
        sch.cache_read(block, 0, "global")
        out["cache_read"] = sch.mod
    except tvm.TVMError:
        pass
    return out


@functools.lru_cache(maxsize=1)
def corpus() -> dict[str, object]:
    """Name -> PrimFunc or IRModule."""
    found: dict[str, object] = {}
    for name, text in vars(programs).items():
        if name.isupper() and not name.startswith("_") and isinstance(text, str) and "def " in text:
            try:
                namespace = programs.load(text, name.lower())
            except Exception:  # noqa: BLE001 - a text of the tutorials that is not a whole program
                continue
            for key, value in namespace.items():
                if isinstance(value, (PrimFunc, IRModule)) and not key.startswith("_"):
                    found[f"{name}.{key}"] = value
    found["int8_gemm"] = workloads.int8_gemm(16, 16, 16)
    found["conv2d_nhwc_int8"] = workloads.conv2d_nhwc_int8(1, 6, 6, 4, 8, 3, 3)
    try:
        from tests.script import test_printer_programs as printer_programs
    except ImportError:
        printer_programs = None
    if printer_programs is not None:
        for name in ("vector_add", "mm_relu", "loops_every_kind", "block_features", "lowered_vector_add",
                     "lowered_gpu"):
            maker = getattr(printer_programs, name, None)
            if maker is not None and not inspect.signature(maker).parameters:
                found[f"printer.{name}"] = maker()
    gemm = workloads.int8_gemm(16, 16, 16)
    for key, value in _scheduled(IRModule({"main": gemm})).items():
        found[f"int8_gemm.{key}"] = value
    for key in [k for k in found if k.startswith(("SEED", "int8_gemm"))][:12]:
        try:
            found[f"{key}.lowered"] = tvm.lower(found[key])
        except tvm.TVMError:
            continue
    return found


def corpus_functions() -> dict[str, PrimFunc]:
    """Every PrimFunc of the corpus, by ``program.function`` name."""
    out = {}
    for name, value in corpus().items():
        for suffix, func in _functions(value):
            out[name + suffix] = func
    return out
