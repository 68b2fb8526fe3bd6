"""The direct NHWC AMX convolution (``intrinsics.x86_amx_conv``): exact int8 and bf16 results on the tile model,
as scheduled and as lowered (accumulators zeroed once and kept in tiles across the taps), the assembly for an AMX
CPU, the emulated program compiled for any CPU, and the errors for shapes the tiles do not divide."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tensorize as tvm
from tensorize.codegen.python.interpreter import run_prim_func

from intrinsics.x86_amx_conv import (amx_conv2d_direct, direct_rows, flatten_input, output_pixels, pack_conv_weight,
                                     schedule_amx_conv2d_direct)
from intrinsics.x86_amx_model import AMXModel, bf16_to_f32

SPR = "llvm -mcpu=sapphirerapids"


def _operands(dtype, N, H, W, CI, CO, KH, KW, seed=0):
    """data (NHWC), weight[co, rh, rw, ci] and the float64 NHWC reference."""
    rng = np.random.default_rng(seed)
    if dtype == "bfloat16":  # bf16 bit patterns of values in [0.5, 2), either sign
        def bits(shape):
            return (rng.integers(0x3F00, 0x4000, shape) | (rng.integers(0, 2, shape) << 15)).astype(np.uint16)
        data, weight, value = bits((N, H, W, CI)), bits((CO, KH, KW, CI)), bf16_to_f32
    else:
        data = rng.integers(0, 256, (N, H, W, CI)).astype(np.uint8)
        weight = rng.integers(-128, 128, (CO, KH, KW, CI)).astype(np.int8)
        value = np.asarray
    OH, OW = H - KH + 1, W - KW + 1
    d, w = value(data).astype(np.float64), value(weight).astype(np.float64)
    ref = sum(np.einsum("nhwc,oc->nhwo", d[:, r:r + OH, s:s + OW], w[:, r, s]) for r in range(KH) for s in range(KW))
    return data, weight, ref


@pytest.mark.parametrize("dtype,shape,tiles", [("uint8", (1, 12, 12, 64, 32, 3, 3), (2, 2)),
                                               ("uint8", (2, 7, 9, 128, 16, 2, 3), (1, 1)),
                                               ("bfloat16", (1, 9, 10, 32, 32, 3, 3), (2, 2))])
def test_direct_conv_on_the_tile_model(dtype, shape, tiles):
    N, H, W, CI, CO, KH, KW = shape
    w_dtype = "int8" if dtype == "uint8" else dtype
    m_tiles, n_tiles = tiles
    func = amx_conv2d_direct(*shape, dtype=dtype, w_dtype=w_dtype, rows=16 * m_tiles)
    sch = schedule_amx_conv2d_direct(func, m_tiles, n_tiles, parallel=True)
    data, weight, ref = _operands(dtype, *shape)
    flat = flatten_input(data, KH, KW, rows=16 * m_tiles)
    packed = pack_conv_weight(weight, 4 if dtype == "uint8" else 2)
    lowered = tvm.lower(sch.mod)
    text = lowered.script()
    # the taps loop around the calls: accumulators zeroed before it, stored after it, never loaded from out
    accumulators = m_tiles * n_tiles
    assert text.count('"llvm.x86.tilezero"') == accumulators and text.count('"llvm.x86.tilestored64"') == accumulators
    assert "out_1[" not in text.split("for r")[1].split("tilestored64")[0]
    for program in (sch.mod, lowered):
        out = np.full((direct_rows(N, H, W, KH, KW, 16 * m_tiles)[1], CO), 7,
                      np.float32 if dtype == "bfloat16" else np.int32)
        run_prim_func(program, flat, packed, out, externs=AMXModel().externs())
        got = out[output_pixels(N, H, W, KH, KW)]
        if dtype == "uint8":
            np.testing.assert_array_equal(got, ref)
        else:  # f32 accumulation of exact bf16 products
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-3 * KH * KW * CI)


def test_direct_conv_assembly_and_emulation():
    shape = (1, 12, 12, 64, 32, 3, 3)
    sch = schedule_amx_conv2d_direct(amx_conv2d_direct(*shape))
    asm = tvm.build(sch.mod, target=SPR).get_source("asm")
    assert len(re.findall(r"\btdpbusd\b", asm)) >= 4 and "ldtilecfg" in asm and "tilezero" in asm
    emulated = schedule_amx_conv2d_direct(amx_conv2d_direct(*shape), emulate=True)
    data, weight, ref = _operands("uint8", *shape, seed=1)
    out = tvm.nd.array(np.zeros((direct_rows(1, 12, 12, 3, 3)[1], 32), np.int32))
    tvm.build(emulated.mod, target="llvm")(tvm.nd.array(flatten_input(data, 3, 3)),
                                           tvm.nd.array(pack_conv_weight(weight, 4)), out)
    np.testing.assert_array_equal(out.numpy()[output_pixels(1, 12, 12, 3, 3)], ref)


@pytest.mark.parametrize("shape,rows,message", [((1, 8, 8, 48, 32, 3, 3), 32, "input channels in multiples of 64"),
                                                ((1, 8, 8, 64, 24, 3, 3), 32, "output channels in multiples of 32"),
                                                ((1, 8, 8, 64, 32, 3, 3), 16, "rows=32")])
def test_direct_conv_rejects_shapes_the_tiles_do_not_divide(shape, rows, message):
    with pytest.raises(ValueError, match=message):
        schedule_amx_conv2d_direct(amx_conv2d_direct(*shape, rows=rows))
