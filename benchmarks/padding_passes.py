"""The lowering's padding passes (``SkipPaddedTaps``, ``PartitionPaddedLoops``) on and off, side by side in
one process, on the operator suite's padded convolutions, next to PyTorch channels-last.

Run: ``python benchmarks/padding_passes.py [--workloads C1D,C2D,C3D,DEP,DIL,CBR] [--rounds 5]``

Each workload's program is the graph layer's streaming default schedule (the padding read inline, rows
outermost: ``tensorize.graph.build.default_schedule_variants``, its last variant), built three times:
with both passes, without ``PartitionPaddedLoops``, and without either. The three kernels and PyTorch
(oneDNN) are timed in turns over ``--rounds`` rounds, each of our blocks on freshly allocated arrays,
one thread for everything; each reports its median round. Writes ``results/padding_passes.md``.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
for _name in ("OMP_NUM_THREADS", "TVM_NUM_THREADS", "TENSORIZE_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import tensorize as tvm  # noqa: E402
from experiments.baseline_set import baseline_timers, time_side_by_side  # noqa: E402
from experiments.final_pick import kernel_timer  # noqa: E402
from experiments.workloads import get_workload  # noqa: E402
from search import split_layout_rewrite  # noqa: E402
from search.measure.tasks import pack_weights  # noqa: E402
from tensorize import te  # noqa: E402
from tensorize.graph.build import default_schedule_variants  # noqa: E402

VARIANTS = {
    "both passes": [],
    "skip only": ["tir.PartitionPaddedLoops"],
    "neither": ["tir.SkipPaddedTaps", "tir.PartitionPaddedLoops"],
}


def _kernels(name: str, target: str, number: int, repeat: int):
    workload = get_workload(name, "0")
    func = te.create_prim_func(workload.args).with_attr("layout_free_buffers", workload.weight_indices())
    sch = default_schedule_variants(tvm.IRModule({"main": func}), target)[-1]
    kernel_mod, _ = split_layout_rewrite(sch.mod)
    inputs = workload.random_inputs(np.random.default_rng(0))
    expected = workload.reference(*inputs)
    timers = {}
    for label, disabled in VARIANTS.items():
        with tvm.transform.PassContext(disabled_pass=disabled):
            rt_mod = tvm.build(kernel_mod, target=target)
        out = tvm.nd.array(np.zeros(expected.shape, expected.dtype))
        rt_mod(*pack_weights(rt_mod, [tvm.nd.array(x) for x in inputs]), out)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-4)
        timer = kernel_timer(rt_mod, inputs, expected, number, repeat, min_repeat_ms=50)
        timers[label] = lambda timer=timer: 1e3 * timer()
    for label, timer in baseline_timers(workload, inputs, expected, ["torch"], number, repeat, threads=1,
                                        min_repeat_ms=50).items():
        timers[f"PyTorch ({label})"] = timer
    return workload, timers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="C1D,C2D,C3D,DEP,DIL,CBR")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", default="llvm -mcpu=native")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "padding_passes.md"))
    args = parser.parse_args(argv)

    lines = [f"# The padding passes on and off ({_dt.date.today().isoformat()})", "",
             "    python benchmarks/padding_passes.py " + " ".join(argv if argv is not None else sys.argv[1:]), "",
             "One thread; ms, median of the rounds; the ratio is PyTorch's time over ours (>1: we are faster).", "",
             "| workload | both passes ms | skip only ms | neither ms | PyTorch channels-last ms | "
             "gain of the passes | × vs PyTorch |", "|---|---|---|---|---|---|---|"]
    for name in args.workloads.split(","):
        workload, timers = _kernels(name, args.target, number=3, repeat=3)
        ms = time_side_by_side(timers, rounds=args.rounds)
        torch_ms = ms.get("PyTorch (torch)", float("nan"))
        row = (f"| {name} | {ms['both passes']:.4g} | {ms['skip only']:.4g} | {ms['neither']:.4g} | {torch_ms:.4g} | "
               f"{ms['neither'] / ms['both passes']:.2f}x | {torch_ms / ms['both passes']:.2f}x |")
        print(row, flush=True)
        lines.append(row)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
