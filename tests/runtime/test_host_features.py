"""Code built for CPU features this machine lacks raises a clear error before it runs (instead of the
process dying with SIGILL), in process and after export/load; code for this CPU runs."""
import numpy as np
import pytest

import tensorize as tvm
from tensorize.errors import TVMError
from tensorize.script import tir as T
from tensorize.target.llvm import code_features, host_lacks

# Features no single x86 CPU has all of (AMD lacks AMX, Intel lacks XOP/FMA4, few have AVX512-FP16).
CANDIDATES = ["avx512f", "avx512fp16", "amx-tile", "xop", "fma4", "avx512vp2intersect"]


@T.prim_func
def add_one(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.block("b"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + T.float32(1)


def _missing_feature():
    missing = host_lacks(CANDIDATES)
    if not missing:
        pytest.skip(f"this CPU has all of {CANDIDATES}")
    return missing[0]


def test_code_features_keep_instruction_sets_only():
    assert code_features({"avx512vnni", "prefer-256-bit", "mwaitx", "amx-int8", "sse4.2"}) == \
        ["amx-int8", "avx512vnni", "sse4.2"]


def test_module_for_a_missing_feature_raises_before_running():
    feature = _missing_feature()
    lib = tvm.build(add_one, target=f"llvm -mattr=+{feature}")
    assert feature in lib.features
    a, b = np.zeros(64, "float32"), np.zeros(64, "float32")
    with pytest.raises(TVMError, match=rf"lacks: .*{feature}.*llvm -mcpu=native"):
        lib(a, b)
    with pytest.raises(TVMError, match="SIGILL"):  # every call, not only the first
        lib["main"](a, b)


def test_exported_module_keeps_its_features(tmp_path):
    feature = _missing_feature()
    path = str(tmp_path / "add.so")
    tvm.build(add_one, target=f"llvm -mattr=+{feature}").export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert feature in loaded.features
    with pytest.raises(TVMError, match=feature):
        loaded(np.zeros(64, "float32"), np.zeros(64, "float32"))


def test_module_for_this_cpu_runs():
    lib = tvm.build(add_one, target="llvm -mcpu=native")
    assert lib.features and not host_lacks(lib.features)
    a, b = np.arange(64, dtype="float32"), np.zeros(64, "float32")
    lib(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_local_runner_refuses_a_target_this_cpu_cannot_run():
    from search.context import TuneContext
    from search.measure.runner import LocalRunner

    feature = _missing_feature()
    runner = LocalRunner()
    try:
        with pytest.raises(TVMError, match=rf"lacks {feature}.*'llvm -mcpu=native'"):
            runner.workload(TuneContext.create(add_one, f"llvm -mattr=+{feature}"))
    finally:
        runner.close()
