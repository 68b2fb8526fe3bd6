"""A direct (no im2col) NHWC convolution on AMX tiles: the input's pixels are flattened, so the A tile of a tap
``(rh, rw)`` is 16 consecutive input pixels x their channels, one contiguous block read where it lies.

The convolution is computed on "wide" output rows: output pixel ``p = (n * H + oh) * W + ow`` for every ``ow <
W`` (the ``KW - 1`` columns past ``OW`` and the rows past ``OH`` are computed and ignored, about 7% extra work for
56 x 56 x 3 x 3), so that for every tap the A rows of consecutive pixels are consecutive input pixels::

    out[p, co] += data[p + rh * W + rw, ci] * weight[co, rh, rw, ci]

The schedule tensorizes the pixels x output channels x input channels of one tap with a GEMM intrinsic
(``x86_amx``, all of the channels in one call) and leaves the taps as loops around the call; lowering then keeps
the accumulators in their tiles across the taps (``PromoteTileAccumulators``) and zeroes them with ``tilezero``
(``FuseTileZero``), so each block of 32 pixels x 32 channels runs ``tilezero``, 9 taps of loads and dot products,
and one store.

>>> conv = amx_conv2d_direct(1, 12, 12, 64, 32, 3, 3)
>>> [tuple(int(s) for s in conv.buffer_map[p].shape) for p in conv.params]
[(154, 64), (32, 3, 3, 64), (128, 32)]
"""
from __future__ import annotations

import numpy as np

from tensorize.schedule import Schedule
from tensorize.script import tir as T

from .x86_amx import amx_matmul_intrin, emulation_intrin
from .x86_amx_schedule import _operands
from .x86_amx_tiles import INSTRUCTIONS


