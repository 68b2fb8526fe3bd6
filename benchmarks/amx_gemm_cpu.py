"""Intel AMX: u8 x s8 -> s32 and bf16 -> f32 GEMMs (1024^3) and an int8 NHWC conv2d layer, tensorized with AMX
tiles, next to PyTorch (oneDNN) and the machine's AMX peak.

Run: ``python benchmarks/amx_gemm_cpu.py [--size 1024] [--conv-size 56] [--repeat 10] [--threads 2] [--trials 64]
[--amx-only] [--no-search] [--build-workers 2] [--workloads gemm_int8,gemm_bf16,conv2d] [--no-pin]`` (the process
is pinned to one CPU per physical core unless ``--no-pin``; the AMX peak is measured after the workloads)

Ours, searched (the headline figure): ``search.tune_tir`` on the plain workloads (``amx_gemm``, the direct
``conv2d_nhwc_hwio``) for ``llvm -mcpu=native``; the candidate generator matches the AMX intrinsics by itself
(B packed into the VNNI layout by a copy marked ``layout_rewrite_preproc``; as in ``tune_cpu.py`` and the
search's own runner, that packing is split out and run once per weight, ``search.split_layout_rewrite``, so the
searched and the hand kernels both take B pre-packed), and AMX competes with AVX-512/VNNI and plain code in
the same search (``--amx-only``: AMX sketches only). The row names the intrinsic the best program uses. Ours,
hand: ``intrinsics.x86_amx_schedule`` (2 x 2 accumulator tiles, the K loop inside the intrinsic, B pre-packed,
blocks of C parallel; the conv2d as an im2col GEMM). The GEMMs have one hand row per variant of ``hand_variants``:
the default, the same with the previous issue order (each K step's loads grouped before its multiplies) and with
A's, B's or both's tiles prefetched into L1 two K steps ahead, A copied into contiguous tiles in the call
(``pack_a``), and K chunks of 8 tile steps with A's (packed) or B's chunk stationary in L1 (``stationary``), the
other operand loaded with or without the no-reuse hint (``tileloaddt1``), A's with the multiplies in either order.
PyTorch: ``torch._int_mm`` (s8 x s8: the u8 operand shifted by -128 and corrected), bf16 ``torch.matmul``, and for
the conv2d the quantized oneDNN conv where it runs, else an f32 channels-last one
(timing only). The AMX peak: a TensorIR kernel of 4 accumulator tiles x ``tdpbusd`` on register-resident tiles
per thread, checked against the same kernel in C (``benchmarks/c_peaks.py``): equal results, close rates.

Everything is first compiled for ``-mcpu=sapphirerapids`` (hand schedules and sampled search candidates: the
assembly must hold ``tdpbusd``, ``tdpbf16ps`` and ``ldtilecfg``). On a CPU without AMX the script then says so
and exits 0: nothing is measured there. ``--dry-run`` runs the whole comparison on any CPU with the hand
schedules' descriptions in place of the AMX instructions and a search for this CPU (no AMX candidates): it
checks the script and the numbers; its timings are no AMX figures.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import tensorize as tvm  # noqa: E402
from tensorize.runtime.amx import AMXPermissionError, request_amx_permission  # noqa: E402
from tensorize.script import tir as T  # noqa: E402
from tensorize.target import Target, host_cpu  # noqa: E402

import intrinsics  # noqa: E402,F401
from intrinsics.naming import parse_intrin_name  # noqa: E402
from intrinsics.x86_amx import INSTRUCTIONS, amx_matmul_intrin, impl_variant_intrin, tile_config  # noqa: E402
from intrinsics.x86_amx_model import bf16_to_f32  # noqa: E402
from intrinsics.x86_amx_conv import (amx_conv2d_direct, direct_rows, flatten_input, output_pixels,  # noqa: E402
                                     pack_conv_weight, schedule_amx_conv2d_direct)
from intrinsics.x86_amx_schedule import (amx_conv2d_nhwc, amx_gemm, conv2d_nhwc_hwio, default_k_steps,  # noqa: E402
                                         pack_b, schedule_amx_conv2d, schedule_amx_gemm)
import search  # noqa: E402
from search.context import TuneContext, available_intrinsics  # noqa: E402
from search.postproc import default_postprocs  # noqa: E402
from search.schedule_rule import (AddRFactor, AutoInline, MultiLevelTiling, MultiLevelTilingWithIntrin,  # noqa: E402
                                  ParallelVectorizeUnroll, RandomComputeLocation)
from search.space_generator import PostOrderApply, sample_candidate  # noqa: E402

from c_peaks import CKernelUnavailable, amx_peak_c, ptr  # noqa: E402
from tune_cpu import build_prepacked  # noqa: E402

CROSS = "llvm -mcpu=sapphirerapids"
TARGET = "llvm -mcpu=native"
CONV = (1, 56, 56, 64, 64, 3, 3)  # N, H, W, CI, CO, KH, KW (stride 1, no padding)
AMX_NAME = re.compile(r"matmul_\w+_amx")


def amx_peak_kernel(steps: int = 1 << 18, threads: int = 2):
    """Per thread: configure, zero 4 accumulator tiles, load 2 A and 2 B tiles, ``steps`` x 4 ``tdpbusd``,
    store the accumulators: ``C[t] = steps * A[t] @ B[t]`` (2 x 2 tiles of 16 x 16)."""
    w = tile_config()

    @T.prim_func
    def peak(A: T.Buffer((threads, 32, 64), "uint8"), B: T.Buffer((threads, 2, 16, 64), "int8"),
             C: T.Buffer((threads, 32, 32), "int32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for t in T.parallel(threads):
            with T.block("peak"):
                vt = T.axis.spatial(threads, t)
                T.reads(A[vt, 0:32, 0:64], B[vt, 0:2, 0:16, 0:64], C[vt, 0:32, 0:32])
                T.writes(C[vt, 0:32, 0:32])
                cfg = T.alloc_buffer((8,), "int64", scope="local")
                cfg[0] = T.int64(w[0])
                cfg[1] = T.int64(w[1])
                cfg[2] = T.int64(w[2])
                cfg[3] = T.int64(w[3])
                cfg[4] = T.int64(w[4])
                cfg[5] = T.int64(w[5])
                cfg[6] = T.int64(w[6])
                cfg[7] = T.int64(w[7])
                T.call_llvm_intrin("void", "llvm.x86.ldtilecfg", T.address_of(cfg[0]))
                T.call_llvm_intrin("void", "llvm.x86.tilezero", T.int8(0))
                T.call_llvm_intrin("void", "llvm.x86.tilezero", T.int8(1))
                T.call_llvm_intrin("void", "llvm.x86.tilezero", T.int8(2))
                T.call_llvm_intrin("void", "llvm.x86.tilezero", T.int8(3))
                T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(4), T.address_of(A[vt, 0, 0]), T.int64(64))
                T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(5), T.address_of(A[vt, 16, 0]), T.int64(64))
                T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(6), T.address_of(B[vt, 0, 0, 0]), T.int64(64))
                T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(7), T.address_of(B[vt, 1, 0, 0]), T.int64(64))
                for s in range(steps):
                    T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(0), T.int8(4), T.int8(6))
                    T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(1), T.int8(4), T.int8(7))
                    T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(2), T.int8(5), T.int8(6))
                    T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(3), T.int8(5), T.int8(7))
                T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(0), T.address_of(C[vt, 0, 0]), T.int64(128))
                T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(1), T.address_of(C[vt, 0, 16]), T.int64(128))
                T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(2), T.address_of(C[vt, 16, 0]), T.int64(128))
                T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(3), T.address_of(C[vt, 16, 16]), T.int64(128))

    return peak, 2.0 * threads * steps * 4 * 16 * 16 * 64


def peak_reference(a: np.ndarray, b: np.ndarray, steps: int) -> np.ndarray:
    """What the peak kernels store: per thread ``steps * A @ B`` with B's tiles in the VNNI layout."""
    threads = a.shape[0]
    b_full = b.reshape(threads, 2, 16, 16, 4).transpose(0, 2, 4, 1, 3).reshape(threads, 64, 32)
    return (steps * np.einsum("tmk,tkn->tmn", a.astype(np.int64), b_full.astype(np.int64))).astype(
        np.uint32).view(np.int32)


