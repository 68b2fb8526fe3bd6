"""The fuzzing suite, CI budget: every generated input ends in a result or a documented ``TVMError``,
in a worker process that an abort or a hang cannot take down with the test run. Inputs saved by
``run_fuzz.py`` under ``corpus/`` are replayed as regression tests.

Longer runs: ``python -m tests.fuzz.run_fuzz --minutes 10``.
"""
from __future__ import annotations

import glob
import json
import os
import random
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_setup import examples
from tests.fuzz.run_fuzz import Generator
from tests.fuzz.worker import Worker

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


@pytest.fixture(scope="module")
def worker():
    with Worker(timeout=120) as w:
        yield w


@pytest.fixture(scope="module")
def generator():
    with tempfile.TemporaryDirectory() as path:
        yield Generator(0, path)


def _check(outcome: dict, args) -> None:
    assert outcome["status"] in ("ok", "error"), (
        f"input {str(args)[:1500]!r} ended in {outcome['error']}: {outcome['message']}\n{outcome.get('traceback', '')}")


def _fuzz(kind: str, n: int):
    @settings(max_examples=examples(n), deadline=None)
    @given(seed=st.integers(0, 2 ** 32 - 1))
    def test(worker, generator, seed):
        generator.rng = random.Random(seed)
        args = generator.make(kind)
        _check(worker.run(kind, *args), args)

    test.__name__ = f"test_fuzz_{kind}"
    return test


test_fuzz_text = _fuzz("text", 40)
test_fuzz_target = _fuzz("target", 40)
test_fuzz_primitives = _fuzz("primitives", 30)
test_fuzz_db_lines = _fuzz("db_lines", 15)
test_fuzz_trace = _fuzz("trace", 40)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(CORPUS, "*.json"))), ids=os.path.basename)
def test_saved_finding_now_holds(worker, path):
    with open(path) as f:
        case = json.load(f)
    _check(worker.run(case["kind"], *case["args"]), case["args"])


def test_worker_survives_an_abort_and_a_hang():
    from tests.fuzz import cases

    def abort():
        os.abort()

    def hang():
        import time

        time.sleep(60)

    cases.CASES["abort"], cases.CASES["hang"] = abort, hang
    try:
        with Worker(timeout=2) as w:
            assert w.run("abort")["error"] == "Crash"
            assert w.run("hang")["error"] == "Hang"
            assert w.run("target", "llvm")["status"] == "ok"
    finally:
        del cases.CASES["abort"], cases.CASES["hang"]
