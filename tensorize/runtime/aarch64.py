"""Run functions built for AArch64 on numpy inputs: under qemu-user on other hosts, natively on ARM.

A module built for ``llvm -mtriple=aarch64-linux-gnu ...`` cannot run in this process. The runner
links its object code with a small generated C driver (``aarch64_driver``) into a static
executable, runs that (under ``qemu-aarch64-static -cpu <cpu>`` unless the host is AArch64), and
copies the buffers back, so a call fills output arrays like a local call does.

Example (needs qemu-user and an AArch64 cross toolchain, see ``tools_available``)::

    rt = tvm.build(sch.mod, target="llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod")
    run_aarch64(rt, "main", a, b, c)              # c now holds the result
    runner = Aarch64Runner(cpu="cortex-a72")       # a CPU model without dotprod
    runner.run(rt, "main", a, b, c)               # raises Aarch64IllegalInstruction

``Aarch64Runner`` is the object the search's ARM nodes use: it caches one executable per
(module, function), checks arguments against the function's signature before anything runs,
and ``time(...)`` measures with the driver's own clock (meaningful on real ARM hardware; under
emulation it only ranks candidates roughly).

Needed tools (Debian/Ubuntu: ``apt-get install qemu-user-static gcc-aarch64-linux-gnu
libc6-dev-arm64-cross``): the cross compiler ``aarch64-linux-gnu-gcc``, ``aarch64-linux-gnu-objcopy``
and, on non-ARM hosts, ``qemu-aarch64-static`` (or ``qemu-aarch64``).
"""
from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import TVMAttributeError, TVMError, TVMTypeError, TVMValueError
from .aarch64_driver import KERNEL_PREFIX, driver_source, pack_scalar
from .ndarray import Tensor
from .signature import BufferParam, FunctionSignature

logger = logging.getLogger(__name__)

INSTALL_HINT = "install Debian's qemu-user-static gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
DEFAULT_CC = "aarch64-linux-gnu-gcc"
DEFAULT_EMULATORS = ("qemu-aarch64-static", "qemu-aarch64")


class Aarch64ToolError(TVMError):
    """A tool the runner needs (cross compiler, objcopy, qemu) is missing or failed."""


class Aarch64RunError(TVMError):
    """The AArch64 program failed: the kernel returned an error, crashed, or timed out."""


class Aarch64IllegalInstruction(Aarch64RunError):
    """The code used an instruction the (emulated) CPU does not have (SIGILL)."""


def host_is_aarch64() -> bool:
    """Whether this process runs on AArch64 (no emulator needed).

    Returns
    -------
    bool
        True on AArch64.
    """
    return platform.machine().lower() in ("aarch64", "arm64")


def find_emulator() -> str | None:
    """The qemu-user binary for AArch64 on this host, or None.

    Returns
    -------
    str or None
        The path of ``qemu-aarch64`` (or its static variant).
    """
    for name in DEFAULT_EMULATORS:
        path = shutil.which(name)
        if path:
            return path
    return None


def missing_tools(cc: str = DEFAULT_CC) -> list[str]:
    """Names of the tools the runner needs that are not on the PATH (empty when all are there).

    Parameters
    ----------
    cc : str
        The cross C compiler.

    Returns
    -------
    list of str
        The missing tools.
    """
    missing = [tool for tool in (cc, _objcopy_for(cc)) if not shutil.which(tool)]
    if not host_is_aarch64() and find_emulator() is None:
        missing.append(DEFAULT_EMULATORS[0])
    return missing


def tools_available(cc: str = DEFAULT_CC) -> bool:
    """Whether AArch64 code can be linked and run here (used by tests to skip).

    Parameters
    ----------
    cc : str
        The cross C compiler.

    Returns
    -------
    bool
        True when nothing is missing.
    """
    return not missing_tools(cc)


def _objcopy_for(cc: str) -> str:
    prefix = cc[: -len("gcc")] if cc.endswith("gcc") else "aarch64-linux-gnu-"
    return prefix + "objcopy"


@dataclass
class RunResult:
    """What one execution gave: per-batch mean times in seconds (empty without timing), and stdout/stderr."""

    times: list
    stdout: str
    stderr: str


