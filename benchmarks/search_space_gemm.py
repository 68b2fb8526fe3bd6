"""Sample candidates of an fp32 GEMM from the search space, build and time them, next to numpy.

Run: ``python benchmarks/search_space_gemm.py [--size 512] [--samples 50] [--seed 0] [--unroll 0,16,64,512]``

Prints the design space (one line per sketch), the time to sample + postprocess one candidate,
then per candidate its GFLOPS (checked against numpy), and the best candidate's GFLOPS next to
numpy's (timed in alternating blocks, as ``benchmarks/matmul_cpu.py`` does) with its trace.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_var, None)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import tensorize as tvm  # noqa: E402
from benchmarks.matmul_cpu import matmul_module, measure_alternating  # noqa: E402
from search.context import TuneContext  # noqa: E402
from search.postproc import default_postprocs  # noqa: E402
from search.schedule_rule import ParallelVectorizeUnroll, default_rules  # noqa: E402
from search.space_generator import PostOrderApply, sample_candidate  # noqa: E402
from tensorize.schedule import ScheduleError  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", default="llvm -mcpu=native")
    parser.add_argument("--unroll", default="0,16,64,512",
                        help="unroll depths to sample (512 can make LLVM take minutes on scalar tiles)")
    opts = parser.parse_args()
    n = opts.size
    flops = 2.0 * n ** 3
    ctx = TuneContext.create(matmul_module(n, n, n), opts.target, seed=opts.seed)
    rules = [ParallelVectorizeUnroll(unroll_max_steps=[int(u) for u in opts.unroll.split(",")])
             if isinstance(r, ParallelVectorizeUnroll) else r for r in default_rules(ctx)]
    space = PostOrderApply(rules).generate_design_space(ctx)
    postprocs = default_postprocs(ctx)
    print(f"{len(space)} sketches")
    start = time.perf_counter()
    cands = []
    for i in range(opts.samples):
        try:
            cands.append(sample_candidate(ctx, space[i % len(space)], postprocs))
        except ScheduleError as err:
            print("invalid:", str(err).splitlines()[0])
    per = (time.perf_counter() - start) / opts.samples
    print(f"sample + postprocess: {per * 1e3:.2f} ms per candidate ({len(cands)} valid of {opts.samples})")

    rng = np.random.default_rng(0)
    a_np = rng.random((n, n), dtype=np.float32)
    b_np = rng.random((n, n), dtype=np.float32)
    expected = a_np @ b_np
    dev = tvm.cpu(0)
    a, b = tvm.nd.array(a_np, dev), tvm.nd.array(b_np, dev)
    results = []
    for i, sch in enumerate(cands):
        start = time.perf_counter()
        rt = tvm.build(sch.mod, target=opts.target)
        build_s = time.perf_counter() - start
        c = tvm.nd.array(np.zeros((n, n), dtype="float32"), dev)
        rt(a, b, c)
        np.testing.assert_allclose(c.numpy(), expected, rtol=1e-3)
        secs = float(rt.time_evaluator(rt.entry_name, dev, number=1, repeat=3, min_repeat_ms=50)(a, b, c).median)
        results.append((secs, i, rt, c))
        print(f"cand {i:3d}: {flops / secs / 1e9:7.1f} GFLOPS (build {build_s:.2f} s) "
              f"{[inst.decision for inst in sch.trace.insts if inst.decision is not None]}")
    results.sort(key=lambda r: r[0])
    secs, i, rt, c = results[0]
    ours, theirs = measure_alternating(rt, (a, b, c), lambda: np.matmul(a_np, b_np), repeat=9)
    print(f"best candidate {i}: {flops / ours / 1e9:.1f} GFLOPS; numpy beside it: {flops / theirs / 1e9:.1f} GFLOPS; "
          f"ratio {theirs / ours:.2f}")
    print(cands[i].mod.script())
    print("\n".join(cands[i].trace.as_python()))


if __name__ == "__main__":
    main()
