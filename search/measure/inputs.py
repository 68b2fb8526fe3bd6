"""Random inputs for a workload and the reference outputs every candidate is checked against.

Inputs are drawn once per workload (seeded): floats uniform in [-1, 1); ``int8``/``int16`` in
[-8, 8) and other integers in [0, 16), so integer accumulators stay exact and signed arithmetic is
exercised; bools 0/1. Output buffers (the parameters the program writes) start as zeros. The
reference is the untransformed program's output on those inputs. Both live in the work folder as
``.npz`` files named after the workload's key and the seed, so a resumed run reuses them.

>>> import numpy as np
>>> from tensorize.script import tir as T
>>> @T.prim_func
... def scale(A: T.Buffer((8,), "int8"), B: T.Buffer((8,), "int32")):
...     for i in range(8):
...         with T.block("B"):
...             vi = T.axis.spatial(8, i)
...             B[vi] = T.Cast("int32", A[vi]) * 3
>>> written_params(scale)
[1]
>>> a, b = random_arguments(scale, seed=0)
>>> a.dtype, bool((a >= -8).all() and (a < 8).all()), int(np.abs(b).sum())
(dtype('int8'), True, 0)
>>> tolerances(scale, [1])
[(0.0, 0.0)]
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tensorize.ir import dtype as dt
from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.function import IRModule, PrimFunc
from tensorize.ir.functor import post_order_visit
from tensorize.runtime.ndarray import aligned_empty

logger = logging.getLogger(__name__)

__all__ = ["entry_function", "written_params", "random_arguments", "tolerances", "workload_key", "WorkloadData",
           "prepare_workload", "fresh_arguments"]


def entry_function(mod) -> PrimFunc:
    """The PrimFunc a workload runs: ``main``, or the module's only PrimFunc."""
    if isinstance(mod, PrimFunc):
        return mod
    funcs = {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, PrimFunc)}
    if "main" in funcs:
        return funcs["main"]
    if len(funcs) == 1:
        return next(iter(funcs.values()))
    raise ValueError(f"cannot tell which function of the module to measure ({sorted(funcs)}); name one 'main'")


def written_params(func: PrimFunc) -> list[int]:
    """Positions of the parameters whose buffers the function writes (its outputs)."""
    written: set = set()

    def visit(node) -> None:
        if isinstance(node, S.BufferStore):
            written.add(node.buffer.data)
        elif isinstance(node, S.Block):
            written.update(region.buffer.data for region in node.writes)

    post_order_visit(func.body, visit)
    return [index for index, param in enumerate(func.params)
            if param in func.buffer_map and func.buffer_map[param].data in written]


def _np_dtype(dtype: str) -> np.dtype:
    return np.dtype(dt.numpy_dtype(dtype))