class Aarch64Runner:
    """Links and runs AArch64 modules (see the module docstring).

    Parameters
    ----------
    cpu: the qemu CPU model: ``"max"`` (all features; when the module's target fixes the SVE
        vector length with ``-msve-vector-bits=N``, ``max`` becomes ``max,sveN=on``),
        ``"max,sve256=on"``, ``"neoverse-n1"``, ``"cortex-a72"`` (no dotprod: a negative test), ...
        Ignored when the host is AArch64 and runs the code natively.
    emulator: path or name of qemu-user; ``"auto"`` picks qemu on non-ARM hosts and none on ARM;
        ``None`` runs the executable directly.
    cc: the cross compiler used to link (``aarch64-linux-gnu-gcc``).
    timeout: seconds one execution may take before it is killed.
    num_threads: threads for parallel loops (OpenMP), through ``TENSORIZE_NUM_THREADS``.
    workdir: where executables and data files go (a private temporary folder by default).

    Example
    -------
    Example (needs qemu-user and an AArch64 cross toolchain)::

        runner = Aarch64Runner(cpu="max,sve256=on", timeout=30)
        runner.run(rt_mod, "main", a, b, c)
        runner.time(rt_mod, "main", a, b, c, number=10, repeat=3)   # [seconds per call, ...]
    """

    def __init__(self, cpu: str = "max", emulator: str | None = "auto", cc: str = DEFAULT_CC,
                 timeout: float = 60.0, num_threads: int = 1, workdir: str | None = None):
        if not isinstance(cpu, str) or not cpu:
            raise TVMValueError(f"cpu must be a qemu CPU model name such as 'max' or 'cortex-a72', got {cpu!r}")
        if timeout <= 0:
            raise TVMValueError(f"timeout must be positive (seconds), got {timeout}")
        if num_threads < 1:
            raise TVMValueError(f"num_threads must be at least 1, got {num_threads}")
        self.cpu, self.cc, self.timeout, self.num_threads = cpu, cc, float(timeout), int(num_threads)
        self.emulator = emulator
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="tensorize-aarch64-")
        os.makedirs(self.workdir, exist_ok=True)
        self._executables: dict[str, str] = {}
        self._lock = threading.Lock()

    # -- tools ------------------------------------------------------------------------------
    def check_tools(self) -> None:
        """Raise ``Aarch64ToolError`` naming each missing tool and how to install it."""
        missing = [tool for tool in (self.cc, _objcopy_for(self.cc)) if not shutil.which(tool)]
        if self._emulator_command() is None and self.emulator == "auto" and not host_is_aarch64():
            missing.append(DEFAULT_EMULATORS[0])
        elif self.emulator not in ("auto", None) and not shutil.which(self.emulator):
            missing.append(self.emulator)
        if missing:
            raise Aarch64ToolError(f"running AArch64 code needs {', '.join(missing)}, not found on the PATH; "
                                   f"{INSTALL_HINT}")

    def _emulator_command(self) -> str | None:
        if self.emulator == "auto":
            return None if host_is_aarch64() else find_emulator()
        return self.emulator

    # -- building ---------------------------------------------------------------------------
    def executable(self, rt_mod, func_name: str) -> str:
        """Path of the static executable that runs ``func_name`` of ``rt_mod`` (built once, cached).

        Parameters
        ----------
        rt_mod : Module
            An AArch64 runtime module.
        func_name : str
            The function's name.

        Returns
        -------
        str
            The executable's path.
        """
        signature = _signature_of(rt_mod, func_name)
        self.check_tools()
        object_code = rt_mod.object_code()
        openmp = "GOMP_parallel" in rt_mod.get_source("ll")
        key = hashlib.sha1(object_code + signature.name.encode() + (b"omp" if openmp else b"")).hexdigest()[:16]
        with self._lock:
            path = self._executables.get(key)
            if path and os.path.exists(path):
                return path
            path = self._link(object_code, rt_mod, signature, key, openmp)
            self._executables[key] = path
            return path

    def _link(self, object_code: bytes, rt_mod, signature: FunctionSignature, key: str, openmp: bool) -> str:
        folder = os.path.join(self.workdir, key)
        os.makedirs(folder, exist_ok=True)
        kernel_o = os.path.join(folder, "kernel.o")
        with open(kernel_o, "wb") as f:
            f.write(object_code)
        # Rename every compiled function so none collides with the driver's main or libc.
        renames = []
        for name in _function_names(rt_mod):
            renames += ["--redefine-sym", f"{name}={KERNEL_PREFIX}{name}"]
        _run_tool([_objcopy_for(self.cc), *renames, kernel_o], "renaming the kernel symbols")
        driver_c = os.path.join(folder, "driver.c")
        with open(driver_c, "w") as f:
            f.write(driver_source(signature, KERNEL_PREFIX + signature.name))
        exe = os.path.join(folder, "run")
        command = [self.cc, "-O2", "-static", "-o", exe, driver_c, kernel_o, "-lm"]
        if openmp:
            command[1:1] = ["-fopenmp"]
            command.append("-lpthread")
        _run_tool(command, "linking the AArch64 executable")
        logger.debug("linked %s for %s", exe, signature.name)
        return exe

    # -- running ----------------------------------------------------------------------------
    def run(self, rt_mod, func_name: str, *args) -> None:
        """Run ``func_name`` on ``args`` (numpy arrays, ``tvm.nd.array`` tensors, scalars) and write
        the results back into the array arguments, like ``rt_mod[func_name](*args)`` on the host.

        Parameters
        ----------
        rt_mod : Module
            An AArch64 runtime module.
        func_name : str
            The function's name.
        *args : numpy.ndarray, Tensor or scalar
            The arguments.
        """
        self._execute(rt_mod, func_name, args, number=1, repeat=0)

    def time(self, rt_mod, func_name: str, *args, number: int = 10, repeat: int = 3) -> list:
        """Seconds per call of ``func_name``, one mean per batch of ``number`` calls (``repeat`` batches).
        The arrays receive the result of the first call.

        Parameters
        ----------
        rt_mod : Module
            An AArch64 runtime module.
        func_name : str
            The function's name.
        *args : numpy.ndarray, Tensor or scalar
            The arguments.
        number : int
            Calls per batch.
        repeat : int
            Batches.

        Returns
        -------
        list of float
            Seconds per call, one per batch.
        """
        if number < 1 or repeat < 1:
            raise TVMValueError(f"number and repeat must be at least 1, got number={number}, repeat={repeat}")
        return self._execute(rt_mod, func_name, args, number=number, repeat=repeat).times

    def _execute(self, rt_mod, func_name: str, args: Sequence, number: int, repeat: int) -> RunResult:
        signature = _signature_of(rt_mod, func_name)
        c_args, finish, arrays = signature.bind(list(args))  # checks count, dtypes and shapes first
        _check_transferable(signature, args)
        exe = self.executable(rt_mod, func_name)
        payload = _pack_inputs(signature, c_args, arrays)
        with tempfile.TemporaryDirectory(dir=self.workdir) as tmp:
            in_path, out_path = os.path.join(tmp, "in.bin"), os.path.join(tmp, "out.bin")
            with open(in_path, "wb") as f:
                f.write(payload)
            command = [exe, in_path, out_path, str(number), str(repeat)]
            emulator = self._emulator_command()
            cpu = self._cpu_for(rt_mod)
            if emulator is not None:
                command = [emulator, "-cpu", cpu, *command]
            env = dict(os.environ, TENSORIZE_NUM_THREADS=str(self.num_threads), OMP_NUM_THREADS=str(self.num_threads))
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout, env=env)
            except subprocess.TimeoutExpired:
                raise Aarch64RunError(f"{signature.name} did not finish within {self.timeout:g} s under "
                                      f"{' '.join(command[:3])}; raise Aarch64Runner(timeout=...) or shrink the "
                                      "workload") from None
            except OSError as err:
                raise Aarch64ToolError(f"cannot start {command[0]}: {err}; {INSTALL_HINT}") from None
            self._raise_for(result, signature.name, rt_mod, cpu if emulator else "native")
            with open(out_path, "rb") as f:
                data = f.read()
        _unpack_outputs(data, arrays, signature.name)
        finish()
        times = [float(line.split()[1]) for line in result.stdout.splitlines() if line.startswith("time ")]
        return RunResult(times, result.stdout, result.stderr)

    def _cpu_for(self, rt_mod) -> str:
        bits = _sve_vector_bits(getattr(rt_mod, "target", None))
        if self.cpu == "max" and bits:
            return f"max,sve{bits}=on"
        return self.cpu

    def _raise_for(self, result: subprocess.CompletedProcess, name: str, rt_mod, cpu: str) -> None:
        code = result.returncode
        if code == 0:
            return
        stderr = result.stderr.strip()
        if code == 3:
            raise Aarch64RunError(f"{name} returned an error: {stderr}")
        if code < 0 or code >= 128:
            number = -code if code < 0 else code - 128
            try:
                signame = signal.Signals(number).name
            except ValueError:
                signame = f"signal {number}"
            target = getattr(rt_mod, "target", None)
            features = ",".join(getattr(target, "mattr", []) or []) or "none"
            if number == signal.SIGILL:
                raise Aarch64IllegalInstruction(
                    f"{name} executed an illegal instruction (SIGILL) on CPU {cpu!r}: the code needs a feature "
                    f"this CPU lacks (the module was built with -mattr={features}); run on a CPU that has it "
                    f"(qemu -cpu max) or build for this CPU's features")
            raise Aarch64RunError(f"{name} was killed by {signame} on CPU {cpu!r} (an out-of-bounds access or "
                                  f"a code generation bug); stderr: {stderr or '(empty)'}")
        raise Aarch64RunError(f"running {name} failed with exit code {code}: {stderr or '(no message)'}")

    # -- cleanup ----------------------------------------------------------------------------
    def close(self) -> None:
        """Delete the executables (only the temporary folder the runner made itself)."""
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        self._executables.clear()

    def __enter__(self) -> "Aarch64Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Aarch64Runner(cpu={self.cpu!r}, emulator={self.emulator!r}, timeout={self.timeout:g})"


