"""A tuning database: workloads and measured schedules in one append-only JSON-lines file.

Each line is one JSON object, either a workload ``{"type": "workload", "key", "ir"}`` (the program
in the IR's JSON form, ``tensorize.ir.save_json``) or a tuning record ``{"type": "record",
"workload": key, "trace", "run_secs", "target", "target_key", "args_info"}``. A workload's key is
the SHA-256 of its canonical TVMScript text, so the same program maps to the same entry in every
process. Loading a file never evaluates anything: the IR is rebuilt from a table of node classes,
traces from their JSON, and older files' TVMScript text goes through the safe parser (only
TVMScript's vocabulary). Every line is checked; a garbage, truncated or hostile line is skipped with
a warning naming its line number.

Appends take an exclusive ``flock`` and write each line with one ``write`` call: several tuning
processes may share a file. A process killed mid-write leaves a torn last line; the next writer
terminates it (so it is skipped as one unreadable line) before appending its own.

>>> db = Database("tuning.jsonl")                                        # doctest: +SKIP
>>> wl = db.commit_workload(mod)                                        # doctest: +SKIP
>>> db.commit_tuning_record(TuningRecord(sch.trace.as_json(), wl, [1.2e-3], "llvm"))   # doctest: +SKIP
>>> best = db.get_top_k(wl, 1, target="llvm")[0]                        # doctest: +SKIP
>>> sch = best.replay()          # a Schedule of the workload with the record's trace applied   # doctest: +SKIP
"""
from __future__ import annotations

import fcntl
import json
import logging
import os

from tensorize.ir.structural import structural_equal, structural_hash

from .workload import TuningRecord, Workload, as_module, target_key, workload_key

logger = logging.getLogger(__name__)

__all__ = ["Database", "Workload", "TuningRecord", "target_key"]


