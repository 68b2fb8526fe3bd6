"""The CUDA runtime: the device module (CUDA C, compiled through NVRTC) and the host module that
launches its kernels with cupy.

Without cupy or without a GPU, building and reading the source work; calling a function raises a
``TVMError`` that says what is missing.
"""
from __future__ import annotations

import glob
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass

from ..errors import TVMError
from ..target import sm_version
from .tensor_map import TensorMapCache

logger = logging.getLogger(__name__)


def cupy_or_none():
    """The ``cupy`` module when it imports and sees a GPU, else None.

    Returns
    -------
    module or None
        ``cupy``, or None.
    """
    try:
        import cupy
    except ImportError:
        return None
    try:
        return cupy if cupy.cuda.is_available() else None
    except Exception:  # a broken driver installation reports through many exception types
        return None


def gpu_available() -> bool:
    """Whether kernels can be launched here (cupy imports and a CUDA device answers).

    Returns
    -------
    bool
        True with a usable GPU.
    """
    return cupy_or_none() is not None


def _require_cupy():
    cupy = cupy_or_none()
    if cupy is None:
        raise TVMError("running CUDA kernels needs cupy (pip install cupy-cuda13x) and an NVIDIA GPU; none is "
                       "available here. Read the generated code with mod.imported_modules[0].get_source(), or "
                       "build the schedule for 'llvm' to emulate it on the CPU (tensorize.transform.gpu_emulation)")
    return cupy


