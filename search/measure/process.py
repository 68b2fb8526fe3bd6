"""A child Python process that does measurement work (``search.measure.worker``) and reports back.

The parent sends ``(kind, payload)`` requests and receives ``("ok", value)`` or ``("error", message)``
replies, each a length-prefixed pickle frame over the child's stdin/stdout (both ends are this
package's code; nothing from outside is unpickled). The child's stderr goes to a log file, so when
the child dies (an LLVM abort, a segfault) the parent reports the tail of what it wrote.

>>> with WorkerProcess("doc") as worker:                     # doctest: +SKIP
...     worker.call("ping", None, timeout=30)
('ok', 'pong')
"""
from __future__ import annotations

import logging
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["WorkerProcess", "WORKER_CPUS_ENV", "read_frame", "write_frame", "project_root"]

_HEADER = struct.Struct("<Q")
WORKER_CPUS_ENV = "TENSORIZE_WORKER_CPUS"  # comma-separated CPUs a worker runs on (LocalBuilder(cpus=...))


def write_frame(stream, message: Any) -> None:
    """Write ``message`` to ``stream`` as one length-prefixed pickle frame."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exactly(stream, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(stream) -> Any:
    """The next message, or ``None`` at end of stream (the other side is gone)."""
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    data = _read_exactly(stream, _HEADER.unpack(header)[0])
    return None if data is None else pickle.loads(data)


def project_root() -> str:
    """The folder holding the ``search`` and ``tensorize`` packages (put on the child's ``PYTHONPATH``)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class WorkerProcess:
    """One child process running ``python -m search.measure.worker``; started on first use, restarted by
    the owner after it dies or is killed (``restart()``)."""

    def __init__(self, name: str, env: dict | None = None, log_dir: str | None = None):
        self.name = name
        self._env = env or {}
        self._log_dir = log_dir
        self._proc: subprocess.Popen | None = None
        self._log_path: str | None = None
        self._log_mark = 0
        self._ready = False  # the child answered since it was (re)started
        self.started_at: float | None = None
        self.restarts = 0

    # -- life cycle ---------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """Whether the worker process is running."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the worker process (no-op when running)."""
        if self.alive:
            return
        self._discard()
        fd, self._log_path = tempfile.mkstemp(prefix=f"{self.name}-", suffix=".log", dir=self._log_dir)
        os.close(fd)
        env = dict(os.environ, **self._env)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [project_root(), env.get("PYTHONPATH", "")]))
        with open(self._log_path, "ab") as log:
            self._proc = subprocess.Popen([sys.executable, "-m", "search.measure.worker"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=log, env=env, close_fds=True)
        self._log_mark = 0
        self._ready = False
        logger.debug("started %s (pid %d)", self.name, self._proc.pid)

    def restart(self) -> None:
        """Stop the worker (if running) and start a fresh one."""
        self.kill()
        self.restarts += 1
        self.start()

    def kill(self) -> None:
        """Stop the child now (SIGKILL) and reap it."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            try:
                self._proc.send_signal(signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def close(self) -> None:
        """Ask the child to exit (end of its input), kill it if it does not, and remove its log."""
        if self._proc is not None and self._proc.poll() is None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        self._discard()
        self._proc = None

    def _discard(self) -> None:
        if self._log_path and os.path.exists(self._log_path):
            os.unlink(self._log_path)
        self._log_path = None

    def __enter__(self) -> "WorkerProcess":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- requests -----------------------------------------------------------------------------
    def fileno(self) -> int:
        """The file descriptor of the worker's replies (for ``select``)."""
        return self._proc.stdout.fileno()

    def send(self, kind: str, payload: Any) -> bool:
        """Send one request; False when the child is gone. A payload that does not pickle raises (before
        anything is written)."""
        self.start()
        self._log_mark = os.path.getsize(self._log_path) if self._log_path else 0
        self.started_at = time.monotonic()
        try:
            write_frame(self._proc.stdin, (kind, payload))
            return True
        except (BrokenPipeError, OSError):
            return False

    def receive(self) -> tuple:
        """The reply to the last request: ``("ok", value)``, ``("error", message)``, or ``("dead", detail)``
        when the child died (the detail names the signal or exit code and the tail of its stderr)."""
        try:
            reply = read_frame(self._proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError):
            reply = None
        self.started_at = None
        if reply is None:
            return ("dead", self.death_report())
        return reply

    def wait_readable(self, timeout: float) -> bool:
        """Whether a reply is ready within ``timeout`` seconds."""
        ready, _, _ = select.select([self._proc.stdout], [], [], max(timeout, 0.0))
        return bool(ready)

    def wait_ready(self, timeout: float = 300.0) -> tuple:
        """Start the child if needed and wait until it answers (its imports take a second or more, far
        longer on a loaded machine); ``("ok", "pong")``, or the failed reply of ``call``. A request's
        timeout then counts its own work only, not the start of a freshly (re)started process."""
        if self.alive and self._ready:
            return ("ok", "pong")
        reply = self._exchange("ping", None, timeout)
        self._ready = reply[0] == "ok"
        return reply

    def call(self, kind: str, payload: Any, timeout: float) -> tuple:
        """Send a request and wait for its reply; ``("timeout", detail)`` (the child is killed) after
        ``timeout`` seconds, counted from when the child is ready (``wait_ready``)."""
        ready = self.wait_ready()
        if ready[0] != "ok":
            return ready
        return self._exchange(kind, payload, timeout)

    def _exchange(self, kind: str, payload: Any, timeout: float) -> tuple:
        if not self.send(kind, payload):
            return ("dead", self.death_report())
        if not self.wait_readable(timeout):
            self.kill()
            return ("timeout", f"no result after {timeout:g} s; the process was stopped")
        return self.receive()

    def death_report(self) -> str:
        """How the child ended (signal or exit code) and the last lines it wrote to stderr."""
        if self._proc is None:
            return "the worker process was not running"
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self._proc.returncode
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        tail = self.stderr_tail()
        return f"the worker process {how}" + (f"; its stderr ends with:\n{tail}" if tail else "")

    def stderr_tail(self, limit: int = 2000) -> str:
        """What the child wrote to stderr since the current request started (the last ``limit`` characters)."""
        if not self._log_path or not os.path.exists(self._log_path):
            return ""
        with open(self._log_path, "rb") as log:
            log.seek(self._log_mark)
            text = log.read().decode("utf-8", "replace")
        return text[-limit:].strip()
