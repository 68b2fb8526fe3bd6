"""The main loop of a measurement child process (``python -m search.measure.worker``).

It reads ``(kind, payload)`` requests from stdin and answers each with ``("ok", value)`` or
``("error", message)`` on what was its stdout; fd 1 itself is pointed at stderr first, so stray
output of native code cannot corrupt the replies. Requests:

- ``"ping"``: ``"pong"`` (the process is up and its imports work).
- ``"build"``: ``(mod, target, path)``: build the scheduled module into the shared library ``path``;
  the build seconds. ``"build_script"`` takes the module as TVMScript text instead (for IR that does
  not pickle).
- ``"reference"``: ``(mod, args, outputs)``: the untransformed program's outputs on ``args``.
- ``"run"``: ``(artifact, inputs_path, reference_path, outputs, tolerances, timing)``: the seconds per run
  of each repeat, or an error tagged ``"run"``/``"wrong_output"``.

A request that kills the process (an LLVM abort, a segfault) gets no reply: the parent sees the end of
the stream and reports the death.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
from collections import OrderedDict

from tensorize.runtime.openmp import pin_openmp_runtime

from .inputs import load_arrays
from .process import WORKER_CPUS_ENV, read_frame, write_frame
from .tasks import RunFailure, build_artifact, check_and_time, reference_outputs

logger = logging.getLogger(__name__)


class _ArrayCache:
    """The few most recent workloads' arrays, by file path (inputs are reused across candidates)."""

    def __init__(self, size: int = 4):
        self.size = size
        self._items: OrderedDict = OrderedDict()

    def get(self, path: str) -> list:
        if path in self._items:
            self._items.move_to_end(path)
        else:
            self._items[path] = load_arrays(path)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return self._items[path]


def _exit_with_parent(period: float = 1.0) -> None:
    """Exit when the parent process is gone, even while a kernel loops forever (native calls release the
    GIL, so this thread keeps running): a killed tuning run leaves no child spinning behind."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(period)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def handle(kind: str, payload, arrays: _ArrayCache):
    """Answer one request of the parent (``ping``, ``cpus``, ``build``, ``run``, ...)."""
    if kind == "ping":
        return "pong"
    if kind == "cpus":  # where this worker may run (LocalBuilder(cpus=...))
        return sorted(os.sched_getaffinity(0))
    if kind == "build":
        mod, target, path = payload
        return build_artifact(mod, target, path)
    if kind == "build_script":
        from tensorize.script import from_source

        text, target, path = payload
        return build_artifact(from_source(text), target, path)
    if kind == "reference":
        mod, args, outputs = payload
        return reference_outputs(mod, args, outputs)
    if kind == "run":
        artifact, inputs_path, reference_path, outputs, tols, timing = payload
        return check_and_time(artifact, arrays.get(inputs_path), arrays.get(reference_path), outputs, tols, timing)
    raise ValueError(f"unknown request {kind!r}")


def _restrict_cpus(spec: str | None) -> None:
    """Run this worker on the CPUs ``spec`` lists (``"0,2,5"``); nothing when unset. A CPU this process may not
    use is logged and the affinity left as it was."""
    if not spec:
        return
    try:
        os.sched_setaffinity(0, {int(c) for c in spec.split(",") if c.strip()})
    except (OSError, ValueError, AttributeError) as err:
        logger.warning("cannot run on CPUs %s: %s", spec, err)


def main() -> int:
    """The worker's loop: read request frames from stdin, write replies; the exit status."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    logging.basicConfig(level=os.environ.get("TENSORIZE_WORKER_LOG", "WARNING"), stream=sys.stderr)
    _exit_with_parent()
    _restrict_cpus(os.environ.get(WORKER_CPUS_ENV))
    pin_openmp_runtime()  # before any candidate's library is loaded (and, later, unloaded)
    arrays = _ArrayCache()
    while True:
        message = read_frame(requests)
        if message is None:
            return 0
        kind, payload = message
        try:
            reply = ("ok", handle(kind, payload, arrays))
        except RunFailure as failure:
            reply = ("error", str(failure), failure.kind)
        except Exception as err:  # noqa: BLE001 - every failure is reported to the parent
            detail = "".join(traceback.format_exception_only(type(err), err)).strip()
            logger.debug("request %s failed:\n%s", kind, traceback.format_exc())
            reply = ("error", detail, "run")
        write_frame(replies, reply)


if __name__ == "__main__":
    status = main()
    # Every reply was flushed as it was written: skip the interpreter's teardown (collecting the
    # imported modules and LLVM's state takes most of a second), so closing a pool of workers is quick.
    sys.stderr.flush()
    os._exit(status)
