"""The JSON-lines tuning database: round trip, top-k, reload, concurrent writers, replay of traces."""
import json
import math
import multiprocessing
import os

import pytest

import tensorize as tvm
from search import Database, TuningRecord
from tests.workloads import matmul_f32


def matmul(n):
    return matmul_f32(n, n, n)


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


# -- safety: loading never runs code; every damaged line is skipped with its line number --------------

from search.database import target_key  # noqa: E402
from tensorize.ir import save_json  # noqa: E402


def test_workloads_are_stored_as_ir_json_not_text(tmp_path):
    path = tmp_path / "db.jsonl"
    Database(path).commit_workload(matmul(8))
    entry = json.loads(path.read_text().splitlines()[0])
    assert "text" not in entry and entry["ir"]["tensorize_ir"] == 1
    again = Database(path)
    tvm.ir.assert_structural_equal(again.workloads[0].mod, tvm.IRModule({"main": matmul(8)}))


def test_old_text_lines_are_read_by_the_safe_parser(tmp_path, caplog):
    import hashlib

    text = tvm.IRModule({"main": matmul(8)}).script()
    sentinel = tmp_path / "pwned"
    hostile = text.replace("T.float32(", f"T.float32(__import__('os').system('touch {sentinel}') + ", 1)
    assert hostile != text
    path = tmp_path / "db.jsonl"
    with open(path, "w") as f:
        for t in (text, hostile):
            f.write(json.dumps({"type": "workload", "key": hashlib.sha256(t.encode()).hexdigest(), "text": t}) + "\n")
    db = Database(path)
    assert len(db.workloads) == 1 and not sentinel.exists()
    assert "db.jsonl:2: skipping" in caplog.text and "__import__" in caplog.text


def _good_lines(tmp_path):
    path = tmp_path / "good.jsonl"
    db = Database(path)
    wl = db.commit_workload(matmul(8))
    db.commit_tuning_record(TuningRecord(tiled_trace(8, 4).trace.as_json(), wl, [1e-3], "llvm"))
    return path.read_text().splitlines(), wl