_DEFAULT_RUNNERS: dict[tuple, Aarch64Runner] = {}


def run_aarch64(rt_mod, func_name: str, *args, cpu: str = "max", timeout: float = 60.0) -> None:
    """Run ``func_name`` of an AArch64 module on ``args``, filling the output arrays.

    Parameters
    ----------
    rt_mod : Module
        An AArch64 runtime module.
    func_name : str
        The function's name.
    *args : numpy.ndarray, Tensor or scalar
        The arguments.
    cpu : str
        The CPU qemu emulates.
    timeout : float
        Seconds before the run is stopped.

    Examples
    --------
    Example (needs qemu-user and an AArch64 cross toolchain)::

        rt = tvm.build(func, target="llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod")
        run_aarch64(rt, "main", a, b, c)
    """
    key = (cpu, float(timeout))
    runner = _DEFAULT_RUNNERS.get(key)
    if runner is None:
        runner = _DEFAULT_RUNNERS[key] = Aarch64Runner(cpu=cpu, timeout=timeout)
    runner.run(rt_mod, func_name, *args)


# -- helpers --------------------------------------------------------------------------------------
def _signature_of(rt_mod, func_name: str) -> FunctionSignature:
    signatures = getattr(rt_mod, "_signatures", None)
    if signatures is None:
        raise TVMTypeError(f"expected a runtime module from tvm.build, got {type(rt_mod).__name__}")
    target = getattr(rt_mod, "target", None)
    arch = getattr(target, "arch", None)
    if arch != "aarch64":
        raise TVMError(f"the module was built for {target} ({arch}), not AArch64; build it with a target such as "
                       "'llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod'")
    if func_name == "__tvm_main__":
        func_name = rt_mod.entry_name
    if func_name not in signatures:
        raise TVMAttributeError(f"module has no function {func_name!r}; it has {sorted(signatures)}")
    return signatures[func_name]