def _random_array(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    t = dt.parse(dtype)
    if t.code == "bfloat":
        bits = rng.uniform(-1.0, 1.0, shape).astype("float32").view("uint32")
        return (bits >> 16).astype("uint16")
    if t.code == "float":
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if t.code == "bool":
        return rng.integers(0, 2, shape).astype("bool")
    if t.code == "int" and t.bits <= 16:
        return rng.integers(-8, 8, shape).astype(dtype)
    if t.code in ("int", "uint"):
        return rng.integers(0, 16, shape).astype(dtype)
    raise TypeError(f"cannot make random inputs of dtype {dtype}")


def _static_shape(buffer) -> tuple[int, ...]:
    shape = []
    for dim in buffer.shape:
        if not isinstance(dim, E.IntImm):
            raise ValueError(f"buffer {buffer.name} has a symbolic shape {tuple(buffer.shape)}; measure a workload "
                             "with static shapes (bind the shape variables first)")
        shape.append(dim.value)
    return tuple(shape)


def random_arguments(func: PrimFunc, seed: int = 0) -> list[np.ndarray]:
    """One array per parameter: random inputs, zeroed outputs (scalar parameters as 0-d arrays of 1)."""
    rng = np.random.default_rng(seed)
    outputs = set(written_params(func))
    args = []
    for index, param in enumerate(func.params):
        buffer = func.buffer_map.get(param)
        if buffer is None:
            args.append(np.ones((), dtype=_np_dtype(param.dtype)))
        elif index in outputs:
            args.append(np.zeros(_static_shape(buffer), dtype=_np_dtype(buffer.dtype)))
        else:
            args.append(_random_array(rng, _static_shape(buffer), buffer.dtype))
    return args


def _reduction_length(func: PrimFunc) -> int:
    longest = 1

    def visit(node) -> None:
        nonlocal longest
        if isinstance(node, S.Block):
            length = 1
            for iv in node.iter_vars:
                if iv.iter_type == E.IterVar.CommReduce and isinstance(iv.dom.extent, E.IntImm):
                    length *= iv.dom.extent.value
            longest = max(longest, length)

    post_order_visit(func.body, visit)
    return longest


def tolerances(func: PrimFunc, outputs: list[int]) -> list[tuple[float, float]]:
    """``(rtol, atol)`` per output: exact for integers; for floats a relative tolerance by precision and an
    absolute one growing with the longest reduction (summation order changes the rounding)."""
    k = _reduction_length(func)
    out = []
    for index in outputs:
        t = dt.parse(func.buffer_map[func.params[index]].dtype)
        if t.code not in ("float", "bfloat"):
            out.append((0.0, 0.0))
        elif t.bits >= 64:
            out.append((1e-7, 1e-12 * k + 1e-12))
        elif t.bits == 32:
            out.append((1e-3, 1e-6 * k + 1e-6))
        else:
            out.append((2e-2, 1e-3 * math.sqrt(k) + 1e-3))
    return out


def workload_key(mod) -> str:
    """A stable key of a workload (SHA-256 of its TVMScript text, as the database keys workloads)."""
    mod = mod if isinstance(mod, IRModule) else IRModule({"main": mod})
    return hashlib.sha256(mod.script().encode()).hexdigest()


@dataclass
class WorkloadData:
    """A workload's random inputs and reference outputs, on disk and (loaded on demand) in memory."""

    key: str
    inputs_path: str
    reference_path: str
    outputs: list[int]
    tolerances: list[tuple[float, float]]
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def arguments(self) -> list[np.ndarray]:
        """The input arrays (made once, reused by every run)."""
        if "args" not in self._cache:
            self._cache["args"] = load_arrays(self.inputs_path)
        return self._cache["args"]

    @property
    def reference(self) -> list[np.ndarray]:
        """The reference outputs the runs are checked against."""
        if "ref" not in self._cache:
            self._cache["ref"] = load_arrays(self.reference_path)
        return self._cache["ref"]


def save_arrays(path: str, arrays: list[np.ndarray]) -> None:
    """Write ``arrays`` to an ``.npz`` atomically (a killed run never leaves a torn file)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **{f"a{i}": a for i, a in enumerate(arrays)})
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_arrays(path: str) -> list[np.ndarray]:
    """The arrays saved in ``path`` (an ``.npz`` of ``a0, a1, ...``)."""
    with np.load(path, allow_pickle=False) as data:
        return [data[f"a{i}"] for i in range(len(data.files))]


def fresh_arguments(args: list[np.ndarray], outputs: list[int]) -> list[np.ndarray]:
    """64-byte aligned copies of ``args`` with the outputs zeroed (what each candidate's check run gets)."""
    fresh = []
    for index, array in enumerate(args):
        copy = aligned_empty(array.shape, array.dtype) if array.ndim else np.empty((), array.dtype)
        if index in outputs:
            copy[...] = 0
        else:
            np.copyto(copy, array)
        fresh.append(copy)
    return fresh


def prepare_workload(mod, work_dir: str, seed: int,
                     compute_reference: Callable[[IRModule, list[np.ndarray], list[int]], list[np.ndarray]]
                     ) -> WorkloadData:
    """The inputs and reference of ``mod``: read from ``work_dir`` when a previous run left them there, else
    drawn (seeded) and computed with ``compute_reference(mod, args, outputs)`` (run in isolation), then saved."""
    func = entry_function(mod)
    key = workload_key(mod)
    stem = os.path.join(work_dir, "workloads", f"{key[:24]}_seed{seed}")
    outputs = written_params(func)
    if not outputs:
        raise ValueError("the workload writes none of its parameters, so there is no output to check; "
                         "make the result a parameter buffer")
    data = WorkloadData(key, stem + "_inputs.npz", stem + "_reference.npz", outputs, tolerances(func, outputs))
    if os.path.exists(data.inputs_path) and os.path.exists(data.reference_path):
        logger.debug("reusing the inputs and reference of workload %s", key[:12])
        return data
    args = random_arguments(func, seed)
    save_arrays(data.inputs_path, args)
    reference = compute_reference(mod if isinstance(mod, IRModule) else IRModule({"main": mod}), args, outputs)
    save_arrays(data.reference_path, reference)
    logger.info("computed the reference outputs of workload %s", key[:12])
    data._cache.update(args=args, ref=reference)  # noqa: SLF001
    return data
