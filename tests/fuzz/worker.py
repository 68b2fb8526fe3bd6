"""Runs fuzz cases in a forked worker process, so that an abort, a crash or a hang ends the case,
not the fuzzer. The worker is reused while it lives and replaced when it dies or overruns."""
from __future__ import annotations

import multiprocessing
import traceback

from .cases import CASES, Finding


def _serve(conn) -> None:
    import logging

    logging.getLogger().setLevel(logging.ERROR)  # damaged database lines warn by design: keep the run quiet
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        kind, args = request
        try:
            outcome = CASES[kind](*args)
        except Finding as err:
            outcome = {"status": "finding", "error": "Finding", "message": str(err)[:2000]}
        except BaseException as err:  # noqa: BLE001 - anything else escaping is what the fuzzer hunts
            outcome = {"status": "finding", "error": type(err).__name__, "message": str(err)[:500],
                       "traceback": traceback.format_exc()[-3000:]}
        conn.send(outcome)


class Worker:
    """A forked process that runs cases one at a time.

    Parameters
    ----------
    timeout : float
        Seconds a case may take before it counts as a hang (the worker is then killed and replaced).
    """

    def __init__(self, timeout: float = 60.0):
        self.timeout = timeout
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    def run(self, kind: str, *args) -> dict:
        """The outcome of one case: ``status`` is ``ok``, ``error`` (a documented TVMError) or ``finding``
        (an undocumented exception, a broken promise, a crash or a hang)."""
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._conn.send((kind, args))
        if self._conn.poll(self.timeout):
            try:
                return self._conn.recv()
            except EOFError:
                pass
        else:
            self.close()
            return {"status": "finding", "error": "Hang", "message": f"no result within {self.timeout} s"}
        self._proc.join(5)
        code = self._proc.exitcode
        self._proc = None
        return {"status": "finding", "error": "Crash", "message": f"the worker died (exit code {code})"}

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(5)
            self._proc = None

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
