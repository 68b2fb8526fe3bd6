"""Runtime modules: what ``tvm.build`` returns.

A ``Module`` holds compiled functions by name. It is callable (runs the entry function), indexable
(``mod["main"]`` is a ``PackedFunc``), and keeps its sources (``get_source("ll")``,
``get_source("asm")``) and its object code (``export_library("k.so")``).

>>> mod = tvm.build(matmul(), target="llvm")
>>> a, b = tvm.nd.array(np.ones((16, 16), "float32")), tvm.nd.array(np.ones((16, 16), "float32"))
>>> c = tvm.nd.empty((16, 16), "float32")
>>> mod(a, b, c)
>>> mod["main"](a, b, c)
>>> float(c.numpy()[0, 0])
16.0
"""
from __future__ import annotations

import ctypes
import logging
import os
import shutil
import subprocess
import tempfile
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import TVMAttributeError, TVMError, TVMValueError
from .ndarray import Tensor
from .signature import FunctionSignature

logger = logging.getLogger(__name__)


class PackedFunc:
    """A callable compiled function. Arguments are checked against the function's signature
    (``TypeError``/``ValueError`` naming the parameter) before the native code runs."""

    def __init__(self, name: str, signature: FunctionSignature, address: int | None, module: "Module"):
        self.name, self.signature, self.address, self.module = name, signature, address, module
        self._cfunc = None
        self._last = None  # (the arrays of the last call, its prepared run, the numpy arrays' layouts)
        if address:
            prototype = ctypes.CFUNCTYPE(ctypes.c_int32, *signature.c_argtypes)
            self._cfunc = prototype(address)

    def prepare(self, *args) -> Callable[[], None]:
        """Check and convert ``args`` once; return a no-argument function that runs the code
        (what ``time_evaluator`` repeats, so the checks stay out of the measurement).

        Parameters
        ----------
        *args : numpy.ndarray, Tensor or scalar
            The arguments.

        Returns
        -------
        callable
            Runs the function on the prepared arguments.
        """
        if self._cfunc is None:
            raise TVMError(f"function {self.name!r} was compiled for {self.module.target} and cannot run in this "
                           "process; use export_library() and run it on a matching machine")
        if self.module.requires_amx:  # the OS grants the tile registers on request (once per process)
            from .amx import request_amx_permission

            request_amx_permission()  # first: its error names AMX and the kernel's answer
        if self.module.features:
            self.module.check_host_features(self.name)
        c_args, finish, keep = self.signature.bind(args)
        cfunc, module = self._cfunc, self.module

        def run() -> None:
            code = cfunc(*c_args)
            if code != 0:
                raise TVMError(module.error_message(code, self.name))
            finish()

        run.keep_alive = keep  # type: ignore[attr-defined]
        run.copies = finish.copies  # type: ignore[attr-defined] - misaligned numpy inputs run on copies made here
        return run

    def __call__(self, *args) -> None:
        # Calling again with the very same arrays (a benchmark loop, a model's layers) reuses the checked
        # and converted arguments: a Tensor's storage never changes, and a numpy array's cannot move while the
        # cache holds it (resize refuses); its shape, strides and dtype can be reassigned, so they are compared.
        last = self._last
        if last is not None and len(last[0]) == len(args) and all(a is b for a, b in zip(last[0], args)) \
                and all(a.shape == s and a.strides == st and a.dtype == d for a, s, st, d in last[2]):
            last[1]()
            return
        run = self.prepare(*args)
        if args and all(type(a) is Tensor or type(a) is np.ndarray for a in args) and not run.copies:
            self._last = (args, run, [(a, a.shape, a.strides, a.dtype) for a in args if type(a) is np.ndarray])
        run()

    def __repr__(self) -> str:
        return f"ffi.Function({self.signature.describe()}, {hex(self.address or 0)})"


