"""Per-candidate overhead of the local builder and runner on a 256^3 fp32 GEMM.

Run: ``python benchmarks/measure_overhead.py [--size 256] [--candidates 8] [--workers 2]``

Build: wall time of one ``LocalBuilder.build`` batch of differently tiled schedules, per candidate,
next to the compile time spent inside the workers (``build_secs``: lowering, LLVM, linking).
Run: wall time of ``LocalRunner.run`` per candidate with the smallest timing (``number=1, repeat=1,
min_repeat_ms=0``: load, one checked run, a warm-up and one timed run), minus three kernel runs, which
is the fixed cost of measuring a candidate (IPC, dlopen, fresh inputs, the output comparison). The
first batch also draws the inputs and computes the reference; it is reported separately.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from search.context import TuneContext  # noqa: E402
from search.measure import LocalBuilder, LocalRunner, MeasureCandidate  # noqa: E402
from tensorize.schedule import Schedule  # noqa: E402
from tensorize.script import tir as T  # noqa: E402


def gemm(n: int):
    @T.prim_func
    def func(A: T.Buffer((n, n), "float32"), B: T.Buffer((n, n), "float32"), C: T.Buffer((n, n), "float32")):
        T.func_attr({"tir.noalias": True})
        for i, j, k in T.grid(n, n, n):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return func


def schedules(func, count: int):
    tiles = [(ti, tj) for ti in (2, 4, 8, 16) for tj in (8, 16, 32, 64)]
    for ti, tj in tiles[:count]:
        sch = Schedule(func)
        i, j, k = sch.get_loops(sch.get_block("C"))
        i0, i1 = sch.split(i, [None, ti])
        j0, j1 = sch.split(j, [None, tj])
        sch.reorder(i0, j0, k, i1, j1)
        sch.parallel(i0)
        sch.vectorize(j1)
        yield sch.mod


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    func = gemm(args.size)
    ctx = TuneContext.create(func, "llvm -mcpu=native")
    candidates = [MeasureCandidate(m) for m in schedules(func, args.candidates)]
    n = len(candidates)
    with tempfile.TemporaryDirectory() as work, LocalBuilder(work, max_workers=args.workers) as builder, \
            LocalRunner(work, number=1, repeat=1, min_repeat_ms=0) as runner:
        builder.build(candidates[:1], ctx.target)  # start the workers and warm their imports
        start = time.perf_counter()
        builds = builder.build(candidates, ctx.target)
        build_wall = time.perf_counter() - start
        assert all(b.ok for b in builds), [b.error for b in builds if not b.ok]
        start = time.perf_counter()
        runner.run(ctx, builds[:1])
        first = time.perf_counter() - start
        walls, kernels = [], []
        for build in builds:
            start = time.perf_counter()
            (result,) = runner.run(ctx, [build])
            walls.append(time.perf_counter() - start)
            assert result.ok, result.error
            kernels.append(result.run_secs[0])
    compile_ms = statistics.mean(b.build_secs for b in builds) * 1e3
    print(f"{args.size}^3 fp32 GEMM, {n} candidates, {args.workers} build workers, {os.cpu_count()} cores")
    print(f"build: {build_wall / n * 1e3:.0f} ms wall per candidate; {compile_ms:.0f} ms compile in a worker")
    overhead = [w - 3 * k for w, k in zip(walls, kernels)]
    print(f"run:   {statistics.median(walls) * 1e3:.1f} ms wall per candidate (median), kernel "
          f"{statistics.median(kernels) * 1e3:.2f} ms; fixed overhead {statistics.median(overhead) * 1e3:.1f} ms")
    print(f"first run of the workload (inputs + reference + child start): {first * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
