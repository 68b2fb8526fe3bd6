"""Whole models on this CPU: tensorize (untuned, and tuned with ``search.tune_graph``) next to
onnxruntime and PyTorch (the same ONNX graph run op by op with torch, experiments/torch_onnx.py), in one process.

Run: ``python benchmarks/e2e_cpu.py [--models resnet50,mobilenet_v2,bert_base,vit_b16] [--trials 0]
[--reduced]``. Each row: latency in ms (median of blocks), the tuning wall time, the error against
onnxruntime; a second table has the fastest block of each program. Writes ``results/e2e.md`` (``--out``).
On a shared machine whose speed changes within seconds, the fastest of many short blocks (the defaults,
``--repeat 15 --block-secs 0.2``; more rounds where it is noisier) compares programs more steadily than the
medians of a few long ones.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import os
import sys
import tempfile

# Idle OpenMP threads sleep instead of spinning: on a machine shared with other jobs a spinning
# team member that lost its core stalls every parallel region (set before libgomp loads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from experiments.e2e import measure_model  # noqa: E402
from experiments.models import TEST_CONFIGS  # noqa: E402
from experiments.tuning import search_group_file  # noqa: E402

COLUMNS = ["model", "threads", "tasks", "kernels", "build_s", "untuned_ms", "trials", "tune_s", "tuned_ms",
           "onnxruntime_ms", "torch_ms", "speedup_vs_onnxruntime", "err_untuned", "err_tuned"]
FASTEST = ["model", "untuned_fastest_ms", "tuned_fastest_ms", "onnxruntime_fastest_ms", "torch_fastest_ms",
           "speedup_vs_onnxruntime_fastest"]


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e-2 else f"{v:.2f}"
    return str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenet_v2,bert_base,vit_b16")
    ap.add_argument("--trials", type=int, default=0, help="tune_graph budget per model (0: untuned only)")
    ap.add_argument("--target", default="llvm -mcpu=native")
    ap.add_argument("--reduced", action="store_true", help="the reduced test configurations")
    ap.add_argument("--repeat", type=int, default=15, help="alternating timing rounds")
    ap.add_argument("--block-secs", type=float, default=0.2, help="seconds of each program's block in a round")
    ap.add_argument("--max-tasks", type=int, default=None, help="tune only the tasks with the most work")
    ap.add_argument("--work-dir", default=None, help="keep the tuning databases here (<dir>/<model>); a run "
                    "killed midway resumes from them")
    ap.add_argument("--append", action="store_true", help="add the table to --out instead of replacing it")
    ap.add_argument("--per-task-cost-model", action="store_true",
                    help="a fresh cost model per task round (tune_graph(share_cost_model=False)) instead of one shared")
    ap.add_argument("--threads", type=int, default=None, help="threads of all three (default: all cores)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                  "results", "e2e.md"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    rows = []
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            work = os.path.join(args.work_dir, name) if args.work_dir else tmp
            row = measure_model(name, TEST_CONFIGS[name] if args.reduced else None, args.target, args.trials, work,
                                repeat=args.repeat, tune_kwargs={"seed": 0, "max_tasks": args.max_tasks,
                                                                "strategy_config": search_group_file(),
                                                                "share_cost_model": not args.per_task_cost_model},
                                threads=args.threads, block_secs=args.block_secs)
        row.pop("task_report", None)
        rows.append(row)
        print(json.dumps(row), flush=True)
    lines = [f"# End-to-end models on this CPU ({_dt.date.today()}, target `{args.target}`, "
             f"{'reduced' if args.reduced else 'full-size'} models, budget {args.trials} trials"
             + (f" over the {args.max_tasks} largest tasks" if args.max_tasks else "") + ")", "",
             "Command: `python benchmarks/e2e_cpu.py " + " ".join(sys.argv[1:]) + "`. Latencies in ms (median of "
             f"{args.repeat} alternating blocks of {args.block_secs} s); build_s = import + untuned build; "
             "tune_s = tune_graph wall time. The machine is shared with other jobs: figures are noisy.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in COLUMNS) + " |" for r in rows]
    lines += ["", "The fastest block of each program (ms):", "", "| " + " | ".join(FASTEST) + " |",
              "|" + "---|" * len(FASTEST)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in FASTEST) + " |" for r in rows]
    with open(args.out, "a" if args.append else "w") as f:
        f.write(("\n" if args.append else "") + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