class Database:
    """Workloads and tuning records stored in the JSON-lines file ``path`` (created if missing).

    ``reload()`` picks up lines other processes appended since; committing does it too, so a
    workload committed elsewhere is reused rather than written twice.

    Parameters
    ----------
    path : str or PathLike
        The file.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        self._offset = 0
        self._line = 0  # complete lines read so far
        self._workloads: dict[str, Workload] = {}
        self._by_shash: dict[int, list[Workload]] = {}
        self._records: list[TuningRecord] = []
        self._by_workload: dict[str, list[TuningRecord]] = {}  # the same records, by workload key
        self.skipped = 0  # lines skipped as unreadable
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

    def _read_from(self, f) -> int:
        """Ingest the whole lines after the current offset; returns how many bytes of torn tail follow them."""
        f.seek(self._offset)
        data = f.read()
        end = data.rfind(b"\n") + 1  # only whole lines; a torn tail is left for later
        for line in data[:end].splitlines():
            self._line += 1
            if line.strip():
                self._ingest(line, self._line)
        self._offset += end
        return len(data) - end

    def _ingest(self, line: bytes, number: int) -> None:
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict):
                raise ValueError("the line is not a JSON object")
            kind = entry.get("type")
            if kind == "workload":
                if entry.get("key") not in self._workloads:
                    self._add_workload(Workload.from_json(entry))
            elif kind == "record":
                workload = self._workloads.get(entry.get("workload"))
                if workload is None:
                    raise ValueError("the record's workload is not in the file (above it)")
                self._add_record(TuningRecord.from_json(entry, workload))
            else:
                raise ValueError(f"unknown entry type {str(kind)[:40]!r}")
        except Exception as err:  # noqa: BLE001 - any damaged or hostile line is skipped, never fatal
            self.skipped += 1
            logger.warning("%s:%d: skipping an unreadable line (%s: %s)", self.path, number, type(err).__name__,
                           str(err)[:200])

    def _add_workload(self, workload: Workload) -> Workload:
        have = self._workloads.get(workload.key)
        if have is not None:
            return have
        self._workloads[workload.key] = workload
        self._by_shash.setdefault(workload.shash, []).append(workload)
        return workload

    # -- writing ---------------------------------------------------------------------------
    def _append(self, entry: dict, before_write=None) -> bool:
        """Append one line under an exclusive lock, after catching up with other writers;
        ``before_write()`` may decide, once caught up, that nothing needs writing (returns False)."""
        line = (json.dumps(entry, separators=(",", ":"), allow_nan=False) + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "rb") as f:
                torn = self._read_from(f)
                if torn:  # a writer died mid-line (writers hold the lock for whole lines): end its line
                    os.write(fd, b"\n")
                    self._read_from(f)
            if before_write is not None and not before_write():
                return False
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(f"short write to {self.path}: {written} of {len(line)} bytes; the disk may be full")
            self._offset += written
            self._line += 1
            return True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def commit_workload(self, mod) -> Workload:
        """The database's entry for ``mod`` (an IRModule or PrimFunc), adding it when new.

        Parameters
        ----------
        mod : IRModule or PrimFunc
            The program.

        Returns
        -------
        Workload
            The entry (the same object for structurally equal programs).
        """
        mod = as_module(mod)
        shash = structural_hash(mod)
        for workload in self._by_shash.get(shash, []):
            if structural_equal(workload.mod, mod):
                return workload
        workload = Workload.of(mod)
        self._append(workload.as_json(), before_write=lambda: workload.key not in self._workloads)
        return self._add_workload(workload)

    def has_workload(self, mod) -> bool:
        """Whether ``mod`` (by structural hash) is a workload of the database."""
        return workload_key(as_module(mod)) in self._workloads

    def commit_tuning_record(self, record: TuningRecord) -> None:
        """Append ``record`` (its workload must come from ``commit_workload`` of this file)."""
        if self._workloads.get(record.workload.key) is None:
            raise ValueError(f"the record's workload {record.workload!r} is not in {self.path}; commit it first with "
                             "db.commit_workload(mod)")
        self._append(record.as_json())
        self._add_record(record)

    def _add_record(self, record: TuningRecord) -> None:
        self._records.append(record)
        self._by_workload.setdefault(record.workload.key, []).append(record)

    # -- queries ---------------------------------------------------------------------------
    def get_top_k(self, workload: Workload, k: int, target=None) -> list[TuningRecord]:
        """The ``k`` fastest programs of ``workload`` (by mean run time), fastest first, one valid record each.

        A program measured more than once (the same trace on the same target) counts once, at the median of its
        valid records (the slower middle one of an even count): one lucky measurement does not make it the pick
        once it has been measured again.

        Parameters
        ----------
        workload : Workload
            From ``commit_workload``.
        k : int
            How many.
        target : Target or str, optional
            Only records measured on this target (same ``target_key``: target string and features).

        Returns
        -------
        list of TuningRecord
        """
        if k < 0:
            raise ValueError(f"k must be non-negative, got {k}")
        programs: dict = {}
        for r in self.records_of(workload, target):
            if r.is_valid:
                programs.setdefault((r.target_key, r.trace_key), []).append(r)
        medians = [sorted(recs, key=lambda r: r.mean_run_secs)[len(recs) // 2] for recs in programs.values()]
        return sorted(medians, key=lambda r: r.mean_run_secs)[:k]

    def query_schedule(self, mod, target):
        """The fastest measured schedule of ``mod`` on ``target``, replayed; None when there is none
        (what ``tensorize.graph.build(..., database=db)`` asks for each task)."""
        mod = as_module(mod)
        if not self.has_workload(mod):
            return None
        top = self.get_top_k(self.commit_workload(mod), 1, target=target)
        return top[0].replay() if top else None

    def records_of(self, workload: Workload, target=None) -> list[TuningRecord]:
        """The records of ``workload`` (valid or not), in the order added; with ``target``, only those measured on
        it (same ``target_key``).

        Parameters
        ----------
        workload : Workload
            From ``commit_workload``.
        target : Target or str, optional

        Returns
        -------
        list of TuningRecord
        """
        mine = self._by_workload.get(workload.key, [])
        if target is None:
            return list(mine)
        key = target_key(target)
        return [r for r in mine if r.target_key == key]

    def get_all_tuning_records(self) -> list[TuningRecord]:
        """Every record, in the order added."""
        return list(self._records)

    @property
    def workloads(self) -> list[Workload]:
        """Every workload."""
        return list(self._workloads.values())

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"Database({self.path!r}: {len(self._workloads)} workloads, {len(self._records)} records)"
