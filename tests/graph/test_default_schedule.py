"""The generic CPU schedule of untuned graph tasks: vector widths LLVM handles well, accumulators in registers."""
from __future__ import annotations

import numpy as np
import pytest

import tensorize as tvm
from tensorize import te
from tensorize.graph.default_schedule import _register_tile, _vector_width, tiled_schedule


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


@pytest.mark.parametrize("cols", [64, 197])
def test_softmax_row_reductions_accumulate_in_vectors(cols):
    """The max and the sum of exp of a softmax row are rfactored into 16 lanes and vectorized (a float
    sum is not reassociated by LLVM, so the plain loop stays scalar); 197 columns mask the last lanes."""
    from tensorize import tir

    x = te.placeholder((4, cols), name="x")
    k = te.reduce_axis((0, cols), name="k")
    # reduced with keepdims, as the ONNX importer writes a softmax: (rows, 1)
    mx = te.compute((4, 1), lambda i, _: te.max(x[i, k], axis=k), name="mx")
    k2 = te.reduce_axis((0, cols), name="k2")
    sm = te.compute((4, 1), lambda i, _: te.sum(tir.exp(x[i, k2] - mx[i, 0]), axis=k2), name="sm")
    out = te.compute((4, cols), lambda i, j: tir.exp(x[i, j] - mx[i, 0]) / sm[i, 0], name="out")
    sch = tiled_schedule(te.create_prim_func([x, out]), lanes=16)
    text = sch.mod.script()
    assert 'T.block("mx_rf")' in text and 'T.block("sm_rf")' in text and text.count("T.vectorized(16)") >= 2
    a = np.random.default_rng(0).standard_normal((4, cols)).astype("float32") * 4
    got = tvm.nd.array(np.zeros((4, cols), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), got)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got.numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_dense_weight_panel_is_packed_when_its_rows_alias_and_not_for_a_convolution():
    """A dense layer whose weight rows are 4 KiB apart (1024 float32 columns) copies each column tile's
    panel into a contiguous buffer at the column loop; a convolution (image rows around the column
    tile) and a small dense layer keep the plain layout."""
    def dense(n_cols):
        a = te.placeholder((64, 32), name="a")
        w = te.placeholder((32, n_cols), name="w")
        k = te.reduce_axis((0, 32), name="k")
        c = te.compute((64, n_cols), lambda i, j: te.sum(a[i, k] * w[k, j], axis=k), name="c")
        return te.create_prim_func([a, w, c])

    sch = tiled_schedule(dense(1024), lanes=16)
    assert 'T.block("w_global")' in sch.mod.script()
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((64, 32)).astype("float32"), rng.standard_normal((32, 1024)).astype("float32")
    got = tvm.nd.array(np.zeros((64, 1024), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(w), got)
    np.testing.assert_allclose(got.numpy(), a @ w, rtol=1e-4, atol=1e-4)
    assert "w_global" not in tiled_schedule(dense(96), lanes=16).mod.script()

    # a 3x3 convolution over 28-pixel rows (7-row tiles fill them, so its rows stay a loop of their own)
    data = te.placeholder((1, 30, 30, 32), name="data")
    weight = te.placeholder((3, 3, 32, 1024), name="weight")
    ry, rx = te.reduce_axis((0, 3), name="ry"), te.reduce_axis((0, 3), name="rx")
    rc = te.reduce_axis((0, 32), name="rc")
    conv = te.compute((1, 28, 28, 1024), lambda n, y, x, c: te.sum(
        data[n, y + ry, x + rx, rc] * weight[ry, rx, rc, c], axis=[ry, rx, rc]), name="conv")
    assert "weight_global" not in tiled_schedule(te.create_prim_func([data, weight, conv]), lanes=16).mod.script()


def test_register_tile_keeps_enough_accumulators_busy():
    """AVX-512 (16 lanes, 32 registers): 14 accumulator registers, rows guarded where none divides (a
    128-row dense layer: 7 rows x 32 columns, not 4 x 32); AVX2 (8 lanes, 16 registers): 12."""
    assert _register_tile(768, 128, 16) == (32, 7)
    assert _register_tile(512, 7, 16) == (32, 7)
    assert _register_tile(197, 197, 16)[0] == 16  # 197 columns: whole registers, the last one masked
    vec, rows = _register_tile(64, 56, 8)
    assert vec // 8 * rows <= 12


def test_batch_matmul_with_197_columns_accumulates_in_registers():
    """ViT's attention scores (197 x 64 times 64 x 197 per head): the column guard of the tile blends
    into the local accumulator instead of masking every load and store of it, and the result is exact."""
    from tensorize.ir import stmt as S
    from tensorize.ir.functor import post_order_visit

    q = te.placeholder((2, 197, 64), name="q")
    kt = te.placeholder((2, 64, 197), name="kt")
    r = te.reduce_axis((0, 64), name="r")
    s = te.compute((2, 197, 197), lambda b, i, j: te.sum(q[b, i, r] * kt[b, r, j], axis=r), name="s")
    out = te.compute((2, 197, 197), lambda b, i, j: s[b, i, j] / 8.0, name="out")
    sch = tiled_schedule(te.create_prim_func([q, kt, out]), lanes=16)
    low = tvm.lower(sch.mod)["main"]
    stores = []
    post_order_visit(low.body, lambda n: stores.append(n) if isinstance(n, S.BufferStore) else None)
    local = [st for st in stores if st.buffer.scope() == "local"]
    assert local and all(st.predicate is None for st in local)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 197, 64)).astype("float32"), rng.standard_normal((2, 64, 197)).astype("float32")
    got = tvm.nd.array(np.zeros((2, 197, 197), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(a), tvm.nd.array(b), got)
    np.testing.assert_allclose(got.numpy(), (a @ b) / 8.0, rtol=1e-4, atol=1e-4)


def _depthwise(h, c, stride):
    from tensorize import tir

    data = te.placeholder((1, h, h, c), name="data")
    weight = te.placeholder((3, 3, c), name="weight")
    pad = te.compute((1, h + 2, h + 2, c), lambda n, y, x, ch: tir.if_then_else(
        tir.all(y >= 1, y < h + 1, x >= 1, x < h + 1), data[n, y - 1, x - 1, ch], 0.0), name="pad")
    ry, rx = te.reduce_axis((0, 3), name="ry"), te.reduce_axis((0, 3), name="rx")
    out_h = (h - 1) // stride + 1
    conv = te.compute((1, out_h, out_h, c), lambda n, y, x, ch: te.sum(
        pad[n, y * stride + ry, x * stride + rx, ch] * weight[ry, rx, ch], axis=[ry, rx]), name="conv")
    return te.create_prim_func([data, weight, conv]), out_h


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("c", [64, 32, 40])
def test_depthwise_convolution_streams_rows(stride, c):
    """A depthwise convolution reads its input through the padding (no padded copy is allocated), its
    parallel loop over output rows and every channel tile inside a row tile (one ordered pass over the
    input and the output); results match numpy, channels that do not fill a register included."""
    from tensorize import tir

    h = 14
    func, out_h = _depthwise(h, c, stride)
    sch = tiled_schedule(func, lanes=16)
    names = [b.name for b in sch.get_child_blocks(sch.get_block("root"))]
    assert "pad" not in names
    loops = [sch.get(lp) for lp in sch.get_loops(sch.get_block("conv_update"))]
    assert loops[0].kind == tir.ForKind.PARALLEL and int(loops[0].extent) == out_h  # batch x rows
    assert loops[-1].kind == tir.ForKind.VECTORIZED  # channels innermost
    channel_tile = [lp for lp in loops if lp.loop_var.name.startswith("ch")][0]
    assert loops.index(channel_tile) == 2  # after the rows and the row tile's columns
    allocs = []
    tvm.tir.stmt_functor.post_order_visit(tvm.lower(sch.mod)["main"].body, lambda n: allocs.append(n)
                                          if type(n).__name__ == "Allocate" and n.buffer_var.name.startswith("pad")
                                          else None)
    assert not allocs
    rng = np.random.default_rng(0)
    d, w = rng.standard_normal((1, h, h, c)).astype("float32"), rng.standard_normal((3, 3, c)).astype("float32")
    got = tvm.nd.array(np.zeros((1, out_h, out_h, c), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(d), tvm.nd.array(w), got)
    p = np.pad(d, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = sum(p[:, i:i + stride * (out_h - 1) + 1:stride, j:j + stride * (out_h - 1) + 1:stride, :] * w[i, j]
               for i in range(3) for j in range(3))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_schedule_variants_add_the_streaming_order_for_image_reductions():
    """A convolution over 16 channels gets the tiled schedule and its streaming variant (padding read inline,
    rows outermost), both correct; a dense layer (no image axes) only the tiled one."""
    from tensorize import tir
    from tensorize.graph.default_schedule import schedule_variants

    h, ci, co = 10, 16, 32
    data = te.placeholder((1, h, h, ci), name="data")
    weight = te.placeholder((3, 3, ci, co), name="weight")
    pad = te.compute((1, h + 2, h + 2, ci), lambda n, y, x, c: tir.if_then_else(
        tir.all(y >= 1, y < h + 1, x >= 1, x < h + 1), data[n, y - 1, x - 1, c], 0.0), name="pad")
    ry, rx, rc = te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx"), te.reduce_axis((0, ci), "rc")
    conv = te.compute((1, h, h, co), lambda n, y, x, k: te.sum(pad[n, y + ry, x + rx, rc] * weight[ry, rx, rc, k],
                                                                axis=[ry, rx, rc]), name="conv")
    variants = schedule_variants(te.create_prim_func([data, weight, conv]), lanes=16)
    assert len(variants) == 2
    assert "pad" in [b.name for b in variants[0].get_child_blocks(variants[0].get_block("root"))]
    assert "pad" not in [b.name for b in variants[1].get_child_blocks(variants[1].get_block("root"))]
    rng = np.random.default_rng(0)
    d, w = rng.standard_normal((1, h, h, ci)).astype("float32"), rng.standard_normal((3, 3, ci, co)).astype("float32")
    p = np.pad(d, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = sum(np.einsum("nhwc,ck->nhwk", p[:, i:i + h, j:j + h], w[i, j]) for i in range(3) for j in range(3))
    for sch in variants:
        got = tvm.nd.array(np.zeros((1, h, h, co), "float32"))
        tvm.build(sch.mod, target="llvm")(tvm.nd.array(d), tvm.nd.array(w), got)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)
    a, b = te.placeholder((8, 64), name="a"), te.placeholder((64, 32), name="b")
    k = te.reduce_axis((0, 64), "k")
    dense = te.compute((8, 32), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="dense")
    assert len(schedule_variants(te.create_prim_func([a, b, dense]), lanes=16)) == 1


def _conv_nhwc(size, ci, co, k, epilogue):
    pad = k // 2
    data = te.placeholder((1, size + 2 * pad, size + 2 * pad, ci), name="data")
    weight = te.placeholder((k, k, ci, co), name="weight")
    ry, rx = te.reduce_axis((0, k), name="ry"), te.reduce_axis((0, k), name="rx")
    rc = te.reduce_axis((0, ci), name="rc")
    conv = te.compute((1, size, size, co), lambda n, y, x, c: te.sum(
        data[n, y + ry, x + rx, rc] * weight[ry, rx, rc, c], axis=[ry, rx, rc]), name="conv")
    if not epilogue:
        return te.create_prim_func([data, weight, conv])
    out = te.compute((1, size, size, co), lambda n, y, x, c: te.max(conv[0, y, x, c] + 1.0, 0.0), name="out")
    return te.create_prim_func([data, weight, out])


@pytest.mark.parametrize("k, epilogue", [(1, True), (3, True), (1, False)])
def test_a_small_image_tiles_its_pixels_not_its_rows(k, epilogue):
    """A 7x7 image: its rows and columns (and the buffer the epilogue reads) fuse into 49 pixels, so the
    register tile holds 6 pixels x 16 channels (the 7-pixel rows left 5 of 12 accumulators idle); the
    result is the convolution's."""
    func = _conv_nhwc(7, 96, 32, k, epilogue)
    sch = tiled_schedule(func, lanes=8)
    assert sum(inst.kind == "transform_block_layout" for inst in sch.trace.insts) == 2
    rng = np.random.default_rng(0)
    d = rng.standard_normal((1, 7 + k - 1, 7 + k - 1, 96)).astype("float32")
    w = rng.standard_normal((k, k, 96, 32)).astype("float32")
    want = sum(np.einsum("nyxc,cd->nyxd", d[:, i:i + 7, j:j + 7], w[i, j]) for i in range(k) for j in range(k))
    if epilogue:
        want = np.maximum(want + 1.0, 0.0)
    got = tvm.nd.array(np.zeros((1, 7, 7, 32), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(d), tvm.nd.array(w), got)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_rows_a_tile_fills_stay_apart():
    """12-pixel rows take two tiles of 6 exactly: fusing them gains nothing, so the loops stay as they are."""
    sch = tiled_schedule(_conv_nhwc(12, 96, 32, 1, True), lanes=8)
    assert not any(inst.kind == "transform_block_layout" for inst in sch.trace.insts)


def test_a_1x1_convolution_over_16_channels_is_tiled_not_streamed():
    """Up to 64 products per output is a window (streamed, rows outermost) for a depthwise or 3-channel
    convolution; a 1x1 convolution's reduction over 16 or more channels is a matrix product, tiled."""
    from tensorize.graph.default_schedule import _window_only
    from tensorize.schedule import Schedule

    def first_block(func):
        sch = Schedule(func)
        return sch, sch.get_block("conv")

    assert not _window_only(*first_block(_conv_nhwc(14, 32, 64, 1, False)))
    assert _window_only(*first_block(_conv_nhwc(14, 3, 64, 3, False)))
    assert _window_only(*first_block(_conv_nhwc(14, 8, 64, 1, False)))


def test_a_winograd_gemm_keeps_its_tile_positions_apart():
    """``M[t, p, c] = sum V[t, p, k] U[t, k, c]`` over 16 tile positions of 49 tiles: the weight changes with
    ``t``, so fusing ``t`` and ``p`` would put rows of different weights in one register tile (1.6x slower)."""
    v, u = te.placeholder((16, 49, 256), name="v"), te.placeholder((16, 256, 256), name="u")
    k = te.reduce_axis((0, 256), name="k")
    m = te.compute((16, 49, 256), lambda t, p, c: te.sum(v[t, p, k] * u[t, k, c], axis=k), name="m")
    sch = tiled_schedule(te.create_prim_func([v, u, m]), lanes=8)
    assert not any(inst.kind == "transform_block_layout" for inst in sch.trace.insts)


def _phases(q=4, taps=2, ci=32, co=16):
    """A transposed convolution's phase block: output phases ``py, px`` pick the kernel taps."""
    data = te.placeholder((q + taps, q + taps, ci), name="data")
    kernel = te.placeholder((2 * taps, 2 * taps, ci, co), name="kernel")
    ty, tx, rc = te.reduce_axis((0, taps), "ty"), te.reduce_axis((0, taps), "tx"), te.reduce_axis((0, ci), "rc")
    out = te.compute((q, 2, q, 2, co), lambda qy, py, qx, px, o: te.sum(
        data[qy + ty + py, qx + tx + px, rc] * kernel[2 * ty + py, 2 * tx + px, rc, o], axis=[ty, tx, rc]),
        name="phases")
    rng = np.random.default_rng(0)
    d, w = rng.standard_normal((q + taps, q + taps, ci), "float32"), rng.standard_normal((4, 4, ci, co), "float32")
    want = np.zeros((q, 2, q, 2, co))
    for qy, py, qx, px, t, s in np.ndindex(q, 2, q, 2, taps, taps):
        want[qy, py, qx, px] += d[qy + t + py, qx + s + px] @ w[2 * t + py, 2 * s + px]
    return data, kernel, out, d, w, want


def _unrolled(sch, block):
    return [(sch.get(lp).loop_var.name, int(sch.get(lp).extent)) for lp in sch.get_loops(sch.get_block(block))
            if sch.get(lp).kind.name == "UNROLLED"]


def test_register_rows_reuse_the_weight_vectors():
    """Rows of phases would each need their own weight vectors, so the tile's rows are the output columns
    (``qx``) instead (the phases written to the function's output: the loops are reordered), and it still
    computes the same sums."""
    data, kernel, out, d, w, want = _phases()
    sch = tiled_schedule(te.create_prim_func([data, kernel, out]), lanes=8)
    assert _unrolled(sch, "phases_update") == [("qx_1", 4)]
    got = tvm.nd.array(np.zeros(want.shape, "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(d), tvm.nd.array(w), got)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_register_rows_of_an_intermediate_permute_its_layout():
    """Phases written to an intermediate that a later stage interleaves: the block's iterators and the buffer's
    layout are permuted together (phases outer, the output rows and columns innermost before the channels),
    and the rows and columns then fuse into 16 pixels, tiles of 6 of them filling 12 accumulators (the
    interleaving stage, of another shape, runs as a pass of its own)."""
    data, kernel, phases, d, w, want = _phases()
    q, co = 4, 16
    out = te.compute((2 * q, 2 * q, co), lambda y, x, o: phases[y // 2, y % 2, x // 2, x % 2, o], name="out")
    sch = tiled_schedule(te.create_prim_func([data, kernel, out]), lanes=8)
    kinds = [inst.kind for inst in sch.trace.insts]
    assert "transform_layout" in kinds and "transform_block_layout" in kinds
    assert [extent for _, extent in _unrolled(sch, "phases_update")] == [6]
    got = tvm.nd.array(np.zeros((2 * q, 2 * q, co), "float32"))
    tvm.build(sch.mod, target="llvm")(tvm.nd.array(d), tvm.nd.array(w), got)
    # out[2 qy + py, 2 qx + px] = phases[qy, py, qx, px]: the phases' axes in order, reshaped
    np.testing.assert_allclose(got.numpy(), want.reshape(2 * q, 2 * q, co), rtol=1e-4, atol=1e-4)
