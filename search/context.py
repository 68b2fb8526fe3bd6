"""``TuneContext``: what every component of the search sees about the task being tuned.

>>> import tensorize as tvm
>>> from tensorize.script import tir as T
>>> @T.prim_func
... def add(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
...     for i in range(64):
...         with T.block("B"):
...             vi = T.axis.spatial(64, i)
...             B[vi] = A[vi] + T.float32(1)
>>> ctx = TuneContext.create(add, "llvm -mcpu=haswell", seed=0)
>>> ctx.target.has_feature("avx2"), ctx.vector_lanes("float32"), ctx.num_threads >= 1
(True, 8, True)
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from tensorize.ir.function import IRModule, PrimFunc
from tensorize.ir.tensor_intrin import TensorIntrin, load_plugins
from tensorize.runtime.library import num_threads
from tensorize.target import Target

__all__ = ["TuneContext", "as_module", "available_intrinsics", "check_intrinsics"]


def as_module(mod) -> IRModule:
    """An IRModule from an IRModule or a PrimFunc (named ``main``, as TVM does)."""
    if isinstance(mod, PrimFunc):
        return IRModule({"main": mod})
    if isinstance(mod, IRModule):
        return mod
    raise TypeError(f"expected an IRModule or a PrimFunc, got {type(mod).__name__}")


def available_intrinsics(target: Target, include_saturating: bool = False) -> tuple[str, ...]:
    """Names of the registered tensor intrinsics the target can run (by kind, arch and features), sorted;
    intrinsics that are exact only for part of the input range (``saturates_int16``) are left out unless
    ``include_saturating``, and those for hand schedules only (``hand_only``: AMX blockings registered
    when a hand schedule asks for them) always, so that the space does not depend on what ran before."""
    load_plugins()
    return tuple(sorted(name for name, intrin in TensorIntrin._registry.items()
                        if intrin.meta.supported_by(target) and not intrin.meta.extra.get("hand_only")
                        and (include_saturating or not intrin.meta.extra.get("saturates_int16"))))


def check_intrinsics(names, target: Target) -> tuple[str, ...]:
    """``names`` as a tuple, or ``ValueError`` naming an intrinsic that is not registered or that ``target``
    cannot run (a user's ``intrinsics=`` list for ``search.tune_tir``).

    >>> check_intrinsics(["fma_8_f32f32f32_avx2"], Target("llvm -mcpu=haswell"))
    ('fma_8_f32f32f32_avx2',)
    """
    load_plugins()
    names = tuple(names)
    for name in names:
        intrin = TensorIntrin._registry.get(name)
        if intrin is None:
            raise ValueError(f"no tensor intrinsic is named {name!r}; the target's are "
                             f"{list(available_intrinsics(target))}")
        if not intrin.meta.supported_by(target):
            raise ValueError(f"tensor intrinsic {name!r} needs {list(intrin.meta.features)}, which {target} "
                             "does not have")
    return names


def host_threads(target: Target) -> int:
    """The threads a host kernel's parallel loops will get: the target's ``num-cores`` when it names one,
    else what the runtime gives them (``tensorize.runtime.library.num_threads``: ``TVM_NUM_THREADS``, else
    ``OMP_NUM_THREADS``, else the usable cores).

    A run pinned to one thread (``OMP_NUM_THREADS=1``) is tuned for one: the parallel-vectorize-unroll
    rule sizes its parallel loops by this count.

    >>> host_threads(Target("llvm -num-cores=4"))
    4
    """
    if target.attrs.get("num-cores"):
        return max(1, int(target.attrs["num-cores"]))
    return num_threads()


@dataclass
class TuneContext:
    """The task: the module, the target, the random state and what the target offers.

    ``rng`` is the one random source of a tuning run (seeded), so a run is reproducible;
    ``intrinsics`` are the tensor intrinsics the target supports (all compete in one search);
    ``num_threads`` is the parallelism the schedules target.
    """

    mod: IRModule
    target: Target
    rng: random.Random
    intrinsics: tuple[str, ...] = ()
    num_threads: int = 1
    task_name: str = "main"
    extra: dict = field(default_factory=dict)

    @staticmethod
    def create(mod, target, seed: int | None = 0, num_threads: int | None = None,
               intrinsics: tuple[str, ...] | None = None, task_name: str = "main") -> "TuneContext":
        """A TuneContext for ``mod`` and ``target`` with the default space, rules, postprocessors and mutators."""
        target = target if isinstance(target, Target) else Target(target)
        if num_threads is None:
            num_threads = host_threads(target) if target.is_host else 1
        return TuneContext(as_module(mod), target, random.Random(seed),
                           available_intrinsics(target) if intrinsics is None else tuple(intrinsics),
                           num_threads, task_name)

    def vector_bits(self) -> int:
        """Bits of the target's widest vector register (AVX-512: 512, AVX: 256, else 128)."""
        has = self.target.has_feature
        return 512 if has("avx512f") else 256 if (has("avx2") or has("avx")) else 128

    def vector_lanes(self, dtype: str = "float32") -> int:
        """Lanes of ``dtype`` in the target's widest vector register (``vector_bits``)."""
        width = {"float64": 64, "int64": 64, "float32": 32, "int32": 32, "float16": 16, "bfloat16": 16,
                 "int16": 16, "int8": 8, "uint8": 8}.get(dtype, 32)
        return self.vector_bits() // width

    def fork_rng(self) -> random.Random:
        """A new random source drawn from this context's (for a worker or one sampled schedule)."""
        return random.Random(self.rng.randrange(1 << 62))
