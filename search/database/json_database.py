"""A tuning database: workloads and measured schedules in one append-only JSON-lines file.

Each line is one JSON object, either a workload ``{"type": "workload", "key", "text"}`` or a tuning
record ``{"type": "record", "workload": key, "trace", "run_secs", "target", "args_info"}``. A
workload's key is the SHA-256 of its canonical TVMScript text, so the same program maps to the
same entry in every process (Python's ``hash`` of strings changes from process to process, so the
in-memory structural hash only speeds up lookups). Appends take an exclusive ``flock`` and write
each line with one ``write`` call: several tuning processes may share a file. A torn last line
(a process killed mid-write) is skipped with a warning; the file stays usable (resumable).

>>> db = Database("tuning.jsonl")                                        # doctest: +SKIP
>>> wl = db.commit_workload(mod)                                        # doctest: +SKIP
>>> db.commit_tuning_record(TuningRecord(sch.trace.as_json(), wl, [1.2e-3], "llvm"))   # doctest: +SKIP
>>> best = db.get_top_k(wl, 1)[0]                                       # doctest: +SKIP
>>> sch = best.replay()          # a Schedule of the workload with the record's trace applied   # doctest: +SKIP
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import math
import os
from dataclasses import dataclass, field

from tensorize.ir.function import IRModule, PrimFunc
from tensorize.ir.structural import structural_equal, structural_hash

logger = logging.getLogger(__name__)

__all__ = ["Database", "Workload", "TuningRecord"]


def _as_module(mod) -> IRModule:
    if isinstance(mod, PrimFunc):
        return IRModule({"main": mod})
    if isinstance(mod, IRModule):
        return mod
    raise TypeError(f"a workload is an IRModule or a PrimFunc, got {type(mod).__name__}")


class Workload:
    """A program being tuned: ``mod`` (an IRModule), ``key`` (stable across processes), ``text``.

    A workload read back from disk parses its text on first use of ``mod``.
    """

    __slots__ = ("key", "text", "_mod", "_shash")

    def __init__(self, key: str, text: str, mod: IRModule | None = None):
        self.key, self.text, self._mod, self._shash = key, text, mod, None

    @staticmethod
    def of(mod) -> "Workload":
        mod = _as_module(mod)
        text = mod.script()
        return Workload(hashlib.sha256(text.encode()).hexdigest(), text, mod)

    @property
    def mod(self) -> IRModule:
        if self._mod is None:
            from tensorize.script import from_source

            parsed = from_source(self.text)
            self._mod = _as_module(parsed)
        return self._mod

    @property
    def shash(self) -> int:
        """The structural hash of ``mod`` (valid within this process only)."""
        if self._shash is None:
            self._shash = structural_hash(self.mod)
        return self._shash

    def as_json(self) -> dict:
        return {"type": "workload", "key": self.key, "text": self.text}

    def __repr__(self) -> str:
        return f"Workload({self.key[:12]})"


@dataclass
class TuningRecord:
    """One measured schedule of ``workload``: its trace (``Trace.as_json()``), run times in seconds
    (``None`` or empty when the build or run failed), the target string and argument descriptions."""

    trace_json: list
    workload: Workload
    run_secs: list | None = None
    target: str | None = None
    args_info: list | None = field(default=None)

    @property
    def mean_run_secs(self) -> float:
        """The mean run time; ``inf`` for a failed measurement."""
        secs = [float(s) for s in (self.run_secs or [])]
        if not secs or not all(math.isfinite(s) for s in secs):
            return math.inf
        return sum(secs) / len(secs)

    @property
    def is_valid(self) -> bool:
        return math.isfinite(self.mean_run_secs)

    def trace(self):
        from tensorize.schedule.trace import Trace

        return Trace.from_json(self.trace_json)

    def replay(self):
        """A fresh ``Schedule`` of the workload with this record's trace applied."""
        from tensorize.schedule import Schedule

        sch = Schedule(self.workload.mod)
        self.trace().apply_to_schedule(sch)
        return sch

    def as_json(self) -> dict:
        return {"type": "record", "workload": self.workload.key, "trace": self.trace_json,
                "run_secs": None if self.run_secs is None else [float(s) for s in self.run_secs],
                "target": None if self.target is None else str(self.target), "args_info": self.args_info}