def test_garbage_truncated_and_hostile_lines_are_skipped_with_their_line_number(tmp_path, caplog):
    (workload_line, record_line), wl = _good_lines(tmp_path)
    record = json.loads(record_line)
    bad_ir = json.loads(workload_line)
    bad_ir["ir"]["nodes"][0] = {"type": "system", "attrs": {"command": "touch x"}}
    bad_ir["key"] = "1" * 64
    wrong_key = json.loads(workload_line)
    wrong_key["key"] = "0" * 64
    hostile = [
        "garbage", "\x00\xff\xfe", "[1, 2]", "null", "{}", '{"type": "shell"}', record_line[:40],
        workload_line[: len(workload_line) // 2], json.dumps(bad_ir), json.dumps(wrong_key),
        json.dumps({**record, "trace": [[["__class__", {}, [], []]], []]}),
        json.dumps({**record, "trace": "__import__('os')"}),
        json.dumps({**record, "run_secs": ["1e-3"]}),
        json.dumps({**record, "target": {"kind": "llvm"}}),
        json.dumps({**record, "workload": "f" * 64}),
        "[" * 100000 + "]" * 100000,
    ]
    path = tmp_path / "db.jsonl"
    path.write_text("\n".join([workload_line] + hostile + [record_line]) + "\n")
    db = Database(path)
    assert len(db.workloads) == 1 and len(db) == 1 and db.skipped == len(hostile)
    for number in range(2, len(hostile) + 2):
        assert f"db.jsonl:{number}: skipping" in caplog.text
    best = db.get_top_k(db.workloads[0], 1)[0]
    tvm.ir.assert_structural_equal(best.replay().mod, tiled_trace(8, 4).mod)


def test_a_hostile_trace_fails_at_replay_with_a_trace_error(tmp_path):
    from tensorize.schedule.error import TraceError

    db = Database(tmp_path / "db.jsonl")
    wl = db.commit_workload(matmul(8))
    for trace in ([[["copy", {}, [], []]], []], [[["get_block", {"name": "C", "nope": 1}, [], ["b0"]]], []]):
        record = TuningRecord(trace, wl, [1.0], "llvm")
        with pytest.raises(TraceError):
            record.replay()


def test_records_are_keyed_by_target_and_features(tmp_path):
    db = Database(tmp_path / "db.jsonl")
    wl = db.commit_workload(matmul(8))
    trace = tiled_trace(8, 4).trace.as_json()
    db.commit_tuning_record(TuningRecord(trace, wl, [1e-3], "llvm -mcpu=haswell"))
    db.commit_tuning_record(TuningRecord(trace, wl, [2e-3], "llvm -mcpu=znver4"))
    db.commit_tuning_record(TuningRecord(trace, wl, [3e-3], "llvm -mcpu=haswell -mattr=+avx512f"))
    assert target_key("llvm -mcpu=haswell").startswith("llvm -mcpu=haswell|avx,avx2")
    assert "avx512vnni" in target_key("llvm -mcpu=znver4")
    again = Database(tmp_path / "db.jsonl")
    wl2 = again.workloads[0]
    assert [r.run_secs for r in again.get_top_k(wl2, 5, target="llvm -mcpu=znver4")] == [[2e-3]]
    assert [r.run_secs for r in again.get_top_k(wl2, 5, target=tvm.target.Target("llvm -mcpu=haswell"))] == [[1e-3]]
    assert len(again.get_top_k(wl2, 5)) == 3
    assert again.get_top_k(wl2, 5, target="llvm -mcpu=skylake") == []


def _committer(path):
    db = Database(path)
    wl = db.commit_workload(matmul(8))
    i = 0
    while True:
        db.commit_tuning_record(TuningRecord([[], []], wl, [1.0 + i], "llvm", [["y" * 50000]]))
        i += 1


def test_a_writer_killed_at_any_moment_leaves_a_file_that_loads(tmp_path, caplog):
    import signal
    import time

    path = str(tmp_path / "db.jsonl")
    ctx = multiprocessing.get_context("fork")
    for delay in (0.05, 0.13, 0.21):
        proc = ctx.Process(target=_committer, args=(path,))
        proc.start()
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
    with open(path, "ab") as f:
        f.write(b'{"type":"record","workload":"')  # certainly torn
    db = Database(path)
    count = len(db)
    wl = db.commit_workload(matmul(8))
    db.commit_tuning_record(TuningRecord([[], []], wl, [0.5], "llvm"))
    again = Database(path)
    assert len(again) == count + 1 and again.get_all_tuning_records()[-1].run_secs == [0.5]
    assert len(again.workloads) == 1


def test_save_json_of_a_workload_is_what_the_file_holds(tmp_path):
    path = tmp_path / "db.jsonl"
    Database(path).commit_workload(matmul(8))
    entry = json.loads(path.read_text().splitlines()[0])
    assert json.loads(save_json(tvm.IRModule({"main": matmul(8)}))) == entry["ir"]


def test_a_program_counts_at_its_median_measurement(tmp_path):
    """One lucky measurement does not make a program the pick: measured again slower, it ranks by the median of its
    measurements (the slower middle one of an even count)."""
    db = Database(tmp_path / "db.jsonl")
    wl = db.commit_workload(matmul(16))
    lucky, steady = tiled_trace(16, 4).trace.as_json(), tiled_trace(16, 8).trace.as_json()
    db.commit_tuning_record(TuningRecord(lucky, wl, [1e-3], "llvm"))
    db.commit_tuning_record(TuningRecord(steady, wl, [2e-3], "llvm"))
    assert db.get_top_k(wl, 1)[0].trace_json == lucky
    db.commit_tuning_record(TuningRecord(lucky, wl, [3e-3], "llvm"))   # measured again: 3 ms
    db.commit_tuning_record(TuningRecord(lucky, wl, None, "llvm"))     # a failed run does not count
    top = db.get_top_k(wl, 5)
    assert [(r.trace_json == lucky, r.mean_run_secs) for r in top] == [(False, 2e-3), (True, 3e-3)]
    for secs in (1.1e-3, 1.2e-3):  # two more: the median of 1, 3, 1.1 and 1.2 ms is the slower middle, 1.2 ms
        db.commit_tuning_record(TuningRecord(lucky, wl, [secs], "llvm"))
    assert [(r.trace_json == lucky, r.mean_run_secs) for r in db.get_top_k(wl, 5)] == [(True, 1.2e-3), (False, 2e-3)]
