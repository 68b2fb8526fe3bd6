"""End-to-end tuning: tune_tir / compile_tir on small workloads with real builds and measurements.

Budgets are tiny (a few trials of a 64^3 or 128^3 GEMM) so the file runs in well under a minute.
"""
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import search
import tensorize as tvm
from experiments.workloads.gemm import gemm
from search.database import Database, target_key
from tensorize import te

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST = "llvm -mcpu=native"
SMALL = {"population_size": 24, "init_min_unmeasured": 8, "genetic_num_iters": 2}


def gemm_func(n=64, m=None, k=None):
    return te.create_prim_func(list(gemm(n, m or n, k or n)))


def _keys(db):
    return [json.dumps(r.trace_json, sort_keys=True) for r in db.get_all_tuning_records()]


def test_tune_and_compile_gemm_is_correct_and_fast(tmp_path):
    func = gemm_func(128)
    db = search.tune_tir(func, HOST, str(tmp_path), max_trials_global=8, num_trials_per_iter=4,
                         strategy_config=SMALL, seed=0, progress=False)
    report = db.tuning_report
    assert report.trials == 8 and report.valid >= 4
    assert math.isfinite(report.best_secs) and len(report.curve) == 8
    assert set(report.seconds) >= {"search", "build", "run", "total"}
    sch = search.compile_tir(db, func, HOST)
    assert sch is not None
    lib = tvm.build(sch.mod, target=HOST)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((128, 128), dtype=np.float32), rng.standard_normal((128, 128), dtype=np.float32)
    c = tvm.nd.array(np.zeros((128, 128), np.float32))
    lib(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    assert os.path.exists(tmp_path / "tuning_report.json")


def test_no_program_measured_twice_and_random_strategy(tmp_path):
    func = gemm_func(64)
    db = search.tune_tir(func, HOST, str(tmp_path), max_trials_global=10, num_trials_per_iter=5, strategy="random",
                         cost_model="random", seed=3, progress=False, remeasure_top_k=0)
    keys = _keys(db)
    assert len(keys) == 10 and len(set(keys)) == 10


def test_same_seed_same_measurements_same_traces(tmp_path):
    """Replaying the first run's measured times (the "replay" runner reads them from its database), a second
    run with the same seed proposes exactly the same programs in the same order."""
    func = gemm_func(64)
    first = search.tune_tir(func, HOST, str(tmp_path / "a"), max_trials_global=8, num_trials_per_iter=4,
                            strategy_config={**SMALL, "num_workers": 2}, seed=7, progress=False, remeasure_top_k=0)
    # the second run replays in one process, the first in one worker per core: the same proposals
    second = search.tune_tir(func, HOST, str(tmp_path / "b"), max_trials_global=8, num_trials_per_iter=4,
                             strategy_config={**SMALL, "num_workers": 1}, seed=7, progress=False, remeasure_top_k=0,
                             builder="replay",
                             runner="replay", runner_config={"database": first.path},
                             builder_config={"database": first.path})
    assert _keys(first) == _keys(second)
    assert [r.run_secs for r in first.get_all_tuning_records()] == [r.run_secs for r in second.get_all_tuning_records()]


def test_killed_run_resumes_without_remeasuring(tmp_path):
    work = tmp_path / "work"
    script = f"""
import sys; sys.path.insert(0, {ROOT!r})
import search
from tests.search.test_tune import gemm_func, SMALL
search.tune_tir(gemm_func(64), {HOST!r}, {str(work)!r}, max_trials_global=40, num_trials_per_iter=2,
                strategy_config=SMALL, seed=1, progress=False, remeasure_top_k=0)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    db_path = work / "database.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        if db_path.exists() and sum(1 for line in open(db_path) if '"record"' in line) >= 4:
            break
        if proc.poll() is not None:
            pytest.fail(f"the tuning process ended early: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _keys(Database(str(db_path)))
    assert 4 <= len(before) < 40
    db = search.tune_tir(gemm_func(64), HOST, str(work), max_trials_global=len(before) + 4, num_trials_per_iter=2,
                         strategy_config=SMALL, seed=1, progress=False, remeasure_top_k=0)
    after = _keys(db)
    assert after[:len(before)] == before
    assert len(after) == len(before) + 4 and len(set(after)) == len(after)
    assert db.tuning_report.resumed_trials == len(before)


def test_records_of_another_target_are_not_used(tmp_path):
    func = gemm_func(64)
    db = search.tune_tir(func, "llvm -mcpu=haswell", str(tmp_path), max_trials_global=4, num_trials_per_iter=4,
                         strategy_config=SMALL, seed=0, progress=False, remeasure_top_k=0)
    assert search.compile_tir(db, func, "llvm -mcpu=haswell") is not None
    assert target_key("llvm -mcpu=haswell") != target_key("llvm -mcpu=skylake-avx512")
    assert search.compile_tir(db, func, "llvm -mcpu=skylake-avx512") is None
    assert search.compile_tir(db, gemm_func(32), "llvm -mcpu=haswell") is None


def test_baseline_schedules_are_trials_and_take_part_in_the_re_measurement(tmp_path):
    """A baseline (the graph's default schedule) is measured first, as a trial, and ranked with the search's
    programs when the best few are measured again, so the report's best covers it."""
    from tensorize.graph.build import default_schedule_variants

    func = gemm_func(64)
    seeds = default_schedule_variants(func, HOST)
    assert seeds
    db = search.tune_tir(func, HOST, str(tmp_path), max_trials_global=len(seeds) + 1, num_trials_per_iter=1,
                         strategy="random", cost_model="random", seed=0, progress=False, remeasure_top_k=3,
                         baselines=seeds)
    report = db.tuning_report
    assert report.trials == len(seeds) + 1
    assert json.dumps(seeds[0].trace.as_json(), sort_keys=True) in _keys(db)
    assert len(report.remeasured) == report.valid  # the seeds and the search's program, each measured twice
    assert report.best_secs <= max(max(pair) for pair in report.remeasured)


def test_top_k_gives_distinct_programs_fastest_first(tmp_path):
    func = gemm_func(64)
    db = search.tune_tir(func, HOST, str(tmp_path), max_trials_global=6, num_trials_per_iter=3, strategy="random",
                         cost_model="random", seed=1, progress=False, remeasure_top_k=3)
    top = search.compile_tir_top_k(db, func, HOST, 4)
    texts = [json.dumps(s.trace.as_json(), sort_keys=True) for s in top]
    assert len(top) == 4 and len(set(texts)) == 4  # re-measured programs count once
    assert texts[0] == json.dumps(search.compile_tir(db, func, HOST).trace.as_json(), sort_keys=True)
    assert search.compile_tir_top_k(db, func, HOST, 0) == []


def test_intrinsics_option_restricts_the_space_and_names_bad_entries(tmp_path):
    """``intrinsics=[]`` leaves only plain vector code in the space; an unknown or unsupported name is an error."""
    func = gemm_func(64)
    db = search.tune_tir(func, HOST, str(tmp_path), max_trials_global=4, num_trials_per_iter=4, strategy="random",
                         cost_model="random", seed=0, progress=False, remeasure_top_k=0, intrinsics=[])
    traces = [json.dumps(r.trace_json) for r in db.get_all_tuning_records()]
    assert traces and not any("meta_schedule.auto_tensorize" in t for t in traces)
    with pytest.raises(ValueError, match="no tensor intrinsic is named 'no_such_dot'"):
        search.tune_tir(func, HOST, str(tmp_path / "bad"), max_trials_global=1, intrinsics=["no_such_dot"])
    with pytest.raises(ValueError, match="tensor intrinsic .dot_4x4_i8i8s32_sdot. needs"):
        search.tune_tir(func, HOST, str(tmp_path / "arm"), max_trials_global=1, intrinsics=["dot_4x4_i8i8s32_sdot"])
