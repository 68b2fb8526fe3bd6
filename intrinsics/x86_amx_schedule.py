"""Hand schedules of GEMMs on Intel AMX tiles (``intrinsics.x86_amx``), and their workloads.

``schedule_amx_gemm`` pads the GEMM where its shape does not divide the tile block
(``pad_einsum``), packs B into the VNNI layout AMX reads (``transform_layout``: ``B[j, k]`` ->
``B[j // 16, k // 4, j % 16, k % 4]``, bf16 ``k // 2``), splits i, j and k into blocks of
``16 * m_tiles`` x ``16 * n_tiles`` x ``k_steps`` tile steps, sweeps M once per panel of B columns
that stays in L2 (``panel_blocks``: an unblocked sweep streams the whole of B, 2 MiB for a bf16 1024^2,
from L3 for every block row), tensorizes the block with the AMX
intrinsic that keeps its ``m_tiles * n_tiles`` accumulators in tile registers, and runs the blocks
of C in parallel. ``stationary`` moves the K chunks outside the blocks that reuse A's chunk (``"a"``) or B's
(``"b"``) from L1; ``pack_a`` copies A into contiguous tiles first.

When nothing is padded, B is packed in the function's signature: the caller passes it pre-packed
(``pack_b``). When the GEMM is padded the packing happens inside, in the copy that pads B.

``emulation_schedule`` gives the same program with the intrinsic's description in place of the
instructions, so LLVM compiles it for any x86 CPU: its numbers check the schedule (padding, packing,
blocking) where the CPU has no AMX.

>>> sch = schedule_amx_gemm(amx_gemm(64, 64, 128))
>>> "llvm.x86.tdpbusd" in sch.mod.script()
True
"""
from __future__ import annotations

import numpy as np

from tensorize.schedule import Schedule
from tensorize.script import tir as T

from .x86_amx import INSTRUCTIONS, amx_matmul_intrin, emulation_intrin

MAX_K_STEPS = 32  # a 1024-long K in one call for bf16 too (32 steps of 32)
#: bytes of packed B one sweep over M keeps hot (a quarter of a Sapphire Rapids core's 2 MiB L2)
B_PANEL_BYTES = 512 * 1024
#: rows of C one region covers when B's chunk is the L1-stationary operand (``stationary="b"``): with a 256-column
#: panel, a 256 x 256 f32 region (256 KiB) and its A chunk stay in L2 across the K chunks
B_STATIONARY_ROWS = 256


def amx_gemm(M: int, N: int, K: int, a_dtype: str = "uint8", b_dtype: str = "int8"):
    """``C[i, j] = sum_k A[i, k] * B[j, k]``: A (M, K), B (N, K), C (M, N) in the accumulator dtype of the
    AMX instruction for ``a_dtype`` x ``b_dtype`` (int32 for int8 pairs, float32 for bf16).

    Parameters
    ----------
    M, N, K : int
        The GEMM's extents.
    a_dtype, b_dtype : str
        The operands' dtypes, a pair of ``INSTRUCTIONS`` (``"uint8"``/``"int8"`` or ``"bfloat16"``).

    Returns
    -------
    PrimFunc
        The GEMM, its block named ``"C"``.
    """
    c_dtype = INSTRUCTIONS[(a_dtype, b_dtype)][1]
    zero = T.float32(0) if c_dtype == "float32" else T.int32(0)

    @T.prim_func
    def gemm(A: T.Buffer((M, K), a_dtype), B: T.Buffer((N, K), b_dtype), C: T.Buffer((M, N), c_dtype)):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = zero
                C[vi, vj] = C[vi, vj] + T.Cast(c_dtype, A[vi, vk]) * T.Cast(c_dtype, B[vj, vk])

    return gemm


