"""The four models (reduced configurations) imported from ONNX match onnxruntime, untuned."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from experiments.models import MODELS, TEST_CONFIGS, random_inputs  # noqa: E402
from tensorize import graph  # noqa: E402
from tensorize.errors import TVMValueError  # noqa: E402
from tensorize.frontend import from_onnx  # noqa: E402

TOL = {"float32": 1e-4}


def _reference(model, inputs):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def _check(model, lib, inputs):
    ref = _reference(model, inputs)
    out = lib.run(**inputs)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert o.shape == r.shape and o.dtype == r.dtype
        scale = float(np.abs(r).max())
        np.testing.assert_allclose(o, r, rtol=TOL[str(r.dtype)], atol=TOL[str(r.dtype)] * scale)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_reduced_model_matches_onnxruntime(name, tmp_path):
    model = MODELS[name](**TEST_CONFIGS[name])
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    g = from_onnx(str(path))  # a file works as the model does
    lib = graph.build(g, "llvm")
    assert set(lib.how.values()) <= {"default", "simple"}, lib.how
    _check(model, lib, random_inputs(model, seed=3))
    assert sum(t.weight for t in lib.tasks) > len(lib.tasks) or name in ("resnet50",)


def test_convs_run_in_nhwc_with_fused_epilogues():
    g = from_onnx(MODELS["resnet50"](**TEST_CONFIGS["resnet50"]))
    groups = graph.fuse(g)
    conv_groups = [grp.ops for grp in groups if grp.ops[0] == "conv2d"]
    assert ["conv2d", "mul", "add", "relu"] in conv_groups          # conv + folded batch norm + relu
    assert ["conv2d", "mul", "add", "add", "relu"] in conv_groups   # ... + the residual add
    assert sum(1 for grp in groups if grp.ops == ["transpose"]) == 1  # only the input goes to NHWC


def test_symbolic_input_needs_shape_dict():
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["x"], ["y"])
    gr = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])])
    model = helper.make_model(gr)
    with pytest.raises(TVMValueError, match="shape_dict"):
        from_onnx(model)
    lib = graph.build(from_onnx(model, shape_dict={"x": (2, 3)}), "llvm")
    np.testing.assert_array_equal(lib.run(np.array([[-1, 2, -3], [4, -5, 6]], "float32"))[0],
                                  [[0, 2, 0], [4, 0, 6]])


def test_unsupported_operator_is_named():
    from onnx import TensorProto, helper

    node = helper.make_node("Hardmax", ["x"], ["y"])
    gr = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    with pytest.raises(TVMValueError, match="Hardmax"):
        from_onnx(helper.make_model(gr))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_full_model_matches_onnxruntime(name):
    model = MODELS[name]()
    _check(model, graph.build(from_onnx(model), "llvm -mcpu=native"), random_inputs(model))
