"""The auto-scheduler against the libraries a user would pick instead, side by side in one process.

Run: ``python benchmarks/tune_cpu.py [--trials 64] [--workloads gemm,gemm_int8,conv2d,dep_conv] [--threads N]``
(``gemm_int8_sat``: the int8 GEMM with the saturating int8 dots admitted, ``search.tune_tir(intrinsics=...)``)

For each workload: ``search.tune_tir`` with the trial budget (evolutionary search, LightGBM ranking
model, configs/search/evolutionary.yaml's parameters), then the best program is built, checked
against numpy and timed next to PyTorch (oneDNN: ``mkldnn_linear`` for fp32 GEMM, ``_int_mm`` for
int8 GEMM, channels-last ``conv2d``), onnxruntime's ``MatMulInteger`` for the int8 GEMM (MLAS: the fast int8
GEMM on CPUs without VNNI, where ``_int_mm`` has none), numpy (OpenBLAS; this script unsets ``OPENBLAS_CORETYPE`` /
``OPENBLAS_L2_SIZE`` in its own process so OpenBLAS picks its best kernel) and, when ``apache-tvm`` is
installed, TVM MetaSchedule with the same budget. Every row is timed the same way: blocks of calls
per library with a pause between libraries (two spinning thread pools slow each other when they
alternate call by call), the median of ``--repeat`` blocks. Ours and PyTorch alternate over three
such rounds and each reports the median round, so a change of the machine's speed during the run
(frequency, other tenants) moves both sides of the ratio.

Each workload's weight (GEMM ``B``, the convolution kernels) is marked layout-free (the function attribute
``layout_free_buffers``), as a model's constant weights are: the search may pack it into the blocked
layout its tiles read (``rewrite_layout``), and the tuned kernel is timed with the weight packed once
beforehand (``search.split_layout_rewrite``), as MetaSchedule's ``rewrite_layout`` and oneDNN's
pre-reordered weights are used. ``--threads N`` sets the threads of every library and the search.

Each workload runs in a process of its own (this script again, with ``--row-out``): the thread pools and
libraries an earlier workload left in a process (TVM's runtime, PyTorch's) slowed a later 70 us
depthwise kernel by half when all four shared one.

Prints GFLOPS, the ratio to each baseline, the tuning wall time with its split (search / build /
run) and the trial at which 90% of the final result was reached, and writes ``results/tune_cpu.md``.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time

for _var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_var, None)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import search  # noqa: E402
from search.measure.tasks import pack_weights  # noqa: E402
import tensorize as tvm  # noqa: E402
from experiments.tuning import search_group_file  # noqa: E402
from experiments.workloads import get_workload  # noqa: E402
from tensorize import te  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = "llvm -mcpu=native"
SHAPES = {"gemm": "1024", "gemm_int8": "1024", "conv2d": "resnet_56", "dep_conv": "mobilenet_112"}


#: The clock of ``block_time``: wall time, or with ``--clock thread`` (single-threaded runs only) the CPU
#: time of this thread, which every library's kernel runs in when it has one thread: on a machine shared
#: with other jobs it leaves out the time slices the kernel lost.
CLOCK = {"fn": time.perf_counter}


ROUNDS = 3  # alternating rounds of ours and PyTorch


def block_time(fn, repeat: int, min_secs: float = 0.2) -> float:
    """Median seconds per call over ``repeat`` blocks of calls, each block at least ``min_secs`` long."""
    clock = CLOCK["fn"]
    fn()
    start = clock()
    fn()
    one = max(clock() - start, 1e-7)
    number = max(1, int(min_secs / one))
    times = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            fn()
        times.append((clock() - start) / number)
    time.sleep(0.3)  # let this library's spinning threads go idle before the next one runs
    return float(np.median(times))


def numpy_time(fn, repeat: int, num_threads: int | None) -> float:
    """``block_time`` of a numpy call with OpenBLAS limited to ``num_threads`` (its pool starts at import)."""
    if not num_threads:
        return block_time(fn, repeat)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        logging.warning("threadpoolctl is not installed: numpy runs with its own thread count")
        return block_time(fn, repeat)
    with threadpool_limits(limits=num_threads):
        return block_time(fn, repeat)


def torch_call(name: str, inputs: list[np.ndarray], params: dict):
    """(label, callable) of PyTorch's kernel for the workload, or None."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(int(os.environ.get("TVM_NUM_THREADS", 0)) or os.cpu_count() or 2)
    if name == "gemm":
        a, b = (torch.from_numpy(x) for x in inputs)
        try:
            a_m, w_m = a.to_mkldnn(), b.t().contiguous().to_mkldnn()
            torch._C._nn.mkldnn_linear(a_m, w_m, None)
            return "PyTorch oneDNN mkldnn_linear", lambda: torch._C._nn.mkldnn_linear(a_m, w_m, None)
        except (RuntimeError, AttributeError):
            return "PyTorch torch.mm", lambda: torch.mm(a, b)
    if name == "gemm_int8":
        a = torch.from_numpy((inputs[0].astype(np.int16) - 128).astype(np.int8))
        bt = torch.from_numpy(np.ascontiguousarray(inputs[1].T))
        try:
            torch._int_mm(a, bt)
        except RuntimeError:
            return None
        return "PyTorch _int_mm (s8)", lambda: torch._int_mm(a, bt)
    if name in ("conv2d", "dep_conv"):
        data, kernel = inputs
        x = torch.from_numpy(data).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        if name == "dep_conv":
            w = torch.from_numpy(np.ascontiguousarray(kernel.transpose(2, 0, 1)[:, None]))
            groups = params["C"]
        else:
            w = torch.from_numpy(np.ascontiguousarray(kernel.transpose(3, 2, 0, 1)))
            groups = 1
        w = w.contiguous(memory_format=torch.channels_last)

        def run():
            with torch.no_grad():
                return torch.nn.functional.conv2d(x, w, stride=params["stride"], padding=params["pad"], groups=groups)
        return "PyTorch channels-last conv2d", run
    return None


