"""Long fuzzing runs: ``python -m tests.fuzz.run_fuzz --minutes 10 --corpus tests/fuzz/corpus``.

Generates inputs of every kind in turn (mutated TVMScript texts from the test corpus through parse,
verify, schedule and build; random target strings; random primitive sequences on valid programs;
damaged and hostile database lines; damaged trace JSON), runs each in a forked worker process (an
abort, crash or hang ends the case, not the run) and writes every input that ends in anything but a
result or a documented ``TVMError`` to the corpus folder as JSON, where ``test_fuzz.py`` replays it.
Prints the number of inputs tried and findings per kind.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import logging
import os
import random
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.fuzz import mutate  # noqa: E402
from tests.fuzz.worker import Worker  # noqa: E402

KINDS = ("text", "target", "primitives", "db_lines", "trace")
log = logging.getLogger("fuzz")


class Generator:
    """Makes the inputs of each kind from one random seed."""

    def __init__(self, seed: int, folder: str):
        import tensorize as tvm
        from search.database import Database, TuningRecord
        from tests.fuzz.corpus_programs import corpus_functions

        self.rng = random.Random(seed)
        self.funcs = corpus_functions()
        self.names = sorted(self.funcs)
        self.texts = [self.funcs[name].script() for name in self.names]
        self.sentinel = os.path.join(folder, "sentinel-must-not-exist")
        sch = tvm.tir.Schedule(self.funcs["int8_gemm"])
        block = sch.get_block("C")
        loops = sch.get_loops(block)
        factors = sch.sample_perfect_tile(loops[0], n=2)
        sch.split(loops[0], factors)
        sch.reorder(*sch.get_loops(block)[::-1])
        sch.parallel(sch.get_loops(block)[1])
        sch.decompose_reduction(block, sch.get_loops(block)[0])
        self.trace = sch.trace.as_json()
        db = Database(os.path.join(folder, "good.jsonl"))
        workload = db.commit_workload(self.funcs["int8_gemm"])
        db.commit_tuning_record(TuningRecord(self.trace, workload, [1e-3], "llvm -mcpu=haswell"))
        with open(db.path) as f:
            self.good_lines = f.read().splitlines()

    def make(self, kind: str) -> tuple:
        rng = self.rng
        if kind == "text":
            return (mutate.mutate_text(rng.choice(self.texts), rng, self.sentinel),)
        if kind == "target":
            return (mutate.random_target(rng),)
        if kind == "primitives":
            return (rng.choice(self.names), rng.randrange(1 << 30), rng.randint(3, 12))
        if kind == "db_lines":
            lines = self.good_lines[:1] + mutate.damaged_lines(self.good_lines, rng, self.sentinel) + self.good_lines[1:]
            return (lines, self.sentinel)
        return ("int8_gemm", mutate.mutate_trace(self.trace, rng))


def save_finding(corpus: str, kind: str, args: tuple, outcome: dict) -> str:
    """Write a failing input to ``corpus`` (named by its content hash) and return the path."""
    os.makedirs(corpus, exist_ok=True)
    payload = json.dumps({"kind": kind, "args": list(args), "outcome": outcome}, indent=1, default=str)
    path = os.path.join(corpus, f"{kind}-{hashlib.sha256(payload.encode()).hexdigest()[:16]}.json")
    with open(path, "w") as f:
        f.write(payload)
    return path


def run(minutes: float, corpus: str, seed: int, timeout: float, kinds=KINDS) -> dict:
    """Fuzz for ``minutes``; returns ``{kind: Counter(status)}``."""
    stats = {kind: collections.Counter() for kind in kinds}
    deadline = time.time() + minutes * 60
    with tempfile.TemporaryDirectory() as folder, Worker(timeout=timeout) as worker:
        gen = Generator(seed, folder)
        i = 0
        while time.time() < deadline:
            kind = kinds[i % len(kinds)]
            i += 1
            args = gen.make(kind)
            outcome = worker.run(kind, *args)
            stats[kind][outcome["status"]] += 1
            if outcome["status"] == "finding":
                path = save_finding(corpus, kind, args, outcome)
                log.warning("finding (%s: %s) saved to %s", outcome["error"], outcome["message"][:200], path)
    return stats


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to run")
    parser.add_argument("--corpus", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus"),
                        help="folder for failing inputs (replayed by the tests)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as a hang")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated subset of {','.join(KINDS)}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    seed = args.seed if args.seed is not None else int(time.time())
    kinds = tuple(k for k in args.kinds.split(",") if k)
    stats = run(args.minutes, args.corpus, seed, args.timeout, kinds)
    total = sum(sum(c.values()) for c in stats.values())
    findings = sum(c["finding"] for c in stats.values())
    for kind, counts in stats.items():
        print(f"{kind:>10}: {sum(counts.values()):6d} inputs  " + "  ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    print(f"seed {seed}: {total} inputs, {findings} findings (saved to {args.corpus})")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
