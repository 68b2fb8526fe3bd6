"""``SwizzleSharedLayout``: the permutation is the Tensor Cores' swizzle (PTX ISA: the 16-byte chunk of an
address XORed with its 128-byte row within each 8-row, 1024-byte span), lowering moves every access of an
annotated shared buffer to it, and bad annotations raise."""
from __future__ import annotations

import numpy as np
import pytest

import tensorize as tvm
from tensorize import te
from tensorize.arith.evaluate import evaluate
from tensorize.ir import expr as E
from tensorize.ir.buffer import decl_buffer
from tensorize.transform.gpu_ptx_model import _swizzled_tile
from tensorize.transform.swizzle_shared import SWIZZLE, swizzle_indices, swizzled_offset


@pytest.mark.parametrize("mode", [32, 64, 128])
def test_offsets_follow_the_row_and_chunk_rule(mode):
    """Rows of ``mode`` bytes: chunk c of row r lands on chunk c ^ ((r * mode / 128) % (mode / 16))."""
    per_row, chunks = mode // 2, mode // 16
    for r in range(16):
        for k in range(per_row):
            row_in_span = (r * mode // 128) % chunks
            expected = r * per_row + ((k // 8) ^ row_in_span) * 8 + k % 8
            assert swizzled_offset(r * per_row + k, 2, mode) == expected


@pytest.mark.parametrize("mode", [32, 64, 128])
def test_symbolic_indices_equal_the_offsets(mode):
    buf = decl_buffer((3, 16, mode // 2), "float16", name="S", scope="shared")
    s, r, k = (E.Var(name, "int32") for name in "srk")
    idx = swizzle_indices(buf, [s, r, k], mode)
    for point in [(0, 0, 0), (1, 3, 9), (2, 15, mode // 2 - 1), (0, 7, 8), (1, 9, mode // 2 - 8)]:
        env = dict(zip((s, r, k), point))
        flat = (evaluate(idx[0], env) * 16 + evaluate(idx[1], env)) * (mode // 2) + evaluate(idx[2], env)
        assert flat == swizzled_offset((point[0] * 16 + point[1]) * (mode // 2) + point[2], 2, mode)


def test_the_model_reads_the_logical_tile_back():
    """A tile stored permuted, read through a 128-byte swizzled descriptor, is the logical tile."""
    logical = np.arange(64 * 64, dtype="float16").reshape(64, 64)
    physical = np.zeros(64 * 64, "float16")
    for f in range(64 * 64):
        physical[swizzled_offset(f, 2, 128)] = logical.reshape(-1)[f]
    from tensorize.codegen.python import Pointer

    for step in range(4):  # a k16 step starts 16 elements into the rows
        tile = _swizzled_tile(Pointer(physical, 16 * step), 64, 8 * 64, 128)
        np.testing.assert_array_equal(tile, logical[:, 16 * step:16 * step + 16])


def _copy_through_shared(n_cols, mode, scope="shared"):
    A = te.placeholder((32, n_cols), "float16", name="A")
    B = te.compute((32, n_cols), lambda i, j: A[i, j] * tvm.tir.const(2, "float16"), name="B")
    sch = tvm.tir.Schedule(te.create_prim_func([A, B]))
    shared = sch.cache_read(sch.get_block("B"), 0, scope)
    sch.annotate(shared, SWIZZLE, mode)
    return sch


def test_lowering_permutes_every_access_consistently():
    sch = _copy_through_shared(64, 128)
    lowered = tvm.lower(sch.mod)
    assert "T.bitwise_xor" in lowered.script()
    a = np.random.default_rng(0).uniform(-1, 1, (32, 64)).astype("float16")
    b = np.zeros((32, 64), "float16")
    tvm.build(lowered, target="llvm")["main"](tvm.nd.array(a), out := tvm.nd.array(b))
    np.testing.assert_array_equal(out.numpy(), a * np.float16(2))


def test_rows_not_a_multiple_of_the_swizzle_are_refused():
    with pytest.raises(tvm.TVMError, match="multiple of 64 elements"):
        tvm.lower(_copy_through_shared(48, 128).mod)


def test_only_shared_buffers_are_swizzled():
    with pytest.raises(tvm.TVMError, match="only shared buffers"):
        tvm.lower(_copy_through_shared(64, 128, scope="local").mod)


def test_unknown_modes_are_refused():
    with pytest.raises(tvm.TVMError, match="one of"):
        tvm.lower(_copy_through_shared(64, 96).mod)


def test_padded_rows_are_refused():
    """storage_align padding moves row starts off the swizzle's boundaries: the hardware's chunk bits would
    no longer be the column's."""
    sch = _copy_through_shared(64, 128)
    sch.storage_align(sch.get_block("A_shared"), 0, axis=0, factor=64, offset=8)
    with pytest.raises(tvm.TVMError, match="rows starting on 128-byte boundaries"):
        tvm.lower(sch.mod)
