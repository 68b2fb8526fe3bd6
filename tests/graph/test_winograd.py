"""Winograd convolutions: the transform matrices, the graph rewrite and its numbers against a direct
convolution and numpy."""
import numpy as np
import pytest

from tensorize.graph import Graph, build
from tensorize.graph.build import graph_tasks
from tensorize.graph.winograd import use_winograd, winograd_matrices, winograd_tile

TARGET = "llvm"


@pytest.mark.parametrize("m", [2, 4])
def test_matrices_compute_a_one_dimensional_correlation(m):
    rng = np.random.default_rng(m)
    bt, g, at = winograd_matrices(m)
    assert bt.shape == (m + 2, m + 2) and g.shape == (m + 2, 3) and at.shape == (m, m + 2)
    d, k = rng.standard_normal(m + 2), rng.standard_normal(3)
    np.testing.assert_allclose(at @ ((g @ k) * (bt @ d)), np.correlate(d, k, mode="valid"), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="only"):
        winograd_matrices(3)


def test_tile_choice():
    assert winograd_tile(56, 56, 64, 64) == 4
    assert winograd_tile(28, 28, 128, 128) == 4  # 49 tiles of 4x4
    assert winograd_tile(14, 14, 256, 256) == 2  # 4x4 tiles would not cover 14 exactly
    assert winograd_tile(7, 7, 512, 512) is None  # too few tiles: direct
    assert winograd_tile(56, 56, 3, 64) is None  # too few input channels for the GEMM to pay


def _conv_relu(h, w, ci, co, pads, rng, stride=1, groups=1):
    g = Graph()
    x = g.add_input("x", (1, h, w, ci))
    weight = (rng.standard_normal((3, 3, ci // groups, co)) / np.sqrt(9 * ci)).astype("float32")
    bias = rng.standard_normal(co).astype("float32")
    y = g.add_node("conv2d", [x, g.add_constant("w", weight)], {"pads": pads, "strides": (stride, stride),
                                                                 "groups": groups})
    g.outputs.append(g.add_node("relu", [g.add_node("add", [y, g.add_constant("b", bias)])]))
    return g, weight, bias


def _numpy_conv_relu(x, weight, bias, pads):
    top, left, bottom, right = pads
    p = np.pad(x.astype("float64"), ((0, 0), (top, bottom), (left, right), (0, 0)))
    oh, ow = p.shape[1] - 2, p.shape[2] - 2
    out = sum(np.einsum("nhwc,co->nhwo", p[:, i:i + oh, j:j + ow], weight[i, j].astype("float64"))
              for i in range(3) for j in range(3))
    return np.maximum(out + bias, 0)


@pytest.mark.parametrize("h, w, ci, co, pads, m", [
    (16, 24, 16, 32, (1, 1, 1, 1), 2),  # 96 tiles of 2x2
    (24, 24, 8, 16, (1, 1, 1, 1), 4),  # 36 tiles of 4x4
    (26, 26, 16, 16, (0, 0, 0, 0), 4),  # a valid convolution: 24x24 out
    (25, 25, 16, 16, (1, 0, 2, 1), 2),  # uneven padding: 26x24 out
])
def test_rewritten_convolution_matches_numpy_and_the_direct_one(h, w, ci, co, pads, m):
    rng = np.random.default_rng(h * w + ci)
    g, weight, bias = _conv_relu(h, w, ci, co, pads, rng)
    direct = build(_conv_relu(h, w, ci, co, pads, np.random.default_rng(h * w + ci))[0], TARGET, winograd=False)
    tasks = graph_tasks(g, TARGET)
    names = [t.name.rsplit("_", 1)[0] for t in tasks]
    assert names == ["winograd_input_rows", "winograd_input", "winograd_gemm", "winograd_output_rows",
                     "winograd_output_add_relu"]  # the bias and relu fused into the last stage
    assert g.types[[n for n in g.nodes if n.op == "winograd_gemm"][0].inputs[1]][0] == ((m + 2) ** 2, ci, co)
    assert "w" not in g.constants  # the original weight is dropped
    lib = build(g, TARGET)
    x = rng.standard_normal((1, h, w, ci)).astype("float32")
    want = _numpy_conv_relu(x, weight, bias, pads)
    got = lib.run(x)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, direct.run(x)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride, groups, h", [(2, 1, 32), (1, 2, 32), (1, 1, 7)])
def test_ineligible_convolutions_stay_direct(stride, groups, h):
    g, _, _ = _conv_relu(h, h, 16, 32, (1, 1, 1, 1), np.random.default_rng(0), stride=stride, groups=groups)
    assert use_winograd(g) == 0
    assert [n.op for n in g.nodes][0] == "conv2d"


def test_build_without_winograd_keeps_the_direct_convolution():
    g, _, _ = _conv_relu(24, 24, 16, 16, (1, 1, 1, 1), np.random.default_rng(0))
    assert [t.name.rsplit("_", 1)[0] for t in graph_tasks(g, TARGET, winograd=False)] == ["conv2d_add_relu"]
    assert use_winograd(g) == 1 and use_winograd(g) == 0  # idempotent