def _check_transferable(signature: FunctionSignature, args: Sequence) -> None:
    """Only values can cross into the AArch64 process: no host pointers, no strided views."""
    for param, arg in zip(signature.params, args):
        if not isinstance(param, BufferParam):
            if param.dtype == "handle":
                raise TVMTypeError(f"{signature.describe()}: parameter {param.name} is a handle (a host address), "
                                "which means nothing in the AArch64 process; declare it as a buffer instead")
            continue
        array = arg._data if isinstance(arg, Tensor) else arg  # noqa: SLF001 - the runtime's own storage
        if isinstance(array, np.ndarray) and not array.flags.c_contiguous:
            raise TVMValueError(f"{signature.describe()}: argument {param.name} is a strided view; the AArch64 runner "
                             "copies whole arrays, so pass np.ascontiguousarray(x)")


def _function_names(rt_mod) -> list[str]:
    return list(rt_mod._signatures)  # noqa: SLF001 - the module's own table


def _pack_inputs(signature: FunctionSignature, c_args: list, arrays: list) -> bytes:
    parts: list[bytes] = []
    buffers = iter(arrays)
    for param, value in zip(signature.params, c_args):
        if isinstance(param, BufferParam):
            array = next(buffers)
            data = np.ascontiguousarray(array).tobytes()
            parts += [np.uint64(len(data)).tobytes(), data]
        else:
            parts.append(pack_scalar(param.dtype, value))
    for var, value in zip(signature.implicit, c_args[len(signature.params):]):
        parts.append(pack_scalar(var.dtype, value))
    return b"".join(parts)


def _unpack_outputs(data: bytes, arrays: list, name: str) -> None:
    offset = 0
    for array in arrays:
        size = array.nbytes
        if offset + size > len(data):
            raise Aarch64RunError(f"{name}: the driver wrote {len(data)} bytes, expected at least {offset + size}")
        view = np.frombuffer(data, dtype=array.dtype, count=array.size, offset=offset).reshape(array.shape)
        np.copyto(array, view)
        offset += size


def _sve_vector_bits(target) -> int | None:
    if target is None:
        return None
    value = getattr(target, "attrs", {}).get("msve-vector-bits")
    try:
        return int(value) if value else None
    except (TypeError, ValueError):
        return None


def _run_tool(command: list, what: str) -> None:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise Aarch64ToolError(f"{what} needs {command[0]}, not found; {INSTALL_HINT}") from None
    if result.returncode != 0:
        raise Aarch64ToolError(f"{what} failed: `{' '.join(command)}`\n{result.stderr.strip()}")


__all__ = ["Aarch64Runner", "Aarch64RunError", "Aarch64IllegalInstruction", "Aarch64ToolError", "RunResult",
           "run_aarch64", "tools_available", "missing_tools", "find_emulator", "INSTALL_HINT"]