def pack_b(b: np.ndarray, pack: int = 4) -> np.ndarray:
    """(N, K) -> (N/16, K/pack, 16, pack): the VNNI-packed B the schedule's signature takes when unpadded
    (``pack`` 4 for int8, 2 for bf16 bit patterns).

    Parameters
    ----------
    b : numpy.ndarray
        B as ``(N, K)``, N a multiple of 16 and K of ``pack``.
    pack : int
        Elements per 32-bit group: 4 for int8, 2 for bf16.

    Returns
    -------
    numpy.ndarray
        The packed, contiguous copy.

    Examples
    --------
    >>> import numpy as np
    >>> pack_b(np.zeros((32, 128), np.int8)).shape
    (2, 32, 16, 4)
    """
    n, k = b.shape
    return np.ascontiguousarray(b.reshape(n // 16, 16, k // pack, pack).transpose(0, 2, 1, 3))


def default_k_steps(K: int, k_step: int) -> int:
    """The most tile steps (at most ``MAX_K_STEPS``) that divide the padded K.

    Parameters
    ----------
    K : int
        The reduction extent.
    k_step : int
        Elements of K one tile step covers (64 for int8, 32 for bf16).

    Returns
    -------
    int
        Tile steps per intrinsic call.

    Examples
    --------
    >>> default_k_steps(128, 64), default_k_steps(1280, 64)
    (2, 20)
    """
    steps = -(-K // k_step)
    return max(s for s in range(1, min(steps, MAX_K_STEPS) + 1) if steps % s == 0)


def panel_blocks(n_blocks: int, block_bytes: int, budget: int = B_PANEL_BYTES) -> int:
    """The most column blocks of B (a divisor of ``n_blocks``) whose packed panel fits ``budget`` bytes.

    Parameters
    ----------
    n_blocks : int
        Column blocks of C (``N / (16 * n_tiles)``).
    block_bytes : int
        Bytes of packed B one column block reads over the whole K.
    budget : int
        Bytes the panel may take.

    Returns
    -------
    int
        Blocks per panel (at least 1).

    Examples
    --------
    >>> panel_blocks(32, 32 * 1024 * 2), panel_blocks(32, 32 * 1024)
    (8, 16)
    """
    fits = [d for d in range(1, n_blocks + 1) if n_blocks % d == 0 and d * block_bytes <= budget]
    return max(fits, default=1)


def schedule_amx_gemm(func, m_tiles: int = 2, n_tiles: int = 2, k_steps: int | None = None,
                      parallel: bool = True, intrin=None, emulate: bool = False, stationary: str | None = None,
                      panel_bytes: int = B_PANEL_BYTES, pack_a: bool = False,
                      region_rows: int = B_STATIONARY_ROWS) -> Schedule:
    """Tensorize the GEMM ``func`` (as made by ``amx_gemm``) with AMX tiles.

    Parameters
    ----------
    func : PrimFunc
        A GEMM with block ``"C"`` computing ``C[i, j] += A[i, k] * B[j, k]``.
    m_tiles, n_tiles : int
        Accumulator tiles per block (2 x 2 uses all 8 tile registers).
    k_steps : int, optional
        Tile steps of K per intrinsic call (default: ``default_k_steps``).
    parallel : bool
        Run the blocks of C on all threads.
    intrin : str | TensorIntrin, optional
        Tensorize with this intrinsic instead (same shape).
    emulate : bool
        Use the AMX intrinsic's emulation twin (its description as plain code, ``x86_amx.emulation_intrin``):
        the same program for any CPU.
    stationary : {None, "a", "b"}
        Which operand's chunk of ``k_steps`` tile steps stays in L1 while the other streams from L2 (the
        accumulators are stored and reloaded between chunks). None: each block of C runs its K chunks in a row,
        streaming both A and B. ``"a"``: K chunks outside the panel's column blocks, the block row's chunk of A
        reused by each column block (pack A too, ``pack_a``: a row-major A chunk's tile rows share L1 sets).
        ``"b"``: regions of ``region_rows`` x (panel) of C, K chunks outside, each column block's chunk of B
        (contiguous in the packed layout) reused by every row block of the region.
    panel_bytes : int
        Bytes of packed B one sweep over M keeps hot (``panel_blocks``'s budget).
    pack_a : bool
        Copy A, in the call, into tiles of one contiguous KiB each (``A[i // 16, k // k_step, i % 16, k %
        k_step]``, the ``_pa`` intrinsics): a tile's 16 rows then never share L1 sets (a row-major A with a
        power-of-two row length of 1 KiB or more puts them in one or two), at the cost of one pass over A.
    region_rows : int
        Rows of C one region covers when ``stationary="b"`` (their accumulators and A chunk stay in L2).

    Returns
    -------
    Schedule
    """
    if stationary not in (None, "a", "b"):
        raise ValueError(f"stationary must be None, 'a' or 'b', got {stationary!r}")
    sch = Schedule(func)
    block = sch.get_block("C")
    A, B = _operands(sch, block)
    M, N, K = (int(iv.dom.extent) for iv in sch.get(block).iter_vars)  # A may be a view of a wider buffer
    _, _, k_step, _ = INSTRUCTIONS[(A.dtype, B.dtype)]
    pack = 4 if k_step == 64 else 2
    k_steps = k_steps or default_k_steps(K, k_step)
    tm, tn, tk = 16 * m_tiles, 16 * n_tiles, k_step * k_steps
    if M % tm or N % tn or K % tk:
        sch.pad_einsum(block, [tm, tn, tk])
    sch.transform_layout(block, ("read", 1), lambda j, k: (j // 16, k // pack, j % 16, k % pack))
    if pack_a:
        _pack_a(sch, block, k_step, parallel)
    i, j, k = sch.get_loops(block)
    n_padded, k_padded = -(-N // tn) * tn, -(-K // tk) * tk
    panel = panel_blocks(n_padded // tn, tn * k_padded * (2 if A.dtype == "bfloat16" else 1), panel_bytes)
    j_oo, j_oi, j_i = sch.split(j, [None, panel, tn])
    k_o, k_i = sch.split(k, [None, tk])
    if stationary == "b":
        rows = panel_blocks(-(-M // tm), tm, region_rows)  # the most row blocks that divide M within the rows
        i_oo, i_oi, i_i = sch.split(i, [None, rows, tm])
        sch.reorder(i_oo, j_oo, k_o, j_oi, i_oi, i_i, j_i, k_i)
        outer = (i_oo, j_oo)
    else:
        i_o, i_i = sch.split(i, [None, tm])
        sch.reorder(*((j_oo, i_o, k_o, j_oi) if stationary == "a" else (j_oo, i_o, j_oi, k_o)), i_i, j_i, k_i)
        outer = (j_oo, i_o)
    name = amx_matmul_intrin(A.dtype, B.dtype, m_tiles, n_tiles, k_steps, a_packed=pack_a)
    sch.tensorize(i_i, intrin or (emulation_intrin(name) if emulate else name))
    if parallel:
        sch.parallel(sch.fuse(*outer))
    return sch


def _pack_a(sch: Schedule, block, k_step: int, parallel: bool) -> None:
    """Copy the GEMM's A (read 0) into a buffer of tiles, rows of the copy in parallel, each tile row one
    vector."""
    copy = sch.cache_read(block, 0, "global")
    sch.transform_layout(block, ("read", 0), lambda i, k: (i // 16, k // k_step, i % 16, k % k_step))
    rows, cols = sch.get_loops(copy)
    _, lanes = sch.split(cols, [None, k_step])
    sch.vectorize(lanes)
    if parallel:
        sch.parallel(rows)


def _operands(sch: Schedule, block):
    """The buffers the GEMM block reads as A and B (the accumulator C is read too, first)."""
    reads = [r.buffer for r in sch.get(block).reads]
    inputs = [b for b in reads if b.dtype in ("uint8", "int8", "bfloat16")]
    if len(inputs) != 2:
        raise ValueError(f"block C must read two int8/bf16 operands A[i, k] and B[j, k], it reads "
                         f"{[b.name for b in reads]}")
    return inputs


def amx_conv2d_nhwc(N: int, H: int, W: int, CI: int, CO: int, KH: int, KW: int, dtype: str = "uint8",
                    w_dtype: str = "int8"):
    """A stride-1 NHWC conv2d as an im2col GEMM: block ``"im2col"`` gathers ``A[(n, oh, ow), (rh, rw, ci)]``
    from ``data``, block ``"C"`` is ``out[m, co] += A[m, k] * W[co, k]`` with the weights as ``W[co, (rh, rw,
    ci)]`` (the layout ``schedule_amx_gemm`` packs). ``out`` is ``(N * OH * OW, CO)``, i.e. NHWC flattened.

    Parameters
    ----------
    N, H, W, CI : int
        Batch, height, width and channels of the input.
    CO : int
        Output channels.
    KH, KW : int
        The kernel's height and width (no padding: ``OH = H - KH + 1``).
    dtype, w_dtype : str
        The data's and the weights' dtypes, a pair of ``INSTRUCTIONS``.

    Returns
    -------
    PrimFunc
        The convolution, taking ``(data, weight, out)``.
    """
    OH, OW = H - KH + 1, W - KW + 1
    M, K = N * OH * OW, KH * KW * CI
    c_dtype = INSTRUCTIONS[(dtype, w_dtype)][1]
    zero = T.float32(0) if c_dtype == "float32" else T.int32(0)

    @T.prim_func
    def conv(data: T.Buffer((N, H, W, CI), dtype), weight: T.Buffer((CO, K), w_dtype),
             out: T.Buffer((M, CO), c_dtype)):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        A = T.alloc_buffer((M, K), dtype)
        for m, k in T.grid(M, K):
            with T.block("im2col"):
                vm, vk = T.axis.remap("SS", [m, k])
                A[vm, vk] = data[vm // (OH * OW), vm % (OH * OW) // OW + vk // (KW * CI),
                                 vm % OW + vk % (KW * CI) // CI, vk % CI]
        for i, j, k in T.grid(M, CO, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    out[vi, vj] = zero
                out[vi, vj] = out[vi, vj] + T.Cast(c_dtype, A[vi, vk]) * T.Cast(c_dtype, weight[vj, vk])

    return conv


def conv2d_nhwc_hwio(N: int, H: int, W: int, CI: int, CO: int, KH: int, KW: int, dtype: str = "uint8",
                     w_dtype: str = "int8"):
    """The direct stride-1 NHWC conv2d, ``out[n, h, w, co] += data[n, h + rh, w + rw, ci] * kernel[rh, rw, ci,
    co]`` (one block ``"conv"``, no im2col stage): the form the search tensorizes by itself (it fuses ``n, h, w``
    and ``rh, rw, ci`` into the GEMM's M and K and packs the kernel).

    Parameters
    ----------
    N, H, W, CI : int
        Batch, height, width and channels of the input.
    CO : int
        Output channels.
    KH, KW : int
        The kernel's height and width (no padding: ``OH = H - KH + 1``).
    dtype, w_dtype : str
        The data's and the kernel's dtypes, a pair of ``INSTRUCTIONS``.

    Returns
    -------
    PrimFunc
        The convolution, taking ``(data, kernel, out)``.
    """
    OH, OW = H - KH + 1, W - KW + 1
    c_dtype = INSTRUCTIONS[(dtype, w_dtype)][1]
    zero = T.float32(0) if c_dtype == "float32" else T.int32(0)

    @T.prim_func
    def conv(data: T.Buffer((N, H, W, CI), dtype), kernel: T.Buffer((KH, KW, CI, CO), w_dtype),
             out: T.Buffer((N, OH, OW, CO), c_dtype)):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for n, h, w, co, rh, rw, ci in T.grid(N, OH, OW, CO, KH, KW, CI):
            with T.block("conv"):
                vn, vh, vw, vco, vrh, vrw, vci = T.axis.remap("SSSSRRR", [n, h, w, co, rh, rw, ci])
                with T.init():
                    out[vn, vh, vw, vco] = zero
                out[vn, vh, vw, vco] = out[vn, vh, vw, vco] + T.Cast(c_dtype, data[vn, vh + vrh, vw + vrw, vci]) \
                    * T.Cast(c_dtype, kernel[vrh, vrw, vci, vco])

    return conv


def schedule_amx_conv2d(func, m_tiles: int = 2, n_tiles: int = 2, k_steps: int | None = None,
                        parallel: bool = True, intrin=None, emulate: bool = False) -> Schedule:
    """``schedule_amx_gemm`` on the GEMM of ``amx_conv2d_nhwc``, the im2col gather vectorized and parallel
    (the padded copy of A, when M does not divide, gathers straight from ``data``).

    Parameters
    ----------
    func : PrimFunc
        A convolution made by ``amx_conv2d_nhwc``.
    m_tiles, n_tiles : int
        Accumulator tiles per block (2 x 2 uses all 8 tile registers).
    k_steps : int, optional
        Tile steps of K per intrinsic call (default: ``default_k_steps``).
    parallel : bool
        Run the blocks of C on all threads.
    intrin : str | TensorIntrin, optional
        Tensorize with this intrinsic instead (same shape).
    emulate : bool
        Use the AMX intrinsic's emulation twin: the same program for any CPU.

    Returns
    -------
    Schedule
        The scheduled convolution.
    """
    sch = schedule_amx_gemm(func, m_tiles, n_tiles, k_steps, parallel, intrin, emulate)
    if "pad_einsum" in [inst.kind for inst in sch.trace.insts]:
        sch.compute_inline(sch.get_block("im2col"))
        gather = sch.get_block(f"{_operands(sch, sch.get_block('C_o'))[0].name}")
    else:
        gather = sch.get_block("im2col")
    if parallel:
        sch.parallel(sch.get_loops(gather)[0])
    return sch


def emulation_schedule(func, m_tiles: int = 2, n_tiles: int = 2, k_steps: int | None = None,
                       parallel: bool = True) -> Schedule:
    """``schedule_amx_gemm`` with the AMX intrinsic's description in place of its instructions.

    Parameters
    ----------
    func : PrimFunc
        A GEMM made by ``amx_gemm``.
    m_tiles, n_tiles : int
        Accumulator tiles per block (2 x 2 uses all 8 tile registers).
    k_steps : int, optional
        Tile steps of K per intrinsic call (default: ``default_k_steps``).
    parallel : bool
        Run the blocks of C on all threads.

    Returns
    -------
    Schedule
        A program LLVM compiles for any x86 CPU, with the AMX schedule's padding, packing and blocking.
    """
    return schedule_amx_gemm(func, m_tiles, n_tiles, k_steps, parallel, emulate=True)


__all__ = ["amx_gemm", "amx_conv2d_nhwc", "conv2d_nhwc_hwio", "pack_b", "default_k_steps", "panel_blocks",
           "schedule_amx_gemm", "schedule_amx_conv2d", "emulation_schedule"]
