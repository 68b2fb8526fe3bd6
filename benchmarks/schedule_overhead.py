"""How long a typical ~20-primitive tiling schedule takes to apply to a conv2d, and to replay from
its trace with new sampling decisions (what the search does thousands of times).

    python benchmarks/schedule_overhead.py [--repeat 50] [--profile]

Prints milliseconds per application / replay (median and minimum: on a shared machine the
minimum is the steadier figure) and, with --profile, a cProfile summary. Measures the checkout the
script lives in, whatever ``tensorize`` is installed.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tensorize as tvm  # noqa: E402 - after the path set-up above
from tensorize import te  # noqa: E402
from tensorize.ir import IRModule  # noqa: E402
from tensorize.schedule import Trace  # noqa: E402


def conv2d_nhwc(n=1, h=56, w=56, ci=64, co=64, kh=3, kw=3) -> IRModule:
    X = te.placeholder((n, h + kh - 1, w + kw - 1, ci), name="X")
    W = te.placeholder((kh, kw, ci, co), name="W")
    rh, rw, rc = te.reduce_axis((0, kh), "rh"), te.reduce_axis((0, kw), "rw"), te.reduce_axis((0, ci), "rc")
    Y = te.compute((n, h, w, co), lambda b, y, x, o: te.sum(X[b, y + rh, x + rw, rc] * W[rh, rw, rc, o],
                                                            axis=[rh, rw, rc]), name="Y")
    return IRModule({"main": te.create_prim_func([X, W, Y])})


def tile(sch) -> None:
    """Multi-level tiling in the style of MetaSchedule's CPU rule."""
    block = sch.get_block("Y")
    b, y, x, o, rh, rw, rc = sch.get_loops(block)
    has_cache_write = hasattr(sch, "cache_write")
    ys = sch.split(y, sch.sample_perfect_tile(y, n=3, max_innermost_factor=8))
    xs = sch.split(x, sch.sample_perfect_tile(x, n=3, max_innermost_factor=8))
    os_ = sch.split(o, sch.sample_perfect_tile(o, n=3, max_innermost_factor=16))
    rcs = sch.split(rc, sch.sample_perfect_tile(rc, n=2, max_innermost_factor=16))
    sch.reorder(b, ys[0], xs[0], os_[0], ys[1], xs[1], os_[1], rh, rw, rcs[0], rcs[1], ys[2], xs[2], os_[2])
    outer = sch.fuse(b, ys[0], xs[0], os_[0])
    sch.parallel(outer)
    sch.vectorize(os_[2])
    sch.unroll(rcs[1])
    if has_cache_write:
        wb = sch.cache_write(block, 0, "global")
        sch.reverse_compute_at(wb, outer)
    sch.decompose_reduction(block, rh)


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    mod = conv2d_nhwc()
    sch = tvm.tir.Schedule(mod, seed=0)
    tile(sch)
    trace = Trace.from_json(sch.trace.as_json())
    print(f"trace: {len(sch.trace)} instructions")

    def apply():
        tile(tvm.tir.Schedule(mod, seed=random.randrange(1 << 30)))

    def replay():
        fresh = tvm.tir.Schedule(mod)
        trace.apply_to_schedule(fresh, decision_provider=lambda inst, old: None)

    for name, fn in (("apply (fresh sampling)", apply), ("replay from trace", replay)):
        fn()  # warm caches
        times = timed(fn, args.repeat)
        print(f"{name:24s} median {statistics.median(times):7.2f} ms   min {min(times):7.2f} ms")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.repeat):
            replay()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
