"""The generic CPU schedule of untuned graph tasks: vector widths LLVM handles well, accumulators in registers."""
from __future__ import annotations

import numpy as np

import tensorize as tvm
from tensorize import te
from tensorize.graph.default_schedule import _vector_width, tiled_schedule


def test_vector_width_is_whole_registers_or_a_power_of_two_part():
    assert [_vector_width(n, 16) for n in (64, 48, 24, 1000, 12, 7)] == [32, 16, 8, 8, 4, 1]
    assert _vector_width(24, 8) == 8 and _vector_width(6, 8) == 2


def test_conv1x1_to_24_channels_with_epilogue_accumulates_locally_in_8_lane_vectors():
    """A MobileNet projection (1x1, 144 -> 24 channels, then scale and shift): the tile accumulates in a
    local buffer the epilogue reads, vectorized 8 wide; 24-wide vectors were split lane by lane."""
    data = te.placeholder((1, 8, 8, 144), name="data")
    weight = te.placeholder((144, 24), name="weight")
    scale = te.placeholder((24,), name="scale")
    rc = te.reduce_axis((0, 144), name="rc")
    conv = te.compute((1, 8, 8, 24), lambda n, y, x, c: te.sum(data[n, y, x, rc] * weight[rc, c], axis=rc),
                      name="conv")
    out = te.compute((1, 8, 8, 24), lambda n, y, x, c: conv[n, y, x, c] * scale[c] + 1.0, name="out")
    sch = tiled_schedule(te.create_prim_func([data, weight, scale, out]), lanes=16)
    text = sch.mod.script()
    assert "conv_local" in text and "T.vectorized(8)" in text and "T.vectorized(24)" not in text
    lib = tvm.build(sch.mod, target="llvm")
    assert "<24 x float>" not in lib.get_source("ll")
    rng = np.random.default_rng(0)
    d, w, s = (rng.standard_normal(shape).astype("float32") for shape in ((1, 8, 8, 144), (144, 24), (24,)))
    got = tvm.nd.array(np.zeros((1, 8, 8, 24), "float32"))
    lib(tvm.nd.array(d), tvm.nd.array(w), tvm.nd.array(s), got)
    np.testing.assert_allclose(got.numpy(), (d @ w) * s + 1.0, rtol=1e-4, atol=1e-4)