def _matmul_integer(a_shape, b: np.ndarray, threads: int | None = None):
    """An onnxruntime session of ``MatMulInteger`` (u8 input ``a`` of ``a_shape`` times the s8 constant ``b``,
    s32 out) and the session's run on a given ``a``; None when onnx/onnxruntime are missing."""
    try:
        import onnxruntime  # noqa: F401 - the session below needs it
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    from experiments.framework_baselines import ort_session

    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["out"])], "gemm_int8",
                              [helper.make_tensor_value_info("a", TensorProto.UINT8, list(a_shape))],
                              [helper.make_tensor_value_info("out", TensorProto.INT32, [a_shape[0], b.shape[1]])],
                              [numpy_helper.from_array(np.ascontiguousarray(b.astype(np.int8)), "b")])
    session = ort_session(graph, threads)
    return lambda a: session.run(["out"], {"a": a})


def onnxruntime_int8_call(inputs: list[np.ndarray]):
    """(label, callable) of onnxruntime's ``MatMulInteger`` (MLAS u8 x s8 -> s32, the int8 GEMM a user on a CPU
    without VNNI would pick: PyTorch's ``_int_mm`` has no fast kernel there) with B as a constant weight, or
    None when onnx/onnxruntime are missing."""
    a, b = inputs
    run = _matmul_integer(a.shape, b, int(os.environ.get("TVM_NUM_THREADS", 0)) or os.cpu_count() or 2)
    if run is None:
        return None
    if not np.array_equal(run(a)[0], a.astype(np.int32) @ b.astype(np.int32)):
        raise RuntimeError("onnxruntime's MatMulInteger disagrees with numpy on the benchmark's inputs")
    # Without VNNI, MLAS sums pairs of u8 x s8 products in int16 (vpmaddubsw) and saturates: exact only for
    # activations below 128 or small weights (the benchmark's are within [-4, 4]). A full-range check
    # (64 x 128 x 32) says whether this machine's kernel is exact in general; the label says so where it is not.
    rng = np.random.default_rng(1)
    full_a, full_b = rng.integers(0, 256, (64, 128), dtype=np.uint8), rng.integers(-128, 128, (128, 32), dtype=np.int8)
    exact = np.array_equal(_matmul_integer(full_a.shape, full_b)(full_a)[0],
                           full_a.astype(np.int32) @ full_b.astype(np.int32))
    label = "onnxruntime MatMulInteger (MLAS)" + ("" if exact else ", saturates int16 on full-range inputs")
    return label, lambda: run(a)