class Database:
    """Workloads and tuning records stored in the JSON-lines file ``path`` (created if missing).

    ``reload()`` picks up lines other processes appended since; committing does it too, so a
    workload committed elsewhere is reused rather than written twice.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        self._offset = 0
        self._workloads: dict[str, Workload] = {}
        self._by_shash: dict[int, list[Workload]] = {}
        self._records: list[TuningRecord] = []
        open(self.path, "a").close()
        self.reload()

    # -- reading ---------------------------------------------------------------------------
    def reload(self) -> None:
        """Read the lines appended to the file since the last read."""
        with open(self.path, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_SH)
            try:
                self._read_from(f)
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _read_from(self, f) -> None:
        f.seek(self._offset)
        data = f.read()
        end = data.rfind(b"\n") + 1  # only whole lines; a torn tail is left for later
        for number, line in enumerate(data[:end].splitlines()):
            if line.strip():
                self._ingest(line, number)
        self._offset += end

    def _ingest(self, line: bytes, number: int) -> None:
        try:
            entry = json.loads(line)
            kind = entry["type"]
            if kind == "workload":
                self._add_workload(Workload(entry["key"], entry["text"]))
            elif kind == "record":
                workload = self._workloads[entry["workload"]]
                self._records.append(TuningRecord(entry["trace"], workload, entry.get("run_secs"),
                                                  entry.get("target"), entry.get("args_info")))
            else:
                raise KeyError(f"unknown entry type {kind!r}")
        except (ValueError, KeyError, TypeError) as err:
            logger.warning("%s: skipping an unreadable line near byte %d (%s)", self.path, self._offset, err)

    def _add_workload(self, workload: Workload) -> Workload:
        have = self._workloads.get(workload.key)
        if have is not None:
            return have
        self._workloads[workload.key] = workload
        if workload._mod is not None:
            self._by_shash.setdefault(workload.shash, []).append(workload)
        return workload

    # -- writing ---------------------------------------------------------------------------
    def _append(self, entry: dict, before_write=None):
        """Append one line under an exclusive lock, after catching up with other writers;
        ``before_write()`` may decide, once caught up, that nothing needs writing (returns False)."""
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "rb") as f:
                self._read_from(f)
            if before_write is not None and not before_write():
                return
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(f"short write to {self.path}: {written} of {len(line)} bytes; the disk may be full")
            self._offset += written
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def commit_workload(self, mod) -> Workload:
        """The database's entry for ``mod`` (an IRModule or PrimFunc), adding it when new."""
        mod = _as_module(mod)
        shash = structural_hash(mod)
        for workload in self._by_shash.get(shash, []):
            if structural_equal(workload.mod, mod):
                return workload
        workload = Workload.of(mod)
        self._append(workload.as_json(), before_write=lambda: workload.key not in self._workloads)
        known = self._workloads.get(workload.key)
        if known is not None and known._mod is None:
            known._mod = mod  # read back from disk: keep the live module
            self._by_shash.setdefault(known.shash, []).append(known)
        return self._add_workload(workload)

    def has_workload(self, mod) -> bool:
        return Workload.of(mod).key in self._workloads

    def commit_tuning_record(self, record: TuningRecord) -> None:
        """Append ``record`` (its workload must come from ``commit_workload`` of this file)."""
        if self._workloads.get(record.workload.key) is None:
            raise ValueError(f"the record's workload {record.workload!r} is not in {self.path}; commit it first with "
                             "db.commit_workload(mod)")
        self._append(record.as_json())
        self._records.append(record)

    # -- queries ---------------------------------------------------------------------------
    def get_top_k(self, workload: Workload, k: int) -> list[TuningRecord]:
        """The ``k`` fastest valid records of ``workload`` (by mean run time), fastest first."""
        if k < 0:
            raise ValueError(f"k must be non-negative, got {k}")
        mine = [r for r in self._records if r.workload.key == workload.key and r.is_valid]
        mine.sort(key=lambda r: r.mean_run_secs)
        return mine[:k]

    def get_all_tuning_records(self) -> list[TuningRecord]:
        return list(self._records)

    @property
    def workloads(self) -> list[Workload]:
        return list(self._workloads.values())

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"Database({self.path!r}: {len(self._workloads)} workloads, {len(self._records)} records)"
