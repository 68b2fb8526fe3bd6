"""The JSON-lines tuning database: round trip, top-k, reload, concurrent writers, replay of traces."""
import json
import math
import multiprocessing
import os

import pytest

import tensorize as tvm
from search import Database, TuningRecord
from tensorize.script import tir as T


def matmul(n):
    @T.prim_func
    def func(A: T.Buffer((n, n), "float32"), B: T.Buffer((n, n), "float32"), C: T.Buffer((n, n), "float32")):
        for i, j, k in T.grid(n, n, n):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return func


def tiled_trace(n, factor):
    sch = tvm.tir.Schedule(matmul(n))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i_o, i_i = sch.split(i, [None, factor])
    sch.reorder(i_o, j, i_i, k)
    sch.parallel(i_o)
    return sch


def test_workloads_are_keyed_by_structure(tmp_path):
    db = Database(tmp_path / "db.jsonl")
    a = db.commit_workload(matmul(16))
    assert db.commit_workload(matmul(16)) is a, "a structurally equal program is the same workload"
    assert db.commit_workload(tvm.IRModule({"main": matmul(16)})) is a
    b = db.commit_workload(matmul(32))
    assert b.key != a.key and len(db.workloads) == 2
    lines = (tmp_path / "db.jsonl").read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["workload", "workload"]


def test_round_trip_top_k_and_reload(tmp_path):
    path = tmp_path / "db.jsonl"
    db = Database(path)
    wl = db.commit_workload(matmul(16))
    other = db.commit_workload(matmul(32))
    times = {2: [3e-3, 3.2e-3], 4: [1e-3], 8: [2e-3, 2e-3]}
    for factor, secs in times.items():
        db.commit_tuning_record(TuningRecord(tiled_trace(16, factor).trace.as_json(), wl, secs, "llvm", [["f32", 16]]))
    db.commit_tuning_record(TuningRecord(tiled_trace(16, 16).trace.as_json(), wl, None, "llvm"))  # build failed
    db.commit_tuning_record(TuningRecord(tiled_trace(32, 4).trace.as_json(), other, [1e-6], "llvm"))
    assert len(db) == 5
    top = db.get_top_k(wl, 10)
    assert [r.mean_run_secs for r in top] == [1e-3, 2e-3, pytest.approx(3.1e-3)], "failed runs are left out"
    assert db.get_top_k(wl, 1)[0].run_secs == [1e-3] and db.get_top_k(wl, 0) == []

    again = Database(path)  # a new process reading the same file
    assert len(again) == 5 and len(again.workloads) == 2
    wl2 = again.commit_workload(matmul(16))
    assert wl2.key == wl.key and len(again.workloads) == 2
    best = again.get_top_k(wl2, 3)
    assert [r.mean_run_secs for r in best] == [r.mean_run_secs for r in top]
    assert best[0].target == "llvm" and best[0].args_info == [["f32", 16]]
    assert not math.isfinite(next(r for r in again.get_all_tuning_records() if r.run_secs is None).mean_run_secs)


def test_trace_replays_on_a_fresh_schedule_to_the_same_module(tmp_path):
    path = tmp_path / "db.jsonl"
    db = Database(path)
    sch = tiled_trace(16, 4)
    db.commit_tuning_record(TuningRecord(sch.trace.as_json(), db.commit_workload(matmul(16)), [1e-3], "llvm"))
    record = Database(path).get_all_tuning_records()[0]  # its workload is parsed back from the text
    tvm.ir.assert_structural_equal(record.workload.mod, tvm.IRModule({"main": matmul(16)}))
    tvm.ir.assert_structural_equal(record.replay().mod, sch.mod)


def test_record_of_unknown_workload_is_refused(tmp_path):
    db = Database(tmp_path / "a.jsonl")
    wl = Database(tmp_path / "b.jsonl").commit_workload(matmul(8))
    with pytest.raises(ValueError, match="commit it first"):
        db.commit_tuning_record(TuningRecord([[], []], wl, [1.0]))


def test_torn_last_line_is_skipped_and_the_file_stays_usable(tmp_path, caplog):
    path = tmp_path / "db.jsonl"
    db = Database(path)
    wl = db.commit_workload(matmul(8))
    db.commit_tuning_record(TuningRecord([[], []], wl, [1.0]))
    with open(path, "a") as f:
        f.write('{"type": "record", "workl')  # a writer killed mid-line
    again = Database(path)
    assert len(again) == 1
    with open(path, "a") as f:
        f.write("\n")  # the torn line is now complete but unreadable
    again.commit_tuning_record(TuningRecord([[], []], again.commit_workload(matmul(8)), [0.5]))
    assert "unreadable line" in caplog.text
    assert len(Database(path)) == 2


def _writer(path, worker, count):
    db = Database(path)
    wl = db.commit_workload(matmul(8))
    for i in range(count):
        db.commit_tuning_record(TuningRecord([[], []], wl, [worker + i / 1000], "llvm", [["x" * 2000]]))


def test_concurrent_writers_do_not_corrupt_the_file(tmp_path):
    path = str(tmp_path / "db.jsonl")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, w, 25)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with open(path) as f:
        entries = [json.loads(line) for line in f]  # every line is whole JSON
    assert sum(e["type"] == "workload" for e in entries) == 1, "the workload is written once"
    db = Database(path)
    assert len(db) == 75 and os.path.getsize(path) > 75 * 2000