def to_tvm027(text: str) -> str:
    """Our TVMScript (older TVM's spelling) in TVM 0.27's dialect: ``T.sblock``, ``s_tir=True``, ``tirx.noalias``."""
    text = re.sub(r"@T\.prim_func\((.*?)\)", r"@T.prim_func(s_tir=True, \1)", text)
    text = re.sub(r"@T\.prim_func\n", "@T.prim_func(s_tir=True)\n", text)
    return (text.replace("T.block(", "T.sblock(").replace("T.block_attr(", "T.sblock_attr(")
            .replace("T.alloc_buffer(", "T.sblock_alloc_buffer(").replace('"tir.noalias"', '"tirx.noalias"'))


def tvm_metaschedule(func, trials: int, work_dir: str, inputs, out_shape, out_dtype, repeat: int):
    """TVM MetaSchedule with the same budget, timed the same way; (seconds, tuning seconds) or a reason."""
    try:
        import tvm as apache_tvm  # Apache TVM, not this project
        from tvm.s_tir import meta_schedule as ms
    except ImportError as err:
        return f"not installed ({err.name}); pip install apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post0"
    try:
        mod = apache_tvm.script.from_source(to_tvm027(func.script()))
        if not isinstance(mod, apache_tvm.IRModule):
            mod = apache_tvm.IRModule({"main": mod.with_attr("global_symbol", "main")})
        # TVM 0.27 takes targets as dicts; the same CPU and thread count as ours.
        ours = tvm.target.Target(TARGET)
        target = apache_tvm.target.Target({"kind": "llvm", "mcpu": ours.mcpu, "num-cores": os.cpu_count() or 2})
        start = time.perf_counter()
        db = ms.tune_tir(mod, target, work_dir, max_trials_global=trials, num_trials_per_iter=16)
        tuning = time.perf_counter() - start
        sch = ms.tir_integration.compile_tir(db, mod, target)
        if sch is None:
            return f"no valid program in {trials} trials (every candidate failed to build or run)"
        lib = apache_tvm.compile(sch.mod, target=target)
        dev = apache_tvm.cpu()
        args = [apache_tvm.runtime.tensor(x, dev) for x in inputs]
        out = apache_tvm.runtime.tensor(np.zeros(out_shape, out_dtype), dev)
        return block_time(lambda: lib["main"](*args, out), repeat), tuning
    except Exception as err:  # noqa: BLE001 - a peer's failure is reported, not fatal
        return f"failed: {type(err).__name__}: {str(err)[:200]}"


#: The weights (parameter indices) of each workload: constants a model packs once (``layout_free_buffers``).
WEIGHTS = {"gemm": [1], "gemm_int8": [1], "conv2d": [1], "dep_conv": [1]}


def build_prepacked(mod, inputs: list):
    """Build the tuned ``mod`` with its weight packing split out (``search.split_layout_rewrite``), pack the
    weights among ``inputs`` (numpy arrays or tensors) once, as the search's runner does
    (``search.measure.tasks.pack_weights``), and return ``(lib, arguments)`` for the kernel alone."""
    lib = tvm.build(search.split_layout_rewrite(mod)[0], target=TARGET)
    dev = tvm.cpu(0)
    call = [x if isinstance(x, tvm.nd.Tensor) else tvm.nd.array(x, dev) for x in inputs]
    return lib, pack_weights(lib, call)  # packed weights come back as numpy arrays, which calls accept