def packed_b(sch) -> bool:
    """Whether the scheduled function takes B pre-packed (unpadded B: transform_layout changed the signature)."""
    func = sch.mod["main"]
    return len(func.buffer_map[func.params[1]].shape) == 4


def time_call(fn, repeat: int) -> float:
    """Best seconds over ``repeat`` runs after one warm-up (the run others disturbed least)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.min(times))


def paired_time(ours, base, repeat: int, ops: float) -> tuple[float, float, float | None]:
    """``(seconds, ops, baseline seconds)`` of a row: the best of ``repeat`` calls of ``ours`` and of the baseline
    (``base``: a ``torch_rows`` entry, its callable last; None: no baseline), called in alternation after a
    warm-up each, so that a machine whose speed drifts slows both alike (on an H100 node's Xeon, PyTorch's bf16
    matmul measured 3.24 ms at the start of one run and 1.31 ms next to our kernel in another)."""
    fns = [ours] + ([base[-1]] if base else [])
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeat):
        for fn, seen in zip(fns, times):
            start = time.perf_counter()
            fn()
            seen.append(time.perf_counter() - start)
    return min(times[0]), ops, (min(times[1]) if base else None)


def check_assembly() -> None:
    """Compile every schedule for an AMX CPU (works on any host) and check the tile instructions."""
    for func, sched, needed in ((amx_gemm(256, 256, 256), schedule_amx_gemm, ("tdpbusd", "ldtilecfg")),
                                (amx_gemm(256, 256, 256, "bfloat16", "bfloat16"), schedule_amx_gemm,
                                 ("tdpbf16ps", "ldtilecfg")),
                                (amx_conv2d_nhwc(1, 18, 18, 64, 64, 3, 3), schedule_amx_conv2d, ("tdpbusd",)),
                                (amx_conv2d_direct(1, 18, 18, 64, 64, 3, 3), schedule_amx_conv2d_direct,
                                 ("tdpbusd", "tilezero")),
                                (amx_peak_kernel(steps=4)[0], None, ("tdpbusd", "tilezero"))):
        mod = sched(func).mod if sched else func
        asm = tvm.build(mod, target=CROSS).get_source("asm")
        missing = [op for op in needed if op not in asm]
        assert not missing, f"the assembly for {CROSS} lacks {missing}"
    int8_dot = r"tdpb[su][su]d"  # tdpbusd, or tdpbsud where the search swaps the operands (C^T = B . A^T)
    for func, needed in ((amx_gemm(256, 256, 256), int8_dot),
                         (amx_gemm(256, 256, 256, "bfloat16", "bfloat16"), "tdpbf16ps"),
                         (conv2d_nhwc_hwio(1, 10, 10, 64, 64, 3, 3), int8_dot)):
        ctx = TuneContext.create(func, CROSS, seed=0, num_threads=2)
        sketches = [s for s in PostOrderApply().generate_design_space(ctx) if AMX_NAME.search(str(s.trace))]
        assert sketches, f"the search space for {CROSS} holds no AMX sketch"
        asm = tvm.build(sample_candidate(ctx, sketches[0], default_postprocs(ctx), seed=0).mod,
                        target=CROSS).get_source("asm")
        assert re.search(needed, asm) and "ldtilecfg" in asm, f"a searched AMX candidate's assembly lacks {needed}"
    print(f"assembly for {CROSS}: tdpbusd, tdpbf16ps, ldtilecfg and tilezero where expected "
          "(hand schedules and sampled search candidates)")


def amx_only_space() -> PostOrderApply:
    """The default CPU rules with tensorization restricted to the AMX intrinsics the search offers (A packed too;
    not the blockings the hand rows registered) and no untensorized branch."""
    amx = [name for name in available_intrinsics(Target(TARGET)) if AMX_NAME.search(name)]
    return PostOrderApply(rules=[AutoInline(), AddRFactor(),
                                 MultiLevelTilingWithIntrin(intrinsics=amx, keep_untensorized=False),
                                 MultiLevelTiling(), ParallelVectorizeUnroll(), RandomComputeLocation()])


def searched(func, opts, name: str, inputs: list[np.ndarray]):
    """``search.tune_tir`` on ``func`` (parameter 1 the weight) for the host: the best program built with
    its weight packing split out and run once (``tune_cpu.build_prepacked``), its arguments made from
    ``inputs`` (the weight pre-packed), and the intrinsic it uses."""
    if opts.work_dir is None:
        opts.work_dir = tempfile.mkdtemp(prefix="amx_search_")
    work_dir = os.path.join(opts.work_dir, name)
    func = func.with_attr("layout_free_buffers", [1])
    start = time.perf_counter()
    db = search.tune_tir(func, TARGET, work_dir, max_trials_global=opts.trials, num_trials_per_iter=16,
                         num_threads=opts.threads, space=amx_only_space() if opts.amx_only else None,
                         strategy_config={"population_size": opts.population,
                                          "init_min_unmeasured": min(50, opts.population)},
                         builder_config={"timeout_s": opts.build_timeout, "max_workers": opts.build_workers,
                                         "cpus": getattr(opts, "build_cpus", None)},
                         progress=False)
    print(f"{name}: {opts.trials} trials tuned in {time.perf_counter() - start:.0f} s; measured by intrinsic "
          f"family: {family_summary(db)}")
    sch = search.compile_tir(db, func, TARGET)
    if sch is None:
        raise RuntimeError(f"the search found no valid program for {name} (see {work_dir})")
    text = str(sch.trace)
    used = sorted(name for name in tvm.tir.TensorIntrin.list_names() if re.search(rf"\b{name}\b", text))
    sketches = sorted(set(re.findall(r'"amx_(panel|a|b)"', text)))  # search.schedule_rule.amx_blocking's sketch
    lib, args = build_prepacked(sch.mod, inputs)
    return lib, args, ", ".join(used + [f"sketch {s}" for s in sketches]) or "no intrinsic"


def family_summary(db) -> str:
    """How many valid candidates each intrinsic family (the name's instruction set: ``amx``, ``vnni``, ``avx512``...;
    ``plain`` for none) had measured, and the best of each, e.g. ``amx 12 (best 1.61 ms)``."""
    names = list(tvm.tir.TensorIntrin.list_names())

    def isa_of(name: str) -> str:
        try:
            return parse_intrin_name(name).isa
        except ValueError:  # an alias or another scheme's name
            return name.rsplit("_", 1)[-1]

    best: dict[str, list] = {}
    for rec in db.get_all_tuning_records():
        if not rec.is_valid:
            continue
        text = json.dumps(rec.trace_json)
        used = {isa_of(n) for n in names if f'"{n}"' in text}
        for family in used or {"plain"}:
            entry = best.setdefault(family, [0, float("inf")])
            entry[0] += 1
            entry[1] = min(entry[1], rec.mean_run_secs)
    return ", ".join(f"{f} {n} (best {t * 1e3:.2f} ms)" for f, (n, t) in sorted(best.items(), key=lambda x: x[1][1]))


def pin_to_cores(threads: int) -> list[int] | None:
    """Restrict this process to ``threads`` CPUs on distinct physical cores (the first SMT sibling of each), before
    any thread pool starts: PyTorch's threads and ours then share the same cores, no two share one core's AMX
    unit, and none migrates (unpinned, the same kernel's best time varied 2x between rounds on an H100 node's
    Xeon). Returns the CPUs, or None where the topology cannot be read, too few cores are free, or the
    affinity cannot be set."""
    cores: dict = {}
    try:
        for cpu in sorted(os.sched_getaffinity(0)):
            topo = f"/sys/devices/system/cpu/cpu{cpu}/topology"
            with open(f"{topo}/physical_package_id") as pkg, open(f"{topo}/core_id") as core:
                cores.setdefault((pkg.read().strip(), core.read().strip()), cpu)
        cpus = list(cores.values())[:threads]
        if len(cpus) < threads:
            return None
        os.sched_setaffinity(0, cpus)
    except (OSError, AttributeError):
        return None
    return cpus


def has_amx() -> bool:
    features = host_cpu()[1]
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        flags = []
    return all(f in features for f in ("amx-tile", "amx-int8", "amx-bf16")) and "amx_tile" in flags


def torch_rows(a_u8, b_s8, a_bf, b_bf, data, weight, threads: int) -> dict:
    """PyTorch's baselines, each ``(output for checks or None, callable)`` (timed next to ours by
    ``paired_time``), missing with a note where it does not run."""
    out: dict = {}
    try:
        import torch
    except ImportError:
        return {"note": "torch is not installed"}
    torch.set_num_threads(threads)
    out["note"] = f"torch {torch.__version__}"
    a = torch.from_numpy((a_u8.astype(np.int16) - 128).astype(np.int8))
    bt = torch.from_numpy(np.ascontiguousarray(b_s8.T))
    corr = torch.from_numpy(128 * b_s8.astype(np.int32).sum(axis=1))
    int8_mm = lambda: torch._int_mm(a, bt) + corr  # noqa: E731
    out["int8"] = (int8_mm().numpy(), int8_mm)
    x = torch.from_numpy(bf16_to_f32(a_bf)).to(torch.bfloat16)
    y = torch.from_numpy(np.ascontiguousarray(bf16_to_f32(b_bf).T)).to(torch.bfloat16)
    out["bf16"] = (torch.matmul(x, y).float().numpy(), lambda: torch.matmul(x, y))
    xd = torch.from_numpy(data.astype(np.float32)).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
    wd = torch.from_numpy(weight.astype(np.float32)).permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last)
    out["conv_f32"] = (None, lambda: torch.nn.functional.conv2d(xd, wd))
    try:
        import warnings

        warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")
        torch.backends.quantized.engine = "onednn"
        qx = torch.quantize_per_tensor(xd, 1.0, 0, torch.quint8)
        qw = torch.quantize_per_tensor(wd - 0.0, 1.0, 0, torch.qint8)
        conv = torch.ao.nn.quantized.Conv2d(weight.shape[2], weight.shape[3], weight.shape[0])
        conv.set_weight_bias(qw, None)
        conv.scale, conv.zero_point = 64.0, 0
        conv(qx)  # raises where this build's engine lacks the quantized conv
        out["conv_q"] = (None, lambda: conv(qx))
    except Exception as err:  # noqa: BLE001 - an engine this build lacks: report it and go on
        out["conv_q_note"] = f"quantized conv2d failed: {err}"
    return out


def hand_variants(a_dtype: str, b_dtype: str, K: int, emulate: bool) -> list:
    """``(label, schedule_amx_gemm keyword arguments)`` of the hand GEMM rows: 2 x 2 accumulator tiles, B pre-packed,
    with the impl (issue order, software prefetch), K steps per call and cache blocking varied, and the default
    built without one of the AMX lowering passes (key ``"disabled_pass"``, for ``build_hand``). In a dry run the
    impl variants are left out (their intrinsics run real tile instructions)."""
    k_step = INSTRUCTIONS[(a_dtype, b_dtype)][2]
    chunk = 8 if K % (8 * k_step) == 0 else None  # 8 tile steps a K chunk where K holds them
    rows = [("2x2 tiles", {})]
    if not emulate:  # the AMX lowering passes off (each block of C configures the tiles, or zeroes C in memory
        # first), and impl variants of the default blocking
        rows += [("2x2 tiles, tiles configured per block", {"disabled_pass": ["tir.HoistTileConfig"]}),
                 ("2x2 tiles, C zeroed in memory, then loaded", {"disabled_pass": ["tir.FuseTileZero"]})]
        if chunk:  # K split over calls in a loop around them: the accumulators stay in their tiles, or not
            rows += [(f"2x2 tiles, {chunk} K steps a call", {"k_steps": chunk}),
                     (f"2x2 tiles, {chunk} K steps a call, accumulators through C",
                      {"k_steps": chunk, "disabled_pass": ["tir.PromoteTileAccumulators"]})]
        name = amx_matmul_intrin(a_dtype, b_dtype, 2, 2, default_k_steps(K, k_step))
        rows.append(("2x2 tiles, grouped issue (loads, then multiplies)",
                     {"intrin": impl_variant_intrin(name, "grouped")}))
        for operands in ("a", "b", "ab"):
            rows.append((f"2x2 tiles, {' and '.join(operands.upper())} tiles prefetched 2 steps ahead",
                         {"intrin": impl_variant_intrin(name, prefetch=operands, distance=2)}))
    rows += [("2x2 tiles, A packed in the call", {"pack_a": True}),
             ("2x2 tiles, A packed, its K chunk stationary in L1",
              {"pack_a": True, "stationary": "a", "k_steps": chunk}),
             ("2x2 tiles, B's K chunk stationary in L1", {"stationary": "b", "k_steps": chunk})]
    if not emulate:  # the streaming operand of the stationary schedules loaded with the no-reuse hint
        steps = chunk or default_k_steps(K, k_step)
        packed = amx_matmul_intrin(a_dtype, b_dtype, 2, 2, steps, a_packed=True)
        rows += [("2x2 tiles, A packed, its K chunk stationary in L1, B tiles by tileloaddt1",
                  {"pack_a": True, "stationary": "a", "k_steps": chunk,
                   "intrin": impl_variant_intrin(packed, stream="b")}),
                 ("2x2 tiles, A packed, its K chunk stationary in L1, multiplies by rows",  # A-packed: by columns
                  {"pack_a": True, "stationary": "a", "k_steps": chunk,
                   "intrin": impl_variant_intrin(packed, multiply_order="rows")}),
                 ("2x2 tiles, B's K chunk stationary in L1, A tiles by tileloaddt1",
                  {"stationary": "b", "k_steps": chunk,
                   "intrin": impl_variant_intrin(amx_matmul_intrin(a_dtype, b_dtype, 2, 2, steps), stream="a")})]
    return rows


def build_hand(M: int, N: int, K: int, dtypes, variant: dict, emulate: bool = False, parallel: bool = True,
               target=None):
    """Build one ``hand_variants`` row's GEMM: ``schedule_amx_gemm`` with its arguments, lowered without the passes
    it names under ``"disabled_pass"``."""
    variant = dict(variant)
    disabled = variant.pop("disabled_pass", ())
    sch = schedule_amx_gemm(amx_gemm(M, N, K, *dtypes), emulate=emulate, parallel=parallel, **variant)
    with tvm.transform.PassContext(disabled_pass=disabled):
        return tvm.build(sch.mod, target=target or TARGET)


def gemm_rows(a, b, torch_res: dict, opts, emulate: bool, kind: str) -> list:
    """The hand-scheduled GEMM variants (``hand_variants``) and the searched program for ``kind`` (``"int8"``:
    u8 x s8 -> s32, checked exactly; ``"bf16"``: bf16 -> f32 on bit patterns, within bf16 tolerance), each timed
    next to PyTorch."""
    (M, K), N = a.shape, b.shape[0]
    if kind == "int8":
        dtypes, title, baseline = ("uint8", "int8"), "u8.s8->s32 GEMM", "_int_mm"
        A, B, C = tvm.nd.array(a), tvm.nd.array(pack_b(b)), tvm.nd.array(np.zeros((M, N), np.int32))
        B_plain = b
        expected = a.astype(np.int32) @ b.astype(np.int32).T
        check = lambda got: np.testing.assert_array_equal(got, expected)  # noqa: E731
    else:
        dtypes, title, baseline = ("bfloat16", "bfloat16"), "bf16->f32 GEMM", "bf16 matmul"
        A, B = tvm.nd.array(a, dtype="bfloat16"), tvm.nd.array(pack_b(b, 2), dtype="bfloat16")
        C, B_plain = tvm.nd.array(np.zeros((M, N), np.float32)), tvm.nd.array(b, dtype="bfloat16")
        ref = bf16_to_f32(a).astype(np.float64) @ bf16_to_f32(b).astype(np.float64).T
        check = lambda got: np.testing.assert_allclose(got, ref, atol=2e-6 * K * np.abs(ref).max())  # noqa: E731
    base = torch_res.get(kind)
    if kind == "int8" and base:  # PyTorch's bf16 matmul rounds its output to bf16: not checked to f32 tolerance
        check(base[0])
    ops = 2.0 * M * N * K
    rows = []
    for label, kwargs in hand_variants(*dtypes, K, emulate):
        f = build_hand(M, N, K, dtypes, kwargs, emulate)
        C.copyfrom(np.full((M, N), 7, C.dtype))  # the kernel must overwrite C
        f(A, B, C)
        check(C.numpy())
        rows.append((f"{title}, hand: {label}", *paired_time(lambda f=f: f(A, B, C), base, opts.repeat, ops),
                     baseline))
    if opts.no_search:
        return rows
    fs, args, used = searched(amx_gemm(M, N, K, *dtypes), opts, f"gemm_{kind}", [A if kind == "bf16" else a, B_plain])
    C.copyfrom(np.full((M, N), 7, C.dtype))
    fs(*args, C)
    check(C.numpy())
    rows.append((f"{title}, searched: {used}", *paired_time(lambda: fs(*args, C), base, opts.repeat, ops), baseline))
    return rows


def gemm_int8_rows(a, b, torch_res: dict, opts, emulate: bool) -> list:
    """u8 x s8 -> s32 GEMM rows (``gemm_rows``)."""
    return gemm_rows(a, b, torch_res, opts, emulate, "int8")


def gemm_bf16_rows(a_bf, b_bf, torch_res: dict, opts, emulate: bool) -> list:
    """bf16 -> f32 GEMM rows on bf16 bit patterns (``gemm_rows``)."""
    return gemm_rows(a_bf, b_bf, torch_res, opts, emulate, "bf16")


def conv2d_rows(conv_shape, data, weight, torch_res: dict, opts, emulate: bool) -> list:
    """int8 NHWC conv2d: the hand im2col AMX GEMM and the searched direct convolution, checked exactly."""
    n, h, w, ci, co, kh, kw = conv_shape
    oh, ow = h - kh + 1, w - kw + 1
    conv_sch = schedule_amx_conv2d(amx_conv2d_nhwc(*conv_shape), emulate=emulate)
    fc = tvm.build(conv_sch.mod, target=TARGET)
    wk = np.ascontiguousarray(weight.reshape(kh * kw * ci, co).T)
    D, Wt = tvm.nd.array(data), tvm.nd.array(pack_b(wk) if packed_b(conv_sch) else wk)
    O = tvm.nd.array(np.zeros((n * oh * ow, co), np.int32))
    fc(D, Wt, O)
    ref = sum(np.einsum("nhwc,co->nhwo", data[:, r:r + oh, s:s + ow].astype(np.int64), weight[r, s].astype(np.int64))
              for r in range(kh) for s in range(kw))
    np.testing.assert_array_equal(O.numpy().reshape(n, oh, ow, co), ref)
    base = torch_res.get("conv_q") or torch_res.get("conv_f32")
    base_name = "quantized conv2d" if torch_res.get("conv_q") else "f32 conv2d"
    ops = 2.0 * n * oh * ow * co * kh * kw * ci
    rows = [(f"conv2d NHWC int8 {h}x{w}x{ci}->{co} {kh}x{kw}, hand (im2col GEMM)",
             *paired_time(lambda: fc(D, Wt, O), base, opts.repeat, ops), base_name)]
    if ci % 64 == 0 and co % 32 == 0:  # the direct convolution: the input's pixels flat (its rows padded once, as a
        # producer would write them), the output rows W wide (the OW valid pixels of each read in place)
        direct = schedule_amx_conv2d_direct(amx_conv2d_direct(*conv_shape), emulate=emulate)
        fd = tvm.build(direct.mod, target=TARGET)
        Df = tvm.nd.array(flatten_input(data, kh, kw))
        Wd = tvm.nd.array(pack_conv_weight(np.ascontiguousarray(weight.transpose(3, 0, 1, 2)), 4))
        Od = tvm.nd.array(np.full((direct_rows(n, h, w, kh, kw)[1], co), 7, np.int32))
        fd(Df, Wd, Od)
        np.testing.assert_array_equal(Od.numpy()[output_pixels(n, h, w, kh, kw)], ref)
        rows.append((f"conv2d NHWC int8, hand: direct (pixels flat, taps in tiles, output rows {w} wide)",
                     *paired_time(lambda: fd(Df, Wd, Od), base, opts.repeat, ops), base_name))
    if opts.no_search:
        return rows
    fs, args, used = searched(conv2d_nhwc_hwio(*conv_shape), opts, "conv2d_int8", [data, weight])
    Os = tvm.nd.array(np.zeros((n, oh, ow, co), np.int32))
    fs(*args, Os)
    np.testing.assert_array_equal(Os.numpy(), ref)
    rows.append((f"conv2d NHWC int8, searched: {used}", *paired_time(lambda: fs(*args, Os), base, opts.repeat, ops),
                 base_name))
    if ci % 64 == 0 and co % 32 == 0:  # the search on the flat-pixel formulation (the direct convolution's)
        fd, dargs, dused = searched(amx_conv2d_direct(*conv_shape), opts, "conv2d_direct_int8",
                                    [flatten_input(data, kh, kw), np.ascontiguousarray(weight.transpose(3, 0, 1, 2))])
        Osd = tvm.nd.array(np.full((direct_rows(n, h, w, kh, kw)[1], co), 7, np.int32))
        fd(*dargs, Osd)
        np.testing.assert_array_equal(Osd.numpy()[output_pixels(n, h, w, kh, kw)], ref)
        rows.append((f"conv2d NHWC int8, searched on flat pixels: {dused}",
                     *paired_time(lambda: fd(*dargs, Osd), base, opts.repeat, ops), base_name))
    return rows


WORKLOADS = {"gemm_int8": gemm_int8_rows, "gemm_bf16": gemm_bf16_rows, "conv2d": conv2d_rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--conv-size", type=int, default=CONV[1], help="the conv2d layer's input height and width")
    parser.add_argument("--trials", type=int, default=64, help="programs the search measures per workload")
    parser.add_argument("--amx-only", action="store_true", help="search AMX sketches only")
    parser.add_argument("--no-search", action="store_true",
                        help="the hand rows only (a minute where the search takes several): which variant wins")
    parser.add_argument("--build-timeout", type=float, default=120.0, help="seconds per candidate build")
    parser.add_argument("--population", type=int, default=None,
                        help="the evolutionary search's population (default 512; 16 in a dry run)")
    parser.add_argument("--work-dir", default=None, help="the search's folder (default: a temporary one)")
    parser.add_argument("--build-workers", type=int, default=2, help="processes that build search candidates")
    parser.add_argument("--workloads", default="gemm_int8,gemm_bf16,conv2d",
                        help="comma-separated subset of gemm_int8, gemm_bf16, conv2d")
    parser.add_argument("--no-pin", action="store_true",
                        help="leave the threads unpinned (default: one CPU per physical core, see pin_to_cores)")
    parser.add_argument("--dry-run", action="store_true",
                        help="any CPU: descriptions in place of the AMX instructions (timings are not AMX figures)")
    opts = parser.parse_args()
    opts.population = opts.population or (16 if opts.dry_run else 512)
    os.environ["TVM_NUM_THREADS"] = str(opts.threads)
    allowed = sorted(os.sched_getaffinity(0))
    pinned = None if opts.no_pin else pin_to_cores(opts.threads)
    # the search's builders compile on the CPUs the timing leaves free (inheriting the pinning, 8 builders shared 2)
    opts.build_cpus = [cpu for cpu in allowed if cpu not in (pinned or [])] or allowed
    print(f"threads pinned to CPUs {pinned}, one per core" if pinned else "threads not pinned")
    check_assembly()
    emulate = opts.dry_run
    if emulate:
        print("DRY RUN: the AMX intrinsics are replaced by their descriptions (plain code); no AMX figure below")
    elif not has_amx():
        print(f"no AMX on this CPU ({host_cpu()[0]}: amx-tile/amx-int8/amx-bf16 missing): nothing measured "
              "(--dry-run checks the script with plain code instead)")
        return
    else:
        try:
            request_amx_permission()
        except AMXPermissionError as err:
            print(f"AMX present but not usable: {err}")
            return
    M = N = K = opts.size
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (M, K), dtype=np.uint8)
    b = rng.integers(-128, 128, (N, K), dtype=np.int8)
    a_bf = (np.asarray(rng.standard_normal((M, K)), np.float32).view(np.uint32) >> 16).astype(np.uint16)
    b_bf = (np.asarray(rng.standard_normal((N, K)), np.float32).view(np.uint32) >> 16).astype(np.uint16)
    conv_shape = (1, opts.conv_size, opts.conv_size) + CONV[3:]
    n, h, w, ci, co, kh, kw = conv_shape
    data = rng.integers(0, 256, (n, h, w, ci), dtype=np.uint8)
    weight = rng.integers(-128, 128, (kh, kw, ci, co), dtype=np.int8)
    rows = []  # (name, seconds, ops, torch seconds)
    torch_res = torch_rows(a, b, a_bf, b_bf, data, weight, opts.threads)

    wanted = {w.strip() for w in opts.workloads.split(",") if w.strip()}
    unknown = wanted - set(WORKLOADS)
    if unknown:
        raise SystemExit(f"unknown --workloads {sorted(unknown)}; choose from {list(WORKLOADS)}")
    data_sets = {"gemm_int8": (a, b), "gemm_bf16": (a_bf, b_bf), "conv2d": (conv_shape, data, weight)}
    for name, run in WORKLOADS.items():
        if name in wanted:
            new = run(*data_sets[name], torch_res, opts, emulate)
            for row in new:
                print(f"{row[0]}: {row[1] * 1e3:.2f} ms, {row[2] / row[1] / 1e9:.1f} GOPS"
                      + (f", {row[3] / row[1]:.2f}x {row[4]}" if row[3] else ""))
            rows += new

    pa = rng.integers(0, 256, (opts.threads, 32, 64), dtype=np.uint8)
    pb = rng.integers(-128, 128, (opts.threads, 2, 16, 64), dtype=np.int8)
    pc = np.zeros((opts.threads, 32, 32), np.int32)
    if emulate:  # the peak kernel on the tile model: its result only
        from intrinsics.x86_amx_model import AMXModel
        from tensorize.codegen.python.interpreter import run_prim_func

        run_prim_func(amx_peak_kernel(steps=3, threads=opts.threads)[0], pa, pb, pc, externs=AMXModel().externs())
        np.testing.assert_array_equal(pc, peak_reference(pa, pb, 3))
        print("AMX peak kernel: result checked on the tile model; peak = our int8 GEMM's rate (dry run)")
        print_rows(rows, rows[0][2] / rows[0][1] / 1e9, torch_res, opts)
        return
    # the peak last: on an H100 node's Xeon every kernel, PyTorch's too, ran up to 2x slower for a while after
    # the peak kernels' seconds of tdpbusd; one thread as well: ours and C's should both scale 2x
    peak = 0.0
    for threads in sorted({1, opts.threads}):
        ours, c_peak = peak_rates(threads, opts.repeat, rng)
        c_text = f"C (gcc -mamx-int8) {c_peak:9.1f} GOPS ({ours / c_peak:.0%} of C; the same result)" \
            if c_peak else "C reference unavailable"
        print(f"AMX peak, {threads} thread(s) x 4 tiles: ours {ours:9.1f} GOPS, {c_text}")
        if threads == opts.threads:
            peak = max(ours, c_peak or 0.0)
    print_rows(rows, peak, torch_res, opts)


def peak_rates(threads: int, repeat: int, rng) -> tuple[float, float | None]:
    """GOPS of our AMX peak kernel and of the C one on ``threads`` threads (None: no C compiler), after
    checking that both store ``steps * A @ B``."""
    pa = rng.integers(0, 256, (threads, 32, 64), dtype=np.uint8)
    pb = rng.integers(-128, 128, (threads, 2, 16, 64), dtype=np.int8)
    pc = np.zeros((threads, 32, 32), np.int32)
    peak_func, peak_ops = amx_peak_kernel(threads=threads)
    fp = tvm.build(peak_func, target=TARGET)
    PA, PB, PC = tvm.nd.array(pa), tvm.nd.array(pb), tvm.nd.array(pc)
    fp(PA, PB, PC)
    steps = int(peak_ops / (2.0 * threads * 4 * 16 * 16 * 64))
    np.testing.assert_array_equal(PC.numpy(), peak_reference(pa, pb, steps))
    ours = peak_ops / time_call(lambda: fp(PA, PB, PC), repeat) / 1e9
    try:
        c_fn = amx_peak_c()
    except CKernelUnavailable as err:
        print(f"C reference of the AMX peak skipped: {err}")
        return ours, None
    c_fn(ptr(pa), ptr(pb), ptr(pc), steps, threads)
    np.testing.assert_array_equal(pc, PC.numpy())
    return ours, peak_ops / time_call(lambda: c_fn(ptr(pa), ptr(pb), ptr(pc), steps, threads), repeat) / 1e9


def print_rows(rows, peak: float, torch_res: dict, opts) -> None:
    print(f"{torch_res.get('note')}; {opts.threads} threads; best of {opts.repeat} runs; "
          f"{torch_res.get('conv_q_note', '')}")
    print(f"AMX peak used for 'of peak': {peak:.0f} GOPS int8, {peak / 2:.0f} GFLOPS bf16")
    print(f"{'variant':72s} {'ms':>8s} {'GOPS':>9s} {'of peak':>8s} {'PyTorch ms':>11s} {'speedup':>8s}  baseline")
    for name, seconds, ops, torch_s, baseline in rows:
        gops = ops / seconds / 1e9
        # tdpbf16ps does half the multiply-adds of tdpbusd in the same time: bf16 rows against half the peak
        row_peak = peak / 2 if name.startswith("bf16") else peak
        tms = f"{torch_s * 1e3:11.2f}" if torch_s else f"{'-':>11s}"
        speed = f"{torch_s / seconds:8.2f}" if torch_s else f"{'-':>8s}"
        print(f"{name:72s} {seconds * 1e3:8.2f} {gops:9.1f} {gops / row_peak:8.1%} {tms} {speed}  {baseline}")


if __name__ == "__main__":
    main()
