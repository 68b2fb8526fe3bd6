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


def test_conv_weights_are_layout_free_and_pre_packed_outside_the_timed_kernel():
    """The driver declares a convolution's ``kernel`` layout-free (``layout_free_buffers``), so a schedule
    may pack it once; ``split_layout_rewrite`` + ``pack_weights`` give the kernel and its packed weight,
    whose result equals numpy's. A batch matmul has no weight."""
    import search
    from search.context import TuneContext
    from search.measure.tasks import pack_weights
    from search.postproc import PostprocError, RewriteLayout, default_postprocs
    from search.space_generator import PostOrderApply, sample_candidate

    assert get_workload("GMM").weight_indices() == []
    assert get_workload("C2D").weight_indices() == [1]
    w = get_workload("conv2d", "small", "float32")
    func = te.create_prim_func(w.args).with_attr("layout_free_buffers", w.weight_indices())
    ctx = TuneContext.create(func, "llvm -mcpu=native", seed=0, num_threads=1)
    packed = None
    for seed, sketch in enumerate(PostOrderApply().generate_design_space(ctx)):
        try:
            cand = sample_candidate(ctx, sketch, default_postprocs(ctx), seed=seed)
        except (tvm.tir.ScheduleError, PostprocError):  # an invalid sample: the search drops it too
            continue
        if cand is not None and search.split_layout_rewrite(cand.mod)[1]:
            packed = cand
            break
    assert packed is not None and any(isinstance(p, RewriteLayout) for p in default_postprocs(ctx))
    kernel_mod, rewrites = search.split_layout_rewrite(packed.mod)
    lib = tvm.build(kernel_mod, target="llvm -mcpu=native")
    inputs = w.random_inputs(np.random.default_rng(0))
    args = pack_weights(lib, [tvm.nd.array(x) for x in inputs])
    assert tuple(args[1].shape) == rewrites[0].shape
    out = tvm.nd.array(np.zeros(w.output_shape(), w.output_dtype))
    lib(*[a if isinstance(a, tvm.nd.Tensor) else tvm.nd.array(a) for a in args], out)
    np.testing.assert_allclose(out.numpy(), w.reference(*inputs), rtol=1e-4, atol=1e-4)



def test_unpadded_convolutions_have_no_padding_stage():
    """pad=0 gives no stage at all (as the suite's and the graph's convolutions): a no-op padding would be a copy of
    the input, and inlined into a block marked for an intrinsic it would block the match."""
    from experiments.workloads.conv import conv2d_nhwc, conv2d_reference, depthwise_conv2d_nhwc
    from tensorize.schedule import Schedule, ScheduleError

    func = te.create_prim_func(list(conv2d_nhwc(1, 6, 6, 8, 16, 1, 1, 1, 0)))
    for f in (func, te.create_prim_func(list(depthwise_conv2d_nhwc(1, 6, 6, 8, 3, 3, 1, 0)))):
        with pytest.raises(ScheduleError):
            Schedule(f).get_block("pad")
    rng = np.random.default_rng(0)
    d, k = rng.standard_normal((1, 6, 6, 8)).astype("float32"), rng.standard_normal((1, 1, 8, 16)).astype("float32")
    lib = tvm.build(func, target="llvm")
    o = tvm.nd.array(np.zeros((1, 6, 6, 16), "float32"))
    lib(tvm.nd.array(d), tvm.nd.array(k), o)
    np.testing.assert_allclose(o.numpy(), conv2d_reference(d, k, 1, 0), rtol=1e-5, atol=1e-5)
