"""What a tuning database holds: workloads (programs, stored as the IR's JSON form) and tuning records
(a trace, its measured run times and the target it was measured on)."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field

from tensorize.errors import TVMError
from tensorize.ir import load_json, save_json
from tensorize.ir.function import IRModule, PrimFunc
from tensorize.ir.structural import structural_hash

__all__ = ["Workload", "TuningRecord", "target_key", "trace_key", "workload_key"]


def as_module(mod) -> IRModule:
    """``mod`` as an IRModule (a PrimFunc becomes the module's ``main``)."""
    if isinstance(mod, PrimFunc):
        return IRModule({"main": mod})
    if isinstance(mod, IRModule):
        return mod
    raise TypeError(f"a workload is an IRModule or a PrimFunc, got {type(mod).__name__}")


def workload_key(mod: IRModule) -> str:
    """The stable key of a program: the SHA-256 of its canonical TVMScript text (the same in every process)."""
    return hashlib.sha256(mod.script().encode()).hexdigest()


def target_key(target) -> str:
    """The key records are filed under: the target string and its resolved CPU features.

    Two targets share a key only when they name the same target and enable the same features, so a
    record tuned on one CPU is never replayed on another (``-mcpu=native`` resolves to the features
    of the machine that measured it).

    Parameters
    ----------
    target : Target or str
        The target the records were measured on.

    Returns
    -------
    str
        ``"<target string>|<feature>,<feature>,..."`` (features sorted).

    Examples
    --------
    >>> target_key("llvm -mcpu=haswell")
    'llvm -mcpu=haswell|avx,avx2,bmi,bmi2,f16c,fma,popcnt,sse4.2'
    """
    from tensorize.target import Target

    target = target if isinstance(target, Target) else Target(target)
    return f"{target}|{','.join(sorted(target.features))}"


class Workload:
    """A program being tuned: ``mod`` (an IRModule) and ``key`` (stable across processes).

    Parameters
    ----------
    key : str
        ``workload_key(mod)``.
    mod : IRModule
        The program.
    """

    __slots__ = ("key", "_mod", "_shash")

    def __init__(self, key: str, mod: IRModule):
        self.key, self._mod, self._shash = key, mod, None

    @staticmethod
    def of(mod) -> "Workload":
        """The workload of ``mod`` (an IRModule or PrimFunc)."""
        mod = as_module(mod)
        return Workload(workload_key(mod), mod)

    @property
    def mod(self) -> IRModule:
        """The workload's IRModule."""
        return self._mod

    @property
    def text(self) -> str:
        """The program's TVMScript text (for reading; the database stores the IR's JSON form)."""
        return self._mod.script()

    @property
    def shash(self) -> int:
        """The structural hash of ``mod`` (valid within this process only)."""
        if self._shash is None:
            self._shash = structural_hash(self._mod)
        return self._shash

    def as_json(self) -> dict:
        """The workload as a JSON-ready dict (a line of the database file)."""
        import json

        return {"type": "workload", "key": self.key, "ir": json.loads(save_json(self._mod))}

    @staticmethod
    def from_json(entry: dict) -> "Workload":
        """A workload from its database line, checked: the IR (or, in old files, the TVMScript text, read by
        the safe parser) must rebuild a well-formed module whose key is the line's key. Nothing is evaluated."""
        key = entry["key"]
        if not isinstance(key, str) or len(key) != 64:
            raise ValueError(f"workload key {str(key)[:80]!r} is not a SHA-256 hex digest")
        if "ir" in entry:
            mod = load_json(entry["ir"])
            if not isinstance(mod, IRModule):
                raise ValueError(f"the workload's IR is a {type(mod).__name__}, not an IRModule")
            _verify(mod)
            expected = workload_key(mod)
        else:  # the older format: TVMScript text, parsed in safe mode (only TVMScript's vocabulary)
            from tensorize.script import from_source

            text = entry["text"]
            if not isinstance(text, str):
                raise ValueError("the workload's text is not a string")
            mod = as_module(from_source(text))
            expected = hashlib.sha256(text.encode()).hexdigest()
        if expected != key:
            raise ValueError("the workload's key does not match its program")
        return Workload(key, mod)

    def __repr__(self) -> str:
        return f"Workload({self.key[:12]})"


def _verify(mod: IRModule) -> None:
    from tensorize.analysis.verify import verify_well_formed

    try:
        for func in mod.functions.values():
            if not isinstance(func, PrimFunc):
                raise ValueError(f"a workload function is a {type(func).__name__}")
            verify_well_formed(func)
    except TVMError:
        raise
    except Exception as err:  # a hostile or damaged IR that breaks the verifier's assumptions
        raise ValueError(f"the workload's IR is malformed ({type(err).__name__}: {err})") from None


def trace_key(trace_json) -> str:
    """A trace's JSON (``Trace.as_json()``) as canonical text: the same program gives the same key.

    >>> trace_key([[["get_block", {"name": "C", "func_name": "main"}, [], ["b0"]]], []])
    '[[["get_block", {"func_name": "main", "name": "C"}, [], ["b0"]]], []]'
    """
    return json.dumps(trace_json, sort_keys=True)


@dataclass
class TuningRecord:
    """One measured schedule of ``workload``.

    Parameters
    ----------
    trace_json : list
        ``Trace.as_json()`` of the schedule.
    workload : Workload
        The program the trace applies to.
    run_secs : list of float, optional
        Measured run times in seconds (``None`` or empty when the build or run failed).
    target : str, optional
        The target string it was measured on.
    args_info : list, optional
        Argument descriptions.
    target_key : str, optional
        ``target_key(target)``; computed from ``target`` when not given.
    error : str, optional
        Why the build or run failed (its message), for a failed measurement.
    error_kind : str, optional
        ``"build"``, ``"run"``, ``"crash"``, ``"timeout"`` or ``"wrong_output"`` for a failed measurement.
    """

    trace_json: list
    workload: Workload
    run_secs: list | None = None
    target: str | None = None
    args_info: list | None = field(default=None)
    target_key: str | None = None
    error: str | None = None
    error_kind: str | None = None

    def __post_init__(self):
        if self.target is not None and not isinstance(self.target, str):
            self.target = str(self.target)
        if self.target_key is None and self.target is not None:
            self.target_key = target_key(self.target)

    @property
    def mean_run_secs(self) -> float:
        """The mean run time; ``inf`` for a failed measurement."""
        secs = [float(s) for s in (self.run_secs or [])]
        if not secs or not all(math.isfinite(s) and s >= 0 for s in secs):
            return math.inf
        return sum(secs) / len(secs)

    @property
    def is_valid(self) -> bool:
        """Whether the record has a finite measured time."""
        return math.isfinite(self.mean_run_secs)

    @property
    def trace_key(self) -> str:
        """The trace as canonical JSON text: records of the same program have the same key."""
        key = self.__dict__.get("_trace_key")
        if key is None:
            key = self.__dict__["_trace_key"] = trace_key(self.trace_json)
        return key

    def trace(self):
        """The record's ``Trace`` (``TraceError`` when the stored JSON is not a trace)."""
        from tensorize.schedule.trace import Trace

        return Trace.from_json(self.trace_json)

    def replay(self):
        """A fresh ``Schedule`` of the workload with this record's trace applied."""
        from tensorize.schedule import Schedule

        sch = Schedule(self.workload.mod)
        self.trace().apply_to_schedule(sch)
        return sch

    def as_json(self) -> dict:
        """The record as a JSON-ready dict (a line of the database file)."""
        return {"type": "record", "workload": self.workload.key, "trace": self.trace_json,
                "run_secs": None if self.run_secs is None else [float(s) for s in self.run_secs],
                "target": self.target, "target_key": self.target_key, "args_info": self.args_info,
                **({"error": self.error[:2000], "error_kind": self.error_kind} if self.error else {})}

    @staticmethod
    def from_json(entry: dict, workload: Workload) -> "TuningRecord":
        """A record from its database line, checked field by field (the trace must read as a trace)."""
        from tensorize.schedule.trace import Trace

        run_secs = entry.get("run_secs")
        if run_secs is not None and (not isinstance(run_secs, list) or not all(
                isinstance(s, (int, float)) and not isinstance(s, bool) for s in run_secs)):
            raise ValueError("run_secs is not a list of numbers")
        for name in ("target", "target_key", "error", "error_kind"):
            if entry.get(name) is not None and not isinstance(entry[name], str):
                raise ValueError(f"{name} is not a string")
        if entry.get("args_info") is not None and not isinstance(entry["args_info"], list):
            raise ValueError("args_info is not a list")
        Trace.from_json(entry["trace"])  # raises TraceError for anything that is not a trace
        key = entry.get("target_key")
        if key is None and entry.get("target") is not None:  # older files: derive it, when the target parses
            try:
                key = target_key(entry["target"])
            except TVMError:
                key = None
        return TuningRecord(entry["trace"], workload, run_secs, entry.get("target"), entry.get("args_info"),
                            key or "", entry.get("error"), entry.get("error_kind"))
