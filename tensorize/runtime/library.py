"""Shared libraries: what ``Module.export_library`` writes and ``load_module`` reads back.

An exported library holds the compiled functions and one extra data symbol,
``__tensorize_metadata``: a NUL-terminated JSON document with the format version, the target, the
entry function and each function's signature (``signature_json``). ``load_module`` opens the library
with the system loader (``dlopen``) in any process, reads that document and returns a ``Module`` whose
functions check their arguments exactly as the freshly built module's do. Nothing in the file is
evaluated as Python.

>>> import os, tempfile
>>> rt = tvm.build(matmul(), target="llvm")
>>> with tempfile.TemporaryDirectory() as tmp:
...     rt.export_library(os.path.join(tmp, "k.so"))
...     same = tvm.runtime.load_module(os.path.join(tmp, "k.so"))
...     a, b, c = (tvm.nd.array(np.ones((16, 16), "float32")) for _ in range(3))
...     same(a, b, c)
>>> float(c.numpy()[1, 1])
16.0
"""
from __future__ import annotations

import ctypes
import json
import logging
import os
import shutil
from typing import Any

from ..errors import TVMError
from .module import Module
from .openmp import pin_openmp_runtime
from .library_metadata import FORMAT as _FORMAT, METADATA_SYMBOL, metadata_json, metadata_object
from .signature_json import FORMAT_VERSION, signature_from_json

logger = logging.getLogger(__name__)

__all__ = ["load_module", "metadata_json", "metadata_object", "LibraryModule", "METADATA_SYMBOL"]

ERROR_SYMBOL = "__tensorize_last_error"
THREADS_SYMBOL = "__tensorize_num_threads"


def num_threads() -> int:
    """Threads for parallel loops: ``TVM_NUM_THREADS``, else ``OMP_NUM_THREADS``, else the usable cores.

    Returns
    -------
    int
        The thread count.
    """
    for name in ("TVM_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class LibraryModule(Module):
    """A ``Module`` backed by a loaded shared library (``library_path``); exporting it copies the file."""

    def __init__(self, library_path: str, handle: ctypes.CDLL, metadata: dict, **kwargs: Any):
        super().__init__(**kwargs)
        self.library_path = library_path
        self.metadata = metadata
        self._handle = handle

    def unload(self) -> None:
        """Close the library (``dlclose``) so a long-lived process can load many. The module and every
        function taken from it must not be called afterwards."""
        if self._handle is None:
            return
        import _ctypes

        handle, self._handle, self._keep_alive = self._handle._handle, None, None  # noqa: SLF001
        self._funcs.clear()
        self._resolve = lambda name: None
        pin_openmp_runtime()  # the library may be the last user of libgomp, whose threads stay parked
        _ctypes.dlclose(handle)

    def export_library(self, path: str, fcompile=None, cc=None, **kwargs) -> None:
        """Copy the loaded shared library to ``path``.

        Parameters
        ----------
        path : str
            The destination.
        fcompile : optional
            Ignored (already linked).
        cc : optional
            Ignored.
        **kwargs
            Ignored.
        """
        if os.path.abspath(path) != os.path.abspath(self.library_path):
            shutil.copyfile(self.library_path, path)

    def __repr__(self) -> str:
        return f"Module({self.type_key}, {sorted(self.function_names)}, loaded from {self.library_path!r})"


def _read_metadata(lib: ctypes.CDLL, path: str) -> dict:
    try:
        first = ctypes.c_char.in_dll(lib, METADATA_SYMBOL)
    except ValueError:
        raise TVMError(f"{path} has no {METADATA_SYMBOL} symbol: it was not written by tensorize's "
                       "Module.export_library (or by an older version); export it again") from None
    try:
        metadata = json.loads(ctypes.string_at(ctypes.addressof(first)).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TVMError(f"the metadata of {path} is not valid JSON ({err}); export the library again") from None
    if metadata.get("format") != _FORMAT or not isinstance(metadata.get("version"), int):
        raise TVMError(f"the metadata of {path} is not a tensorize library description")
    if metadata["version"] > FORMAT_VERSION:
        raise TVMError(f"{path} was written with library format {metadata['version']}; this version reads "
                       f"up to {FORMAT_VERSION}: upgrade tensorize")
    return metadata


def load_module(path: str, fmt: str = "") -> Module:
    """Load a shared library written by ``Module.export_library`` (TVM's ``tvm.runtime.load_module``).

    Parameters
    ----------
    path : str
        The ``.so`` file. It must have been built for this machine's architecture.
    fmt : str
        Ignored (TVM's parameter); only shared libraries are supported.

    Returns
    -------
    Module
        Callable like the module ``tvm.build`` returned: ``mod(a, b)``, ``mod["main"]``,
        ``mod.time_evaluator(...)``, with the same argument checks.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> import tensorize as tvm
    >>> from tensorize.script import tir as T
    >>> @T.prim_func
    ... def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    ...     for i in range(4):
    ...         with T.block("B"):
    ...             vi = T.axis.spatial(4, i)
    ...             B[vi] = A[vi] + T.float32(1)
    >>> path = os.path.join(tempfile.mkdtemp(), "add_one.so")
    >>> tvm.build(add_one, target="llvm").export_library(path)
    >>> mod = tvm.runtime.load_module(path)
    >>> b = np.zeros(4, "float32"); mod(np.arange(4, dtype="float32"), b); b
    array([1., 2., 3., 4.], dtype=float32)
    """
    path = os.path.abspath(os.fspath(path))
    if not os.path.exists(path):
        raise FileNotFoundError(f"no library at {path}")
    if path.endswith((".o", ".obj")):
        raise TVMError(f"{path} is an object file; load a shared library (export_library('name.so'))")
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    except OSError as err:
        raise TVMError(f"cannot load {path}: {err}. A library built for another architecture "
                       "(-mtriple=...) runs only on a matching machine") from None
    metadata = _read_metadata(lib, path)
    signatures = {item["name"]: signature_from_json(item) for item in metadata["functions"]}
    try:
        ctypes.c_int32.in_dll(lib, THREADS_SYMBOL).value = num_threads()
    except ValueError:
        pass
    try:
        error_pointer = ctypes.c_void_p.in_dll(lib, ERROR_SYMBOL)
    except ValueError:
        error_pointer = None

    def error_message(code: int) -> str:
        pointer = error_pointer.value if error_pointer is not None else None
        return ctypes.string_at(pointer).decode("utf-8", "replace") if pointer else ""

    def resolve(name: str) -> int | None:
        try:
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except AttributeError:
            return None

    target: Any = metadata.get("target")
    if target is not None:
        from ..target import Target

        try:
            target = Target(target)
        except Exception:  # noqa: BLE001 - an unknown target string stays a string
            logger.debug("keeping the target %r of %s as text", target, path)
    logger.debug("loaded %s: %s", path, sorted(signatures))
    module = LibraryModule(path, lib, metadata, type_key=metadata.get("type_key", "llvm"), functions=signatures,
                           target=target, resolve=resolve, entry_name=metadata.get("entry") or None,
                           error_message=error_message, keep_alive=lib)
    module.requires_amx = "amx-tile" in metadata.get("needs", ())  # runtime.amx asks the OS at the first call
    module.features = list(metadata.get("features", ()))  # checked against this CPU before the first call
    return module
