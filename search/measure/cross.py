"""Measuring code built for another architecture (AArch64) on a node that declares it.

A build for an AArch64 target writes the shared library (what an ARM node loads natively) and, next to
it, what an emulating node needs: the object code (``<library>.o``) and the functions' signatures
(``<library>.json``, the metadata an exported library carries). A node whose processor is AArch64 loads
the library and times it as the local runner does; any other node declaring the ``arm64`` resource
links the object code with a generated driver and runs it under qemu-user
(``tensorize.runtime.aarch64.Aarch64Runner``), checking the outputs against the reference and timing
with the driver's own clock (under emulation the times only rank candidates roughly).

These functions run in a Ray worker (``ray_executor``), never in the tuning process.
"""
from __future__ import annotations

import json
import logging
import math
import os
import time

import numpy as np

from .inputs import fresh_arguments
from .tasks import RunFailure, TimingConfig, _compare

logger = logging.getLogger(__name__)

__all__ = ["is_cross", "sidecar_paths", "build_cross_artifact", "read_sidecars", "emulated_module",
           "check_and_time_emulated"]

SIDECARS = (".o", ".json")


def is_cross(target) -> bool:
    """Whether code for ``target`` is AArch64 (measured on an ``arm64`` node, natively or under qemu).

    Parameters
    ----------
    target : Target or str
        The target.

    Returns
    -------
    bool
        True for AArch64 targets.

    Examples
    --------
    >>> is_cross("llvm -mtriple=aarch64-linux-gnu -mattr=+neon"), is_cross("llvm -mcpu=haswell")
    (True, False)
    """
    if isinstance(target, str):
        from tensorize.target import Target

        target = Target(target)
    return getattr(target, "arch", "") == "aarch64"


def sidecar_paths(artifact: str) -> tuple[str, str]:
    """The object-code and metadata files that go with the library ``artifact``.

    Parameters
    ----------
    artifact : str
        The shared library's path.

    Returns
    -------
    tuple of str
        ``(object path, metadata path)``.

    Examples
    --------
    >>> sidecar_paths("/tmp/a/c_000001.so")
    ('/tmp/a/c_000001.so.o', '/tmp/a/c_000001.so.json')
    """
    return tuple(artifact + suffix for suffix in SIDECARS)


def build_cross_artifact(mod, target: str, path: str) -> float:
    """Build ``mod`` for the AArch64 ``target``: the library at ``path`` and its two sidecar files.

    Parameters
    ----------
    mod : IRModule
        The scheduled program.
    target : str
        An AArch64 target string.
    path : str
        Where the shared library goes.

    Returns
    -------
    float
        Seconds the build took.
    """
    import tensorize
    from tensorize.runtime.library import metadata_json

    start = time.perf_counter()
    runtime = tensorize.build(mod, target=target)
    tmp = f"{path}.{os.getpid()}.tmp"
    runtime.export_library(tmp)
    os.replace(tmp, path)
    secs = time.perf_counter() - start
    object_path, metadata_path = sidecar_paths(path)
    with open(object_path, "wb") as f:
        f.write(runtime.object_code())
    with open(metadata_path, "w") as f:
        f.write(metadata_json(runtime))
    return secs


def emulated_module(object_code: bytes, metadata: str):
    """A runtime module that ``Aarch64Runner`` can link and run, from the object code and metadata.

    Parameters
    ----------
    object_code : bytes
        The AArch64 object file of the candidate.
    metadata : str
        The JSON the library carries (``tensorize.runtime.library.metadata_json``).

    Returns
    -------
    Module
        With the functions' signatures, the target and the object code (nothing to call here).
    """
    from tensorize.runtime.module import Module
    from tensorize.runtime.signature_json import signature_from_json
    from tensorize.target import Target

    meta = json.loads(metadata)
    functions = {item["name"]: signature_from_json(item) for item in meta["functions"]}
    openmp = b"GOMP_parallel" in object_code  # the driver links libgomp when the kernel calls it
    return Module(meta.get("type_key", "llvm"), functions, target=Target(meta["target"]),
                  sources={"ll": "declare void @GOMP_parallel" if openmp else ""}, object_code=object_code,
                  entry_name=meta.get("entry") or None)


def check_and_time_emulated(object_code: bytes, metadata: str, args: list[np.ndarray], reference: list[np.ndarray],
                            outputs: list[int], tols: list[tuple[float, float]], timing: TimingConfig,
                            cpu: str = "max", emulator: str | None = "auto", timeout_s: float = 60.0) -> list[float]:
    """Run the candidate once under qemu (or natively with ``emulator=None`` on ARM), compare its outputs with
    ``reference``, then time it; seconds per run of each repeat. Raises ``RunFailure``.

    Parameters
    ----------
    object_code, metadata
        The candidate (see ``emulated_module``).
    args, reference, outputs, tols, timing
        As for ``tasks.check_and_time``.
    cpu : str
        The CPU qemu emulates (``"max"``: every feature).
    emulator : str or None
        ``"auto"`` (qemu unless this machine is AArch64), a qemu binary, or None (run directly).
    timeout_s : float
        Seconds one execution may take.

    Returns
    -------
    list of float
        Seconds per call, one per repeat.
    """
    from tensorize.runtime.aarch64 import Aarch64Runner, Aarch64RunError
    from tensorize.errors import TVMError

    module = emulated_module(object_code, metadata)
    name = module.entry_name
    work = fresh_arguments(args, outputs)
    call = [a.item() if a.ndim == 0 else a for a in work]
    with Aarch64Runner(cpu=cpu, emulator=emulator, timeout=timeout_s) as runner:
        try:
            (first,) = runner.time(module, name, *call, number=1, repeat=1)
        except Aarch64RunError as err:
            kind = "crash" if "killed by" in str(err) else "run"
            raise RunFailure(kind, str(err)) from None
        except TVMError as err:  # a missing tool or a bad signature
            raise RunFailure("run", f"{type(err).__name__}: {err}") from None
        for position, index in enumerate(outputs):
            problem = _compare(work[index], reference[position], *tols[position])
            if problem:
                raise RunFailure("wrong_output", f"output {index} differs from the reference: {problem}")
        # enough calls per repeat to last min_repeat_ms (by the check run's time), within the time budget
        number = max(timing.number, math.ceil(timing.min_repeat_ms / 1e3 / max(first, 1e-9)))
        if timing.max_measure_secs and first * number * timing.repeat > timing.max_measure_secs:
            number = max(1, int(timing.max_measure_secs / max(first, 1e-9) / timing.repeat))
        try:
            return [float(s) for s in runner.time(module, name, *call, number=number, repeat=timing.repeat)]
        except Aarch64RunError as err:
            raise RunFailure("run", str(err)) from None


def read_sidecars(artifact: str) -> tuple[bytes, str] | None:
    """The object code and metadata written next to ``artifact`` (None when it has none).

    Parameters
    ----------
    artifact : str
        The shared library's path.

    Returns
    -------
    tuple or None
        ``(object code, metadata JSON)``.
    """
    object_path, metadata_path = sidecar_paths(artifact)
    if not (os.path.exists(object_path) and os.path.exists(metadata_path)):
        return None
    with open(object_path, "rb") as f, open(metadata_path) as g:
        return f.read(), g.read()