def run_workload(name: str, trials: int, repeat: int, work_root: str, strategy_config: dict, with_tvm: bool,
                 num_threads: int | None = None, seed: int = 0):
    # "gemm_int8_sat": the int8 GEMM with the int8 dots that saturate int16 pair sums admitted too (MLAS's
    # contract on CPUs without VNNI; exact on this benchmark's inputs, whose weights are within [-4, 4])
    base = name.removesuffix("_sat")
    w = get_workload(base, SHAPES[base], "uint8" if base == "gemm_int8" else "float32")
    func = te.create_prim_func(w.args).with_attr("layout_free_buffers", WEIGHTS[base])
    logging.info("tuning %s %s (%d trials)", name, w.shape_name, trials)
    work_dir = os.path.join(work_root, name)
    intrinsics = None
    if name.endswith("_sat"):
        from search.context import available_intrinsics

        intrinsics = available_intrinsics(tvm.target.Target(TARGET), include_saturating=True)
    db = search.tune_tir(func, TARGET, work_dir, max_trials_global=trials, num_trials_per_iter=16,
                         strategy_config=strategy_config, seed=seed, num_threads=num_threads, intrinsics=intrinsics)
    report = db.tuning_report
    sch = search.compile_tir(db, func, TARGET)
    if sch is None:
        return {"workload": name, "error": f"no valid program measured: {report.failed} {report.invalid_samples}"}
    inputs = w.random_inputs(np.random.default_rng(0))
    lib, args = build_prepacked(sch.mod, inputs)
    out = tvm.nd.array(np.zeros(w.output_shape(), w.output_dtype), tvm.cpu(0))
    lib(*args, out)
    expected = w.reference(*inputs)
    if not np.allclose(out.numpy(), expected, rtol=1e-3, atol=1e-3):
        return {"workload": name, "error": "the tuned program disagrees with numpy"}
    # Ours and PyTorch alternate over ROUNDS rounds (each a block_time): a drift of the machine's speed
    # during the run then moves both, not just whichever ran second.
    peers = [torch_call(base, inputs, w.params)] + ([onnxruntime_int8_call(inputs)] if base == "gemm_int8" else [])
    peers = [p for p in peers if p is not None]
    ours_rounds, peer_rounds = [], {label: [] for label, _ in peers}
    for _ in range(ROUNDS):
        ours_rounds.append(block_time(lambda: lib(*args, out), repeat))
        for label, call in peers:
            peer_rounds[label].append(block_time(call, repeat))
    ours = float(np.median(ours_rounds))
    row = {"workload": name, "shape": w.shape_name, "flops": w.flops, "ours_s": ours, "trials": report.trials,
           "valid": report.valid, "tuning_s": report.seconds["total"], "split": dict(report.seconds),
           "trial_90": report.trial_reaching(0.9), "baselines": {}, "ours_rounds_s": ours_rounds}
    for label, rounds in peer_rounds.items():
        row["baselines"][label] = float(np.median(rounds))
        row.setdefault("peer_rounds_s", {})[label] = rounds
    if base != "gemm_int8":  # OpenBLAS has no int8 GEMM; numpy's int32 matmul is not a fair peer
        row["baselines"]["numpy"] = numpy_time(lambda: w.reference(*inputs), repeat, num_threads)
    if with_tvm:
        got = tvm_metaschedule(func, trials, os.path.join(work_dir, "tvm"), inputs, w.output_shape(), w.output_dtype,
                               repeat)
        if isinstance(got, tuple):
            row["baselines"][f"TVM MetaSchedule {trials} trials"] = got[0]
            row["tvm_tuning_s"] = got[1]
        else:
            row["tvm_note"] = got
    row["ours_again_s"] = block_time(lambda: lib(*args, out), repeat)  # our kernel timed after the baselines too
    return row