def direct_rows(N: int, H: int, W: int, KH: int, KW: int, rows: int = 32) -> tuple[int, int]:
    """The flat input's and output's row counts: output pixels up to the last valid one, rounded up to ``rows``;
    input pixels as far as the last tap of the last output row reads (zeros past ``N * H * W``).

    Parameters
    ----------
    N, H, W : int
        Batch, height and width of the input.
    KH, KW : int
        The kernel's height and width.
    rows : int
        Output pixels per block (16 x the accumulator tiles a block stacks).

    Returns
    -------
    (int, int)
        ``(input rows, output rows)``.

    Examples
    --------
    >>> direct_rows(1, 56, 56, 3, 3)
    (3154, 3040)
    """
    last = ((N - 1) * H + H - KH) * W + W - KW
    out_rows = -(-(last + 1) // rows) * rows
    return out_rows + (KH - 1) * W + KW - 1, out_rows


def amx_conv2d_direct(N: int, H: int, W: int, CI: int, CO: int, KH: int, KW: int, dtype: str = "uint8",
                      w_dtype: str = "int8", rows: int = 32):
    """The stride-1, unpadded NHWC convolution on flat pixels (``out[p, co] += data[p + rh * W + rw, ci] *
    weight[co, rh, rw, ci]``, block ``"C"``).

    Parameters
    ----------
    N, H, W, CI : int
        Batch, height, width and channels of the input.
    CO : int
        Output channels.
    KH, KW : int
        The kernel's height and width (``OH = H - KH + 1``).
    dtype, w_dtype : str
        The data's and the weights' dtypes, a pair of ``INSTRUCTIONS``.
    rows : int
        Output pixels per block, which the output rows are rounded up to.

    Returns
    -------
    PrimFunc
        Taking ``data`` (``flatten_input``), ``weight[co, rh, rw, ci]`` and ``out`` (``direct_rows`` x CO; the
        valid pixels at ``output_pixels``).
    """
    in_rows, out_rows = direct_rows(N, H, W, KH, KW, rows)
    c_dtype = INSTRUCTIONS[(dtype, w_dtype)][1]
    zero = T.float32(0) if c_dtype == "float32" else T.int32(0)

    @T.prim_func
    def conv(data: T.Buffer((in_rows, CI), dtype), weight: T.Buffer((CO, KH, KW, CI), w_dtype),
             out: T.Buffer((out_rows, CO), c_dtype)):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for p, co, r, s, ci in T.grid(out_rows, CO, KH, KW, CI):
            with T.block("C"):
                vp, vco, vr, vs, vci = T.axis.remap("SSRRR", [p, co, r, s, ci])
                with T.init():
                    out[vp, vco] = zero
                out[vp, vco] = out[vp, vco] + T.Cast(c_dtype, data[vp + vr * W + vs, vci]) * \
                    T.Cast(c_dtype, weight[vco, vr, vs, vci])

    return conv


def flatten_input(data: np.ndarray, KH: int, KW: int, rows: int = 32) -> np.ndarray:
    """An NHWC input as the flat rows ``amx_conv2d_direct`` reads: its pixels in order, then zero rows.

    Parameters
    ----------
    data : numpy.ndarray
        ``(N, H, W, CI)``.
    KH, KW : int
        The kernel's height and width.
    rows : int
        The function's ``rows``.

    Returns
    -------
    numpy.ndarray
        ``(input rows, CI)``.
    """
    N, H, W, CI = data.shape
    flat = np.zeros((direct_rows(N, H, W, KH, KW, rows)[0], CI), data.dtype)
    flat[:N * H * W] = data.reshape(-1, CI)
    return flat


def output_pixels(N: int, H: int, W: int, KH: int, KW: int) -> np.ndarray:
    """The flat output rows of the valid pixels, as an ``(N, OH, OW)`` index array (``out[output_pixels(...)]`` is
    the NHWC result).

    Parameters
    ----------
    N, H, W : int
        Batch, height and width of the input.
    KH, KW : int
        The kernel's height and width.

    Returns
    -------
    numpy.ndarray
        Row indices.

    Examples
    --------
    >>> output_pixels(1, 4, 4, 3, 3).tolist()
    [[[0, 1], [4, 5]]]
    """
    OH, OW = H - KH + 1, W - KW + 1
    return (np.arange(N)[:, None, None] * H * W + np.arange(OH)[None, :, None] * W + np.arange(OW)[None, None, :])


def pack_conv_weight(weight: np.ndarray, pack: int) -> np.ndarray:
    """``weight[co, rh, rw, ci]`` in the layout the scheduled convolution takes: ``[rh, rw, co // 16, ci // pack,
    co % 16, ci % pack]`` (per tap, B tiles in the VNNI layout, as ``x86_amx_schedule.pack_b``).

    Parameters
    ----------
    weight : numpy.ndarray
        ``(CO, KH, KW, CI)``.
    pack : int
        4 for int8, 2 for bf16.

    Returns
    -------
    numpy.ndarray
        The packed weights.
    """
    CO, KH, KW, CI = weight.shape
    return np.ascontiguousarray(weight.reshape(CO // 16, 16, KH, KW, CI // pack, pack).transpose(2, 3, 0, 4, 1, 5))


def schedule_amx_conv2d_direct(func, m_tiles: int = 2, n_tiles: int = 2, parallel: bool = True,
                               emulate: bool = False) -> Schedule:
    """Tensorize ``amx_conv2d_direct``: blocks of ``16 m_tiles`` pixels x ``16 n_tiles`` output channels, each an
    AMX call per tap over all the input channels, the taps as loops around the calls.

    Parameters
    ----------
    func : PrimFunc
        A convolution made by ``amx_conv2d_direct`` (with ``rows = 16 * m_tiles``).
    m_tiles, n_tiles : int
        Accumulator tiles per block.
    parallel : bool
        Run the blocks on all threads.
    emulate : bool
        Use the intrinsic's emulation twin (its description as plain code).

    Returns
    -------
    Schedule
        The weights become ``pack_conv_weight``'s layout.

    Raises
    ------
    ValueError
        When the channels or the output rows do not divide into the intrinsic's tiles.

    Examples
    --------
    >>> sch = schedule_amx_conv2d_direct(amx_conv2d_direct(1, 12, 12, 64, 32, 3, 3), parallel=False)
    >>> "matmul_32x32x64_u8i8s32_amx" in str(sch.trace)
    True
    """
    sch = Schedule(func)
    block = sch.get_block("C")
    data, weight = _operands(sch, block)
    out_rows, CO = (int(s) for s in sch.get(block).writes[0].buffer.shape)
    CI = int(data.shape[1])
    _, _, k_step, _ = INSTRUCTIONS[(data.dtype, weight.dtype)]
    pack = 4 if k_step == 64 else 2
    tm, tn = 16 * m_tiles, 16 * n_tiles
    if CI % k_step or CO % tn or out_rows % tm:
        raise ValueError(f"the direct AMX convolution needs input channels in multiples of {k_step} (got {CI}), "
                         f"output channels in multiples of {tn} (got {CO}) and output rows in multiples of {tm} "
                         f"(got {out_rows}: make the function with rows={tm})")
    sch.transform_layout(block, ("read", 1), lambda co, r, s, ci: (r, s, co // 16, ci // pack, co % 16, ci % pack))
    p, co, r, s, ci = sch.get_loops(block)
    p_o, p_i = sch.split(p, [None, tm])
    co_o, co_i = sch.split(co, [None, tn])
    sch.reorder(p_o, co_o, r, s, p_i, co_i, ci)
    name = amx_matmul_intrin(data.dtype, weight.dtype, m_tiles, n_tiles, CI // k_step)
    sch.tensorize(p_i, emulation_intrin(name) if emulate else name)
    if parallel:
        sch.parallel(sch.fuse(p_o, co_o))
    return sch


__all__ = ["amx_conv2d_direct", "direct_rows", "flatten_input", "output_pixels", "pack_conv_weight",
           "schedule_amx_conv2d_direct"]
