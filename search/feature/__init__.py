"""Program features for the cost model: one fixed-length float32 vector per candidate schedule.

``PerStoreFeature`` (registered as ``"per_store"``) follows TVM MetaSchedule's per-store features:
the candidate's module is lowered through phase 0 of the lowering pipeline (loops, multi-dimensional
buffers; see ``program.py``), every ``BufferStore`` gets a vector, and the vectors of all stores are
summed. Counts are ``log2(1 + x)``. ``feature_names()`` names every dimension (152). The groups:

* ``arith.*`` (16): operations executed by the store (per execution times the product of the loop
  extents around it, times vector lanes): float multiply-add (``a * b + c``), add/sub, mul, div/mod,
  comparisons/min/max, math calls (exp, sqrt, ...), other calls; the same for integers (index
  arithmetic included); boolean ops, selects, casts.
* ``vec.*``, ``unroll.*``, ``parallel.*`` (7 each): number of loops of that kind around the store,
  product of their extents, extent of the innermost one, and its position one-hot (none, innermost
  loop, middle, outermost loop).
* ``loop.*`` (5): number of stores (1 per store, so the sum counts them), loop depth, product of all
  loop extents (executions), innermost loop extent, ``pragma_auto_unroll_max_step`` in force.
* ``intrin.*`` (6): tensor-intrinsic calls executed, by family: x86 int8 dot (``vpdpbusd``,
  ``pmaddubsw``), ARM int8 dot (``sdot``/``udot``), matrix (``smmla``, AMX ``tdp*``, MMA), float dot
  (``fma``, ``dpbf16``), other LLVM intrinsics, extern calls.
* ``access{0..4}.*`` (18 each): the store's five largest buffers by bytes accessed (accesses of one
  buffer merged): read / write / read-write one-hot; bytes accessed; unique bytes (footprint of the
  whole nest); cache lines touched (from the innermost moving stride); unique cache lines; reuse type
  one-hot (a loop that does not move the access, read-write of the same buffer, none); reuse distance
  in iterations and in bytes (the working set of all the store's accesses inside the reuse loop);
  reuse count (that loop's extent); bytes, unique bytes, lines and unique lines divided by the reuse
  count; element stride of the innermost loop that moves the access.
* ``intensity.*`` (10): arithmetic intensity (operations / working-set bytes) at each loop level from
  the innermost outwards, resampled to 10 points.
* ``alloc.*`` (4): allocations (count, bytes, product of the loops around the allocation, stores into
  it per allocation).

>>> import tensorize as tvm
>>> from tensorize.script import tir as T
>>> from search.context import TuneContext
>>> @T.prim_func
... def add(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
...     for i in range(64):
...         with T.block("B"):
...             vi = T.axis.spatial(64, i)
...             B[vi] = A[vi] + T.float32(1)
>>> ctx = TuneContext.create(add, "llvm -mcpu=haswell")
>>> [vec] = FEATURES.create("per_store").extract(ctx, [tvm.tir.Schedule(add)])
>>> vec.shape, vec[feature_names().index("arith.float_addsub")]   # log2(1 + 64)
((152,), np.float32(6.022368))
"""
from __future__ import annotations

from ..registry import Registry
from .extractor import FeatureExtractor, PerStoreFeature
from .names import NUM_FEATURES, feature_names

__all__ = ["FEATURES", "FeatureExtractor", "PerStoreFeature", "NUM_FEATURES", "feature_names"]

FEATURES = Registry("feature extractor")
FEATURES.register("per_store")(PerStoreFeature)