def render(rows: list[dict], trials: int) -> str:
    lines = [f"# Auto-scheduler vs libraries ({_dt.date.today()}, {trials} trials, target `{TARGET}`)", "",
             f"Host CPU: {tvm.target.Target(TARGET).mcpu}; features avx512f={tvm.target.Target(TARGET).has_feature('avx512f')}, "
             f"avx512vnni={tvm.target.Target(TARGET).has_feature('avx512vnni')}, avx2={tvm.target.Target(TARGET).has_feature('avx2')}.",
             "", "| workload | ours GFLOPS | baseline | baseline GFLOPS | ours / baseline | tuning s (search/build/run) "
             "| 90% at trial |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['workload']} | error: {r['error']} | | | | | |")
            continue
        ours = min(r["ours_s"], r["ours_again_s"])
        gf = r["flops"] / ours / 1e9
        split = r["split"]
        tuning = f"{r['tuning_s']:.0f} ({split['search']:.0f}/{split['build']:.0f}/{split['run']:.0f})"
        first = True
        for label, secs in r["baselines"].items():
            lines.append(f"| {r['workload']} {r['shape'] if first else ''} | {gf:.1f} | {label} | "
                         f"{r['flops'] / secs / 1e9:.1f} | {secs / ours:.2f}x | {tuning if first else ''} | "
                         f"{r['trial_90'] if first else ''} |")
            first = False
        if first:
            lines.append(f"| {r['workload']} {r['shape']} | {gf:.1f} | - | - | - | {tuning} | {r['trial_90']} |")
        if r.get("tvm_note"):
            lines.append(f"|  | | TVM MetaSchedule: {r['tvm_note']} | | | | |")
    return "\n".join(lines) + "\n"


def _run_in_own_process(name: str, opts, work_root: str) -> dict:
    """``run_workload`` for ``name`` in a fresh Python process (this script with ``--row-out``)."""
    row_path = os.path.join(work_root, f"{name}.row.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--workloads", name, "--trials", str(opts.trials),
           "--repeat", str(opts.repeat), "--work-dir", work_root, "--seed", str(opts.seed),
           "--threads", str(opts.threads), "--clock", opts.clock, "--row-out", row_path]
    if opts.no_tvm or (opts.tvm_workloads and name not in opts.tvm_workloads.split(",")):
        cmd.append("--no-tvm")
    done = subprocess.run(cmd, check=False)
    if done.returncode != 0 or not os.path.exists(row_path):
        return {"workload": name, "error": f"its process exited with code {done.returncode}"}
    with open(row_path) as f:
        return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--workloads", default="gemm,gemm_int8,conv2d,dep_conv")
    parser.add_argument("--work-dir", default=None, help="tuning folder (default: a fresh temporary one)")
    parser.add_argument("--seed", type=int, default=0, help="the search's seed")
    parser.add_argument("--no-tvm", action="store_true", help="skip TVM MetaSchedule even when installed")
    parser.add_argument("--tvm-workloads", default=None,
                        help="tune TVM MetaSchedule only for these workloads (comma-separated; default: all)")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "tune_cpu.md"))
    parser.add_argument("--threads", type=int, default=0,
                        help="threads for every library and the search (default: all cores)")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall",
                        help="'thread': time the kernels by this thread's CPU time (needs --threads 1)")
    parser.add_argument("--row-out", default=None, help=argparse.SUPPRESS)  # one workload, its row as JSON
    opts = parser.parse_args()
    if opts.clock == "thread":
        if opts.threads != 1:
            parser.error("--clock thread measures one thread's CPU time: pass --threads 1 as well")
        CLOCK["fn"] = time.thread_time
    if opts.threads:
        os.environ["TVM_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(opts.threads)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    strategy_config = search_group_file()
    work_root = opts.work_dir or tempfile.mkdtemp(prefix="tune_cpu_")
    if opts.row_out:
        row = run_workload(opts.workloads, opts.trials, opts.repeat, work_root, strategy_config, not opts.no_tvm,
                           opts.threads or None, opts.seed)
        with open(opts.row_out, "w") as f:
            json.dump(row, f, default=str)
        return
    rows = [_run_in_own_process(name, opts, work_root) for name in opts.workloads.split(",")]
    text = render(rows, opts.trials)
    print(text)  # noqa: T201 - a benchmark's report
    with open(opts.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(opts.out)[0] + ".json", "w") as f:
        json.dump(rows, f, indent=1, default=str)


if __name__ == "__main__":
    main()