def cuda_include_dir() -> str | None:
    """The CUDA toolkit's include folder (the one holding ``cuda_fp16.h``), which NVRTC needs for ``mma.h``.

    Looked for under ``$CUDA_HOME``/``$CUDA_PATH``, beside ``nvcc`` (its real path and the path it is
    called by), in ``/usr/local/cuda*`` and in the ``nvidia`` pip packages.

    Returns
    -------
    str or None
        The folder, or None when no CUDA headers are found.

    Examples
    --------
    >>> path = cuda_include_dir()
    >>> path is None or os.path.isfile(os.path.join(path, "cuda_fp16.h"))
    True
    """
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots += [os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), os.path.dirname(os.path.dirname(nvcc))]
    roots += ["/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    candidates = [os.path.join(root, "include") for root in roots if root]
    try:
        import nvidia  # the CUDA wheels (nvidia-cuda-runtime, cuda-toolkit) keep headers in their packages

        for base in getattr(nvidia, "__path__", []):
            candidates += sorted(glob.glob(os.path.join(base, "*", "include")))
    except ImportError:
        pass
    for path in candidates:
        if os.path.isfile(os.path.join(path, "cuda_fp16.h")):
            return path
    return None


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel launch of a host function: its name, grid, block, dynamic shared memory (bytes; a
    kernel above the 48 KB static limit keeps its shared buffers in one ``extern __shared__`` array) and the
    TMA descriptors it takes after its arguments (``tensor_map.TensorMapSpec``, encoded from the arguments at
    the first launch on them)."""

    name: str
    grid: tuple
    block: tuple
    shared_bytes: int = 0
    tensor_maps: tuple = ()


class CUDASourceModule:
    """The device half: CUDA C source, compiled through NVRTC (cupy) on first use."""

    type_key = "cuda"

    def __init__(self, source: str, target):
        self.source, self.target = source, target
        self._module = None
        self._cubin_dir = None  # the cubin of an arch-specific target (sm_90a) lives here while loaded
        self.imported_modules = []

    def get_source(self, fmt: str = "") -> str:
        """The module's CUDA C source.

        Parameters
        ----------
        fmt : str
            Ignored (TVM's format selector).

        Returns
        -------
        str
            The source of all kernels.
        """
        return self.source

    def arch(self) -> str:
        """The GPU architecture to compile for.

        Returns
        -------
        str
            The target's ``arch``, ``"sm_80"`` when it has none.
        """
        return getattr(self.target, "arch", "") or "sm_80"

    def _check_device_arch(self, cupy) -> None:
        wanted = sm_version(self.target)
        device = int(cupy.cuda.Device().compute_capability)
        if wanted > device:
            raise TVMError(f"the target asks for {self.arch()} but the GPU is sm_{device}: build for "
                           f"'cuda -arch=sm_{device}' (or an older architecture)")

    def kernel(self, name: str):
        """The compiled kernel ``name`` (the source is compiled by NVRTC on the first call).

        Parameters
        ----------
        name : str
            A kernel of the source.

        Returns
        -------
        cupy.RawKernel
            The kernel, ready to launch.
        """
        cupy = _require_cupy()
        if self._module is None:
            # cupy adds the current device's architecture itself (a second -arch only draws a warning); a
            # target that asks for a newer one than the device has cannot run there.
            self._check_device_arch(cupy)
            options = self._nvrtc_options()
            if self.arch().endswith("a"):
                self._module = self._compile_arch_specific(cupy, options)
            else:
                self._module = cupy.RawModule(code=self.source, options=tuple(options), backend="nvrtc")
        return self._module.get_function(name)

    @staticmethod
    def _nvrtc_options() -> list:
        options = ["-std=c++17"]
        include = cuda_include_dir()
        if include:
            options.append(f"-I{include}")  # the toolkit's headers (mma.h)
        return options

    def compile_cubin(self, options=None) -> bytes:
        """The source compiled by NVRTC for exactly the target's architecture (no GPU needed).

        Parameters
        ----------
        options : sequence of str, optional
            NVRTC options besides ``--gpu-architecture`` (default: C++17 and the toolkit's headers).

        Returns
        -------
        bytes
            The cubin.

        Raises
        ------
        TVMError
            With NVRTC's log when the source does not compile.
        """
        from cupy_backends.cuda.libs import nvrtc

        prog = nvrtc.createProgram(self.source, "tensorize_kernels.cu", [], [])
        try:
            options = self._nvrtc_options() if options is None else list(options)
            try:
                nvrtc.compileProgram(prog, [f"--gpu-architecture={self.arch()}", *options])
            except nvrtc.NVRTCError as err:
                raise TVMError(f"NVRTC cannot compile the kernels for {self.arch()}:\n"
                               f"{nvrtc.getProgramLog(prog)}") from err
            return nvrtc.getCUBIN(prog)
        finally:
            nvrtc.destroyProgram(prog)

    def _compile_arch_specific(self, cupy, options):
        # cupy compiles for the device's plain architecture (sm_90), which lacks the arch-specific
        # instructions of sm_90a (wgmma); NVRTC is asked for the target's own and the cubin is loaded
        self._cubin_dir = tempfile.TemporaryDirectory(prefix="tensorize_cubin_")
        path = os.path.join(self._cubin_dir.name, "kernels.cubin")
        with open(path, "wb") as f:
            f.write(self.compile_cubin(options))
        return cupy.RawModule(path=path)


class CUDAFunction:
    """A host function: checks its arguments and launches its kernels in order on the current stream.

    A call is kept cheap (kernels of a fraction of a millisecond are launch-bound otherwise): the expected
    shapes are converted once, the kernels are looked up and given their dynamic shared memory once, and the
    TMA descriptors are encoded once per set of arrays."""

    def __init__(self, name, launches, params, device: CUDASourceModule, workspaces=()):
        self.name, self.launches, self.params, self.device = name, launches, params, device
        self.workspaces = list(workspaces)  # (dtype, elements) of the buffers passed between kernels
        self._workspace_arrays = None
        self._tensor_maps = TensorMapCache()
        # (dtype, shape as ints or None for a scalar) per parameter
        self._expected = [(dtype, None if shape is None else tuple(int(s) for s in shape)) for dtype, shape in params]
        self._kernels = None  # [(launch, kernel)] once compiled
        self._cupy = None  # cupy, once a call has found it usable

    def _workspace(self, cupy) -> list:
        if self._workspace_arrays is None:
            self._workspace_arrays = [cupy.empty((max(1, n),), dtype=dtype) for dtype, n in self.workspaces]
        return self._workspace_arrays

    def _arguments(self, args, cupy):
        import numpy as np

        if len(args) != len(self._expected):
            raise TVMError(f"{self.name} takes {len(self.params)} arguments, got {len(args)}")
        out = []
        for i, (arg, (dtype, shape)) in enumerate(zip(args, self._expected)):
            if shape is None:
                out.append(np.dtype(dtype).type(arg))
                continue
            data = getattr(arg, "cupy", arg)
            if not isinstance(data, cupy.ndarray):
                raise TVMError(f"argument {i} of {self.name} must be on the GPU: tvm.nd.array(x, tvm.cuda(0))")
            if data.shape != shape or data.dtype.name != dtype:
                raise TVMError(f"argument {i} of {self.name}: expected {dtype}{list(shape)}, got "
                               f"{data.dtype}{list(data.shape)}")
            out.append(data)
        return out

    def _compiled(self):
        if self._kernels is None:
            kernels = []
            for launch in self.launches:
                kernel = self.device.kernel(launch.name)
                if launch.shared_bytes > 48 * 1024 and kernel.max_dynamic_shared_size_bytes < launch.shared_bytes:
                    kernel.max_dynamic_shared_size_bytes = launch.shared_bytes  # cudaFuncSetAttribute
                kernels.append((launch, kernel))
            self._kernels = kernels
        return self._kernels

    def __call__(self, *args) -> None:
        cupy = self._cupy = self._cupy or _require_cupy()
        arguments = self._arguments(args, cupy) + self._workspace(cupy)
        for launch, kernel in self._compiled():
            kernel_args = tuple(arguments)
            if launch.tensor_maps:
                kernel_args += tuple(self._tensor_maps.arguments(launch.tensor_maps, arguments))
            if launch.shared_bytes:
                kernel(launch.grid, launch.block, kernel_args, shared_mem=launch.shared_bytes)
            else:
                kernel(launch.grid, launch.block, kernel_args)


class CUDAHostModule:
    """The host half of a CUDA build: ``mod["main"](a, b, c)`` launches; ``imported_modules[0]`` is the device
    module (``get_source()`` gives the CUDA C)."""

    type_key = "llvm"

    def __init__(self, functions: dict, device: CUDASourceModule, target):
        self.target = target
        self.imported_modules = [device]
        self._functions = {name: CUDAFunction(name, *spec[:2], device, *spec[2:])
                           for name, spec in functions.items()}

    def __getitem__(self, name: str) -> CUDAFunction:
        if name not in self._functions:
            raise TVMError(f"no function {name!r} in this module; it has {sorted(self._functions)}")
        return self._functions[name]

    def __call__(self, *args) -> None:
        """Call the module's one function (``main``), as ``tvm.build(...)(a, b)`` does."""
        name = "main" if "main" in self._functions else next(iter(self._functions))
        self[name](*args)

    def get_function(self, name: str, query_imports: bool = False) -> CUDAFunction:
        """The host function ``name`` (as ``module[name]``).

        Parameters
        ----------
        name : str
            A function of the module.
        query_imports : bool
            Ignored (TVM's signature).

        Returns
        -------
        CUDAFunction
            The callable that launches its kernels.
        """
        return self[name]

    def launches(self, name: str = "main") -> list:
        """The kernel launches of function ``name`` (name, grid, block).

        Parameters
        ----------
        name : str
            A function of the module.

        Returns
        -------
        list of KernelLaunch
            In launch order.
        """
        return list(self[name].launches)

    def time_evaluator(self, func_name: str, dev=None, number: int = 10, repeat: int = 1, min_repeat_ms: int = 0,
                       **_):
        """Time ``func_name`` with CUDA events: ``f(*args).results`` are seconds per call, one per repeat.

        Parameters
        ----------
        func_name : str
            A function of the module.
        dev : Device, optional
            Ignored (the arguments' device is used).
        number : int
            Calls per repeat (their mean is one result).
        repeat : int
            How many results.
        min_repeat_ms : int
            Ignored.
        **_
            Other keywords of TVM's signature, ignored.

        Returns
        -------
        callable
            ``evaluator(*args) -> BenchmarkResult``; it makes one warm-up call first.
        """
        func = self[func_name]

        def evaluator(*args):
            cupy = _require_cupy()
            from .profiling import BenchmarkResult

            func(*args)  # warm-up (and NVRTC compilation)
            results = []
            for _ in range(repeat):
                start, stop = cupy.cuda.Event(), cupy.cuda.Event()
                start.record()
                for _ in range(number):
                    func(*args)
                stop.record()
                stop.synchronize()
                results.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3 / number)
            return BenchmarkResult(results)

        return evaluator
