"""Features with the structural hash the caller already has: the same vectors, one hash per candidate."""
import numpy as np

import tensorize as tvm
from search.feature import PerStoreFeature
from search.feature import extractor as extractor_module
from tensorize import te
from tensorize.ir.structural import structural_hash


def _gemm_schedules():
    A = te.placeholder((64, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = te.create_prim_func([A, B, C])
    plain = tvm.tir.Schedule(func)
    tiled = tvm.tir.Schedule(func)
    i, j, _ = tiled.get_loops(tiled.get_block("C"))
    _, j1 = tiled.split(j, [None, 8])
    tiled.vectorize(j1)
    tiled.parallel(i)
    return [plain, tiled]


def test_extract_keyed_equals_extract_and_hashes_nothing(monkeypatch):
    schedules = _gemm_schedules()
    keys = [structural_hash(s.mod) for s in schedules]
    expected = PerStoreFeature(cache_size=0).extract(None, schedules)
    assert not np.array_equal(expected[0], expected[1])  # the two programs differ in their features
    calls = []
    monkeypatch.setattr(extractor_module, "structural_hash", lambda mod: calls.append(mod) or 0)
    got = PerStoreFeature().extract_keyed(None, schedules, keys)
    assert calls == []
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(e, g)
    # a second call is served by the cache under the given keys, still without hashing
    cached = PerStoreFeature()
    cached.extract_keyed(None, schedules, keys)
    for e, g in zip(expected, cached.extract_keyed(None, schedules, keys)):
        np.testing.assert_array_equal(e, g)
    assert calls == []
