"""The operator suite's te workloads against PyTorch and onnxruntime (independent references), and the
target group's errors."""
import numpy as np
import pytest

import tensorize as tvm
from experiments.framework_baselines import onnxruntime_baseline, torch_suite_baseline
from experiments.targets import ConfigError, resolve_target
from experiments.workloads import get_workload
from experiments.workloads.suite import SUITE, TABLE
from tensorize import te


@pytest.mark.parametrize("name", SUITE)
def test_suite_workload_matches_the_frameworks(name):
    w = get_workload(name, "small")
    inputs = w.random_inputs(np.random.default_rng(1))
    lib = tvm.build(tvm.IRModule({"main": te.create_prim_func(w.args)}), "llvm")
    out = tvm.nd.array(np.zeros(w.output_shape(), w.output_dtype))
    lib(*[tvm.nd.array(x) for x in inputs], out)
    np.testing.assert_allclose(out.numpy(), w.reference(*inputs), rtol=1e-4, atol=1e-4)
    checked = 0
    for made in (torch_suite_baseline(w, inputs), onnxruntime_baseline(w, inputs)):
        if made is not None:
            run, to_nhwc = made
            np.testing.assert_allclose(to_nhwc(run()), out.numpy(), rtol=1e-4, atol=1e-4)
            checked += 1
    if checked == 0:
        pytest.skip("neither torch nor onnxruntime is installed")


def test_suite_table_shapes_are_metaschedules_first_rows():
    assert TABLE["C2D"]["0"] == (1, 224, 224, 3, 64, 7, 2, 3)
    assert get_workload("GMM").flops == 2 * 128 ** 3
    assert get_workload("DEP").output_shape() == (1, 112, 112, 32)
    assert get_workload("T2D").output_shape() == (1, 8, 8, 256)
    with pytest.raises(KeyError, match="known: .*small"):
        get_workload("C1D", "9")


def test_gpu_and_cross_targets_say_what_to_do():
    from tensorize.runtime.cuda_module import gpu_available

    if not gpu_available():
        with pytest.raises(ConfigError, match="needs an NVIDIA GPU.*target=host"):
            resolve_target({"name": "cuda_sm80", "target": "cuda -arch=sm_80"})
    with pytest.raises(ConfigError, match="not this machine.*arm64"):
        resolve_target({"name": "aarch64_sdot", "target": "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod"})
    assert resolve_target({"name": "host", "target": "llvm -mcpu=native"}).is_host
