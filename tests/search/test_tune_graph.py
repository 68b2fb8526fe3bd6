"""tune_graph: one budget across the tasks of a small model; the tuned library matches onnxruntime."""
import json
import math

import numpy as np
import pytest

import search
from tensorize import graph
from tensorize.graph import Graph

HOST = "llvm -mcpu=native"
FAST = {"strategy": "random", "cost_model": "random", "seed": 0}


def _mlp():
    rng = np.random.default_rng(0)
    g = Graph()
    x = g.add_input("x", (16, 32))
    for _ in range(2):  # two identical layers: one task of weight 2
        w = g.add_constant("w", rng.standard_normal((32, 32)).astype("float32") / 6)
        b = g.add_constant("b", rng.standard_normal(32).astype("float32"))
        x = g.add_node("relu", [g.add_node("add", [g.add_node("dense", [x, w]), b])])
    g.outputs.append(g.add_node("softmax", [x], {"axis": -1}))
    return g


def _reference(g, a):
    consts = list(g.constants.values())
    for i in range(2):
        a = np.maximum(a @ consts[2 * i] + consts[2 * i + 1], 0)
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_budget_is_shared_and_the_run_resumes(tmp_path):
    g = _mlp()
    db = search.tune_graph(g, HOST, str(tmp_path), max_trials_global=6, num_trials_per_iter=3, **FAST)
    report = db.graph_report
    assert report["trials"] == 6
    weights = sorted((t["weight"], t["trials"]) for t in report["tasks"])
    assert weights == [(1, 3), (2, 3)]  # both tasks got their first round
    assert all(t["best_secs"] and math.isfinite(t["best_secs"]) for t in report["tasks"])
    assert json.load(open(tmp_path / "graph_tuning.json"))["trials"] == 6
    lib = graph.build(g, HOST, database=db)
    assert set(lib.how.values()) == {"tuned"}
    a = np.random.default_rng(1).standard_normal((16, 32)).astype("float32")
    np.testing.assert_allclose(lib.run(a)[0], _reference(g, a), rtol=1e-4, atol=1e-6)
    before = len(db)
    again = search.tune_graph(g, HOST, str(tmp_path), max_trials_global=6, num_trials_per_iter=3, **FAST)
    assert len(again) == before  # resumed: the budget is spent, nothing measured again


def test_tuned_reduced_model_matches_onnxruntime(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from experiments.models import MODELS, TEST_CONFIGS, random_inputs
    from tensorize.frontend import from_onnx

    model = MODELS["bert_base"](**{**TEST_CONFIGS["bert_base"], "layers": 1})
    g = from_onnx(model)
    db = search.tune_graph(g, HOST, str(tmp_path), max_trials_global=4, num_trials_per_iter=2, max_tasks=2, **FAST)
    lib = graph.build(g, HOST, database=db)
    assert list(lib.how.values()).count("tuned") == 2
    inputs = random_inputs(model)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    np.testing.assert_allclose(lib.run(**inputs)[0], ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))


def test_each_task_measures_the_default_schedule_first(tmp_path):
    """The graph's default schedule is a task's first trial, so the tuned library is never built from a
    program slower than the untuned one: with one trial per task, the database holds exactly those."""
    from tensorize.graph.build import default_schedule, default_schedule_variants
    from tensorize.graph.tasks import extract_tasks
    from tensorize.ir.structural import structural_equal

    g = _mlp()
    db = search.tune_graph(g, HOST, str(tmp_path), max_trials_global=2, num_trials_per_iter=1, **FAST)
    records = db.get_all_tuning_records()
    assert len(records) == 2 and all(r.is_valid for r in records)
    tasks = extract_tasks(g)
    seeds = [default_schedule_variants(t.mod, HOST)[0] for t in tasks]
    defaults = [json.dumps(s.trace.as_json(), sort_keys=True) for s in seeds]
    assert sorted(json.dumps(r.trace_json, sort_keys=True) for r in records) == sorted(defaults)
    # the seed is the untuned build's program, its register rows a decision the search may mutate
    assert all(structural_equal(s.mod, default_schedule(t.mod, HOST).mod) for s, t in zip(seeds, tasks))
    lib = graph.build(g, HOST, database=db)
    a = np.random.default_rng(1).standard_normal((16, 32)).astype("float32")
    np.testing.assert_allclose(lib.run(a)[0], _reference(g, a), rtol=1e-4, atol=1e-6)


def test_each_pick_is_timed_again_next_to_the_default_schedule(tmp_path):
    """After the rounds, a task's pick that is not a default schedule has been measured more than once, and so have
    the default schedules beside it; with confirm_rounds=0 nothing is measured again."""
    from tensorize.graph.build import default_schedule_variants, graph_tasks

    g = _mlp()
    plain = search.tune_graph(g, HOST, str(tmp_path / "plain"), max_trials_global=8, num_trials_per_iter=4,
                              confirm_rounds=0, **FAST)
    assert len(plain) == 8 and plain.graph_report["picks_changed_by_confirmation"] == 0
    db = search.tune_graph(g, HOST, str(tmp_path / "confirmed"), max_trials_global=8, num_trials_per_iter=4, **FAST)
    assert len(db) > 8
    for task in graph_tasks(g, HOST):
        records = [r for r in db.get_all_tuning_records() if r.workload.key == db.commit_workload(task.mod).key]
        pick = db.get_top_k(db.commit_workload(task.mod), 1, target=HOST)[0]
        defaults = {json.dumps(d.trace.as_json(), sort_keys=True) for d in default_schedule_variants(task.mod, HOST)}
        if pick.trace_key not in defaults:
            assert sum(r.trace_key == pick.trace_key for r in records) >= 3
            assert all(sum(r.trace_key == key for r in records) >= 3 for key in defaults)


def test_candidates_are_timed_cold_unless_the_model_fits_the_last_level_cache(monkeypatch):
    """A graph whose weights and largest values fit the host's last-level cache is tuned warm (its kernels
    find their weights in cache inside the model); a larger one, or an unknown cache, cold; an explicit
    choice, and a GPU target (never flushed), are kept."""
    import importlib

    from tensorize.target import Target

    tg = importlib.import_module("search.tune_graph")  # the module (``search.tune_graph`` is the function)

    g = Graph()
    x = g.add_input("x", (64, 256))
    w = g.add_constant("w", np.zeros((256, 256), "float32"))
    g.outputs.append(g.add_node("dense", [x, w]))
    assert tg.graph_working_set_bytes(g) == 256 * 256 * 4 + 64 * 256 * 4 + 2 * 64 * 256 * 4
    cpu = Target("llvm")
    for cache, flush in ((1 << 20, False), (1 << 17, True), (None, True)):
        monkeypatch.setattr(tg, "last_level_cache_bytes", lambda cache=cache: cache)
        assert tg._flush_caches(g, cpu, None) is flush
    assert tg._flush_caches(g, cpu, True) is True and tg._flush_caches(g, cpu, False) is False
    assert tg._flush_caches(g, Target("cuda -arch=sm_80"), None) is False