class Module:
    """A compiled module (TVM's ``runtime.Module``).

    Parameters are filled by code generators: ``functions`` maps names to signatures;
    ``resolve(name)`` gives a function's address (None for code that cannot run here); ``sources``
    maps formats (``"ll"``, ``"asm"``) to text or to a function producing it; ``object_code`` is an
    object file (bytes) for ``export_library``.
    """

    def __init__(self, type_key: str, functions: Mapping[str, FunctionSignature], target: Any = None,
                 resolve: Callable[[str], int | None] | None = None, sources: Mapping[str, Any] | None = None,
                 object_code: Callable[[], bytes] | bytes | None = None, entry_name: str | None = None,
                 error_message: Callable[[int], str] | None = None, keep_alive: Any = None):
        self.type_key = type_key
        self.target = target
        self._signatures = dict(functions)
        self._resolve = resolve or (lambda name: None)
        self._sources = dict(sources or {})
        self._object_code = object_code
        self._error_message = error_message
        self._keep_alive = keep_alive
        self._funcs: dict[str, PackedFunc] = {}
        self.imported_modules: list[Module] = []
        self.requires_amx = False  # its code uses AMX tiles: runtime.amx asks the OS before the first call
        self.features: list[str] = []  # instruction-set features its code was built for (checked before a call)
        self._host_checked = False
        names = list(self._signatures)
        self.entry_name = entry_name or ("main" if "main" in self._signatures else (names[0] if names else ""))

    # -- functions --------------------------------------------------------------------------
    def get_function(self, name: str, query_imports: bool = False) -> PackedFunc:
        """The function ``name`` (``"__tvm_main__"`` is the entry function).

        Parameters
        ----------
        name : str
            The function's name.
        query_imports : bool
            Also look in imported modules.

        Returns
        -------
        PackedFunc
            The function.
        """
        if name == "__tvm_main__":
            name = self.entry_name
        if name in self._funcs:
            return self._funcs[name]
        if name in self._signatures:
            func = PackedFunc(name, self._signatures[name], self._resolve(name), self)
            self._funcs[name] = func
            return func
        if query_imports:
            for imported in self.imported_modules:
                if imported.implements_function(name):
                    return imported.get_function(name)
        raise TVMAttributeError(f"module has no function {name!r}; it has {sorted(self._signatures)}")

    def check_host_features(self, name: str) -> None:
        """Raise ``TVMError`` when this CPU lacks an instruction-set feature the code was built for
        (running it would kill the process with an illegal instruction); checked once per module.

        Parameters
        ----------
        name : str
            The function about to run (named in the error).
        """
        if self._host_checked:
            return
        from ..target.llvm import host_cpu, host_lacks

        missing = host_lacks(self.features)
        if missing:
            raise TVMError(f"function {name!r} was built for {self.target}, whose code uses CPU features this "
                           f"CPU ({host_cpu()[0]}) lacks: {', '.join(missing)}; running it would die with an "
                           "illegal instruction (SIGILL). Build it for this CPU (target 'llvm -mcpu=native') or "
                           "run it on a CPU that has them")
        self._host_checked = True

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        """Whether the module (or, with ``query_imports``, an imported one) has function ``name``.

        Parameters
        ----------
        name : str
            The function's name.
        query_imports : bool
            Also look in imported modules.

        Returns
        -------
        bool
            True when it does.
        """
        if name in self._signatures or (name == "__tvm_main__" and self.entry_name):
            return True
        return query_imports and any(m.implements_function(name, True) for m in self.imported_modules)

    def __getitem__(self, name: str) -> PackedFunc:
        return self.get_function(name, query_imports=True)

    def __contains__(self, name: str) -> bool:
        return self.implements_function(name, query_imports=True)

    def __call__(self, *args) -> None:
        if not self.entry_name:
            raise TVMError("the module has no functions to call")
        self.get_function(self.entry_name)(*args)

    @property
    def function_names(self) -> list[str]:
        """The names of the module's functions.

        Returns
        -------
        list of str
            The names.
        """
        return list(self._signatures)

    def import_module(self, other: "Module") -> None:
        """Import ``other`` into this module (TVM's module tree).

        Parameters
        ----------
        other : Module
            The module.
        """
        self.imported_modules.append(other)

    def error_message(self, code: int, name: str) -> str:
        """The message for a failed call of ``name`` that returned error ``code``.

        Parameters
        ----------
        code : int
            The error code.
        name : str
            The function's name.

        Returns
        -------
        str
            The message.
        """
        detail = self._error_message(code) if self._error_message else ""
        return f"{name} failed (error code {code}){': ' + detail if detail else ''}"

    # -- sources and export -----------------------------------------------------------------
    def get_source(self, fmt: str = "") -> str:
        """Generated code as text: ``"ll"`` (LLVM IR), ``"asm"`` (assembly); default the first one.

        Parameters
        ----------
        fmt : str
            ``"ll"`` or ``"asm"``.

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> lib = tvm.build(matmul(), target="llvm")
        >>> "define" in lib.get_source("ll")
        True
        """
        if not fmt:
            fmt = next(iter(self._sources), "")
        aliases = {"llvm": "ll", "s": "asm", "cu": "cuda"}
        source = self._sources.get(aliases.get(fmt, fmt))
        if source is None:
            raise TVMValueError(f"no {fmt!r} source in this {self.type_key} module; formats: {sorted(self._sources)}")
        if callable(source):
            source = source()
            self._sources[aliases.get(fmt, fmt)] = source
        return source

    def object_code(self) -> bytes:
        """The module's object file (ELF on Linux).

        Returns
        -------
        bytes
            The object file.
        """
        if self._object_code is None:
            raise TVMError(f"a {self.type_key} module has no object code to export")
        if callable(self._object_code):
            self._object_code = self._object_code()
        return self._object_code

    def save(self, path: str, fmt: str = "") -> None:
        """Write the object file (``.o``), LLVM IR (``.ll``) or assembly (``.s``) to ``path``.

        Parameters
        ----------
        path : str
            The file.
        fmt : str
            The format (default: from the suffix).
        """
        fmt = fmt or os.path.splitext(path)[1].lstrip(".")
        if fmt in ("o", "obj"):
            with open(path, "wb") as f:
                f.write(self.object_code())
        else:
            with open(path, "w") as f:
                f.write(self.get_source({"s": "asm"}.get(fmt, fmt)))

    def export_library(self, path: str, fcompile: Callable | None = None, cc: str | None = None, **kwargs) -> None:
        """Write a shared library (``.so``, linked with the system C compiler) or an object file (``.o``).

        The library carries the functions' signatures, so ``tvm.runtime.load_module(path)`` loads it back
        as a callable module in any process.

        For cross-compiled modules pass ``cc="aarch64-linux-gnu-gcc"`` to link a shared library.

        Parameters
        ----------
        path : str
            The file.
        fcompile : callable, optional
            A compile function in TVM's form.
        cc : str, optional
            The C compiler.
        **kwargs
            Passed to ``fcompile``.
        """
        if path.endswith((".o", ".obj")):
            self.save(path, "o")
            return
        compiler = cc or _default_compiler(self.target)
        with tempfile.TemporaryDirectory() as tmp:
            obj = os.path.join(tmp, "lib.o")
            self.save(obj, "o")
            objects = [obj, os.path.join(tmp, "metadata.o")]
            with open(objects[1], "wb") as f:  # the signatures, for load_module (see runtime.library)
                from .library_metadata import metadata_object

                f.write(metadata_object(self))
            if fcompile is not None:
                fcompile(path, objects, **kwargs)
                return
            command = [compiler, "-shared", "-o", path, *objects, "-lm"]
            if "GOMP_parallel" in self.get_source("ll"):
                command.append("-fopenmp")
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise TVMError(f"linking {path} with `{' '.join(command)}` failed:\n{result.stderr}")
        logger.debug("exported %s", path)

    def __repr__(self) -> str:
        return f"Module({self.type_key}, {sorted(self._signatures)})"

    def time_evaluator(self, func_name: str, dev, number: int = 10, repeat: int = 1, min_repeat_ms: int = 0,
                       limit_zero_time_iterations: int = 100, cooldown_interval_ms: int = 0,
                       repeats_to_cooldown: int = 1, cache_flush_bytes: int = 0, f_preproc: str = ""):
        """A function that runs ``func_name`` and returns a ``BenchmarkResult`` (times in seconds).

        Each of ``repeat`` measurements times ``number`` runs (grown until a measurement takes at least
        ``min_repeat_ms``) and records the mean time per run.

        Parameters
        ----------
        func_name : str
            The function's name.
        dev : Device
            The device.
        number : int
            Calls per measurement.
        repeat : int
            Measurements.
        min_repeat_ms : int
            Raise ``number`` until a measurement takes this long.
        limit_zero_time_iterations : int
            Retries of a measurement of zero time.
        cooldown_interval_ms : int
            Pause between batches of measurements.
        repeats_to_cooldown : int
            Measurements per batch.
        cache_flush_bytes : int
            Bytes written before each measurement to flush the caches.
        f_preproc : str
            Run on the arguments before each measurement: ``"cache_flush_cpu_non_first_arg"`` (TVM's)
            evicts every argument but the first from the CPU caches, so a kernel is timed as in a model
            (its input just written, its weights and output from memory); use it with ``number=1``.

        Returns
        -------
        callable
            ``f(*args) -> BenchmarkResult``.

        Examples
        --------
        >>> mod = tvm.build(matmul(), target="llvm")
        >>> a, b, c = (tvm.nd.array(np.ones((16, 16), "float32")) for _ in range(3))
        >>> evaluator = mod.time_evaluator(mod.entry_name, tvm.cpu(), number=10)
        >>> evaluator(a, b, c).mean > 0
        True
        """
        from .profiling import make_time_evaluator

        return make_time_evaluator(self.get_function(func_name, query_imports=True), dev, number, repeat,
                                   min_repeat_ms, limit_zero_time_iterations, cooldown_interval_ms,
                                   repeats_to_cooldown, cache_flush_bytes, f_preproc)


def _default_compiler(target) -> str:
    if target is not None and getattr(target, "is_host", True) is False:
        cross = f"{target.arch}-linux-gnu-gcc"
        if shutil.which(cross):
            return cross
        raise TVMError(f"no cross compiler {cross} to link a shared library for {target}; "
                       "export an object file (path ending in .o) or pass cc=...")
    return os.environ.get("CC", "cc")

