"""The PyTorch baseline of the end-to-end comparisons runs the same ONNX graph as onnxruntime."""
import numpy as np
import pytest

pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from experiments.models import MODELS, TEST_CONFIGS, random_inputs  # noqa: E402
from experiments.torch_onnx import torch_runner  # noqa: E402


@pytest.mark.parametrize("name", sorted(MODELS))
def test_outputs_match_onnxruntime(name):
    model = MODELS[name](**TEST_CONFIGS.get(name, {}))
    inputs = random_inputs(model)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    out = torch_runner(model)(**inputs)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert o.shape == r.shape
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-4 * float(np.abs(r).max()))


def test_asymmetric_pads_and_gemm_attributes():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "w")
    g = numpy_helper.from_array(rng.standard_normal((5, 64)).astype("float32"), "g")
    c = numpy_helper.from_array(rng.standard_normal((5,)).astype("float32"), "c")
    shape = numpy_helper.from_array(np.array([0, -1], dtype="int64"), "shape")
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[0, 1, 1, 0], strides=[2, 2]),
             helper.make_node("MaxPool", ["y"], ["p"], kernel_shape=[2, 2], pads=[1, 1, 0, 0]),
             helper.make_node("Reshape", ["p", "shape"], ["f"]),
             helper.make_node("Gemm", ["f", "g", "c"], ["out"], transB=1, alpha=0.5, beta=2.0)]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 9, 9])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                              initializer=[w, g, c, shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((2, 3, 9, 9)).astype("float32")
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(torch_runner(model)(x=x)[0], ref[0], rtol=1e-4, atol=1e-4)


def test_unsupported_operator_is_named():
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,jk->ik")], "t",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(NotImplementedError, match="Einsum"):
        torch_runner(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
