"""Hopper's warpgroup MMA (``wgmma.mma_async``, sm_90a) as tensor intrinsics: the Tensor Core path cuBLAS uses
on H100/H200.

A *warpgroup* is four consecutive warps (128 threads). One ``wgmma.mma_async.m64nNk16`` multiplies a 64x16 A
tile by a 16xN B tile, both read by the Tensor Cores straight from shared memory, and accumulates into a 64xN
f32 tile spread over the 128 threads' registers (``N / 2`` per thread). The intrinsics make both layouts
explicit in TensorIR, as ``intrinsics.cuda_mma`` does for ``mma.sync``:

* **Shared operands, K-major, no swizzle** (the PTX ISA's canonical layout): a tile is made of *core
  matrices* of 8 rows x 16 bytes (8 f16), each stored contiguously (128 bytes). A schedule gives a shared
  tile ``S[r, k]`` this layout with ``sch.transform_layout(block, buffer, shared_tile_map)``:
  ``(r, k) -> (r // 8, k // 8, r % 8, k % 8)``. The instruction finds the core matrices through the
  *leading byte offset* (between core matrices along K: the buffer's second stride) and the *stride byte
  offset* (along M or N: its first stride), which the ``impl`` reads off the buffer and the CUDA code
  generator packs into the 64-bit shared-memory descriptors with the tile's address (a K step of 16 is the
  next two core matrices along K).
* **Shared operands, K-major, swizzled** (``_sw`` intrinsics, what fast kernels use): the tile is plain
  row-major with rows of exactly ``32 * k_steps`` bytes (the K tile), and the descriptor's swizzle mode of
  that many bytes tells the Tensor Cores that each 8-row group's 16-byte chunks are XOR-permuted. The schedule
  annotates the shared tile's copy block with ``tensorize.transform.swizzle_shared.SWIZZLE`` and lowering
  moves every ordinary access to the permuted element; warps then copy whole rows (coalesced) into shared
  memory without bank conflicts, which on an H100 made the same GEMM 2.3x faster than the layout above.
* **The accumulator**: a ``"warp.group"`` buffer of shape (128 threads, N / 2 registers) per 64xN tile;
  element ``(i, j)`` lives in thread ``32 * (i // 16) + 4 * (i % 8) + (j % 8) // 2``, register
  ``4 * (j // 8) + 2 * ((i % 16) // 8) + j % 2`` (``acc_layout``; ``acc_tile_map`` for a whole buffer; these
  and the fill and store intrinsics live in ``intrinsics.cuda_wgmma_acc``).
  The CUDA code generator keeps one register array per thread (``tensorize.codegen.cuda.warp_memory``).

Both operands K-major means the GEMM is ``C[i, j] = sum_k A[i, k] * B[j, k]`` (B stored N x K, as cuBLAS's
"TN" case). An intrinsic issues ``wgmma.fence``, its ``wgmma.mma_async`` instructions and one
``wgmma.commit_group``; in a kernel that uses them the code generator waits for the pending groups
(``wgmma.wait_group``: none left, or inside a software pipeline with a compute lag that many) and fences
the generic-proxy shared-memory writes (``fence.proxy.async``) before every ``__syncthreads()``; the
store intrinsic waits for all groups before it reads the accumulator.

=================================  ==============================================================
name                               what
=================================  ==============================================================
wgmma_m64n{N}k{K}_f16f16f32       C(f32, 64xN) += A(f16, 64xK) B(f16, NxK)^T, N in 64, 128, 256, K in
                                   16, 32, 64 (K / 16 instructions, one fence and one commit group)
wgmma_m64n{N}k{K}_f16f16f32_sw   the same on row-major shared tiles of K columns, swizzled 2K bytes
wgmma_m64n{N}k{K}_bf16bf16f32     both forms with bf16 inputs (``_sw`` too)
wgmma_m64n{N}k64_f16f16f32_sw_nn  B stored K x N (MN-major, 64-column blocks, transposed by the instruction);
                                   ``_bf16bf16f32_sw_nn`` too
wgmma_fill_m64n{N}_f32             C = 0
wgmma_store_m64n{N}_f32_global     C -> global memory (waits for the pending wgmma groups first)
wgmma_store_m64n{N}_f16_global     the same rounded to f16 (``_bf16_global``: bf16), a fused cast epilogue
=================================  ==============================================================

>>> import intrinsics.cuda_wgmma as wg
>>> [int(x) for x in wg.acc_layout(17, 10)]    # row 17, column 10: warp 1, lane 4 * 1 + 1
[37, 4]
"""
from __future__ import annotations

from tensorize.ir.tensor_intrin import TensorIntrin
from tensorize.script import tir as T

from .cuda_wgmma_acc import (SCOPE, STORE_TYPES, WARPGROUP, WGMMA_N, _meta, acc_layout, acc_tile_map,  # noqa: F401
                             tile_intrin_name, wgmma_fill, wgmma_store)

K_STEPS = (1, 2, 4)  # wgmma instructions one intrinsic issues as one group
# the swizzle mode of a row-major K-major tile with 16 * k_steps f16 per row: the row length in bytes
SWIZZLE_OF_K_STEPS = {1: 32, 2: 64, 4: 128}
INPUT_TYPES = {"float16": ("fp16", "f16"), "bfloat16": ("bf16", "bf16")}  # dtype -> (PTX operand type, name part)
MN_ATOM = 64  # N columns of one 128-byte swizzled row of an MN-major B tile


def intrin_name(n: int, k_steps: int = 1, swizzle: bool = False, dtype: str = "float16",
                b_mn_major: bool = False) -> str:
    """The registered name of the f16 (or bf16) -> f32 multiply-accumulate of a 64 x ``n`` x ``16 * k_steps`` tile.

    Parameters
    ----------
    n : int
        The tile's N (64, 128 or 256).
    k_steps : int
        ``wgmma`` instructions (K steps of 16) issued as one group (1, 2 or 4).
    swizzle : bool
        Row-major swizzled shared tiles (``SWIZZLE_OF_K_STEPS[k_steps]`` bytes) instead of core matrices.
    dtype : str
        The inputs' dtype, ``"float16"`` or ``"bfloat16"``.
    b_mn_major : bool
        B stored K x N (an NN GEMM; swizzled only): ``_sw_nn``.

    Returns
    -------
    str
        E.g. ``"wgmma_m64n256k16_f16f16f32"``, ``"wgmma_m64n256k64_bf16bf16f32_sw"``.
    """
    short = INPUT_TYPES[dtype][1]
    suffix = ("_sw" if swizzle or b_mn_major else "") + ("_nn" if b_mn_major else "")
    return f"wgmma_m64n{n}k{16 * k_steps}_{short}{short}f32" + suffix


def shared_tile_map(r, k):
    """The K-major core-matrix layout of a shared operand: ``(r, k) -> (r // 8, k // 8, r % 8, k % 8)``.

    Parameters
    ----------
    r, k : PrimExpr
        Row (M or N) and K index of the shared tile.

    Returns
    -------
    tuple
        The index in the 4-D buffer.
    """
    return r // 8, k // 8, r % 8, k % 8


def wgmma_sync(n: int, k_steps: int = 1, scope: str = "shared", dtype: str = "float16"):
    """``desc``/``impl`` of ``C[i, j] += A[i, k] * B[j, k]`` on a 64 x ``n`` x ``16 * k_steps`` tile.

    Parameters
    ----------
    n : int
        64, 128 or 256.
    k_steps : int
        K steps of 16: ``wgmma`` instructions issued between one ``wgmma.fence`` and one
        ``wgmma.commit_group`` (a group the code generator's waits count as one).
    scope : str
        The storage scope of A and B.
    dtype : str
        The inputs' dtype (``"float16"`` or ``"bfloat16"``).

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``: ``impl`` is ``k_steps`` x ``wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16`` per
        warpgroup, their descriptors built from the operands' strides.
    """
    regs = n // 2
    ptx_type = INPUT_TYPES[dtype][0]
    rows_b = n // 8
    cols = 2 * k_steps  # core matrices along K
    depth = 16 * k_steps

    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (8, cols, 8, 8), dtype, align=16, offset_factor=8, scope=scope)
        B = T.match_buffer(b, (rows_b, cols, 8, 8), dtype, align=16, offset_factor=8, scope=scope)
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        with T.block("root"):
            T.reads(C[0:WARPGROUP, 0:regs], A[0:8, 0:cols, 0:8, 0:8], B[0:rows_b, 0:cols, 0:8, 0:8])
            T.writes(C[0:WARPGROUP, 0:regs])
            for i, j, k in T.grid(64, n, depth):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[acc_layout(vi, vj)[0], acc_layout(vi, vj)[1]] = C[
                        acc_layout(vi, vj)[0], acc_layout(vi, vj)[1]] + T.Cast(
                        "float32", A[vi // 8, vk // 8, vi % 8, vk % 8]) * T.Cast(
                        "float32", B[vj // 8, vk // 8, vj % 8, vk % 8])

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        sa0 = T.int32()
        sa1 = T.int32()
        sb0 = T.int32()
        sb1 = T.int32()
        A = T.match_buffer(a, (8, cols, 8, 8), dtype, align=16, offset_factor=8, scope=scope,
                           strides=[sa0, sa1, 8, 1])
        B = T.match_buffer(b, (rows_b, cols, 8, 8), dtype, align=16, offset_factor=8, scope=scope,
                           strides=[sb0, sb1, 8, 1])
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        with T.block("root"):
            T.reads(C[0:WARPGROUP, 0:regs], A[0:8, 0:cols, 0:8, 0:8], B[0:rows_b, 0:cols, 0:8, 0:8])
            T.writes(C[0:WARPGROUP, 0:regs])
            # one statement (a software pipeline's compute stage stays one statement of its loop body)
            for tx in T.thread_binding(WARPGROUP, thread="threadIdx.x"):
                T.evaluate(T.ptx_wgmma_fence())
                for step in T.unroll(k_steps):
                    T.evaluate(T.ptx_wgmma("handle", f"m64n{n}k16", ptx_type, ptx_type, "fp32",
                                           A.access_ptr("r", offset=2 * step * sa1), sa1, sa0,
                                           B.access_ptr("r", offset=2 * step * sb1), sb1, sb0,
                                           C.data, C.elem_offset + regs * tx))
                T.evaluate(T.ptx_wgmma_commit_group())

    return desc, impl


def wgmma_sync_swizzled(n: int, k_steps: int = 4, scope: str = "shared", dtype: str = "float16"):
    """``desc``/``impl`` of ``C[i, j] += A[i, k] * B[j, k]`` on row-major swizzled shared tiles.

    A is 64 x ``16 * k_steps`` and B ``n`` x ``16 * k_steps``, each row exactly ``32 * k_steps`` bytes (the
    ``impl``'s strides: a tile cut from a wider buffer does not match) and stored with the swizzle of that
    many bytes (``SwizzleSharedLayout``). Step ``s`` starts ``16 * s`` elements into the rows; the stride
    byte offset is one 8-row group.

    Parameters
    ----------
    n : int
        64, 128 or 256.
    k_steps : int
        1, 2 or 4 (swizzles of 32, 64 or 128 bytes).
    scope : str
        The storage scope of A and B.
    dtype : str
        The inputs' dtype (``"float16"`` or ``"bfloat16"``).

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``.
    """
    regs = n // 2
    ptx_type = INPUT_TYPES[dtype][0]
    depth = 16 * k_steps
    swizzle = SWIZZLE_OF_K_STEPS[k_steps]

    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (64, depth), dtype, align=16, offset_factor=8, scope=scope)
        B = T.match_buffer(b, (n, depth), dtype, align=16, offset_factor=8, scope=scope)
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        with T.block("root"):
            T.reads(C[0:WARPGROUP, 0:regs], A[0:64, 0:depth], B[0:n, 0:depth])
            T.writes(C[0:WARPGROUP, 0:regs])
            for i, j, k in T.grid(64, n, depth):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[acc_layout(vi, vj)[0], acc_layout(vi, vj)[1]] = C[
                        acc_layout(vi, vj)[0], acc_layout(vi, vj)[1]] + T.Cast(
                        "float32", A[vi, vk]) * T.Cast("float32", B[vj, vk])

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (64, depth), dtype, align=16, offset_factor=8, scope=scope, strides=[depth, 1])
        B = T.match_buffer(b, (n, depth), dtype, align=16, offset_factor=8, scope=scope, strides=[depth, 1])
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        with T.block("root"):
            T.reads(C[0:WARPGROUP, 0:regs], A[0:64, 0:depth], B[0:n, 0:depth])
            T.writes(C[0:WARPGROUP, 0:regs])
            for tx in T.thread_binding(WARPGROUP, thread="threadIdx.x"):
                T.evaluate(T.ptx_wgmma_fence())
                for step in T.unroll(k_steps):
                    # leading offset unused by swizzled K-major tiles (one 16-byte unit, as CUTLASS sets it)
                    T.evaluate(T.ptx_wgmma("handle", f"m64n{n}k16", ptx_type, ptx_type, "fp32",
                                           A.access_ptr("r", offset=16 * step), 8, 8 * depth,
                                           B.access_ptr("r", offset=16 * step), 8, 8 * depth,
                                           C.data, C.elem_offset + regs * tx, swizzle))
                T.evaluate(T.ptx_wgmma_commit_group())

    return desc, impl


def wgmma_sync_nn(n: int, scope: str = "shared", dtype: str = "float16"):
    """``desc``/``impl`` of ``C[i, j] += A[i, k] * B[k, j]`` (B stored K x N: MN-major) on a 64 x ``n`` x 64 tile.

    A is as in ``wgmma_sync_swizzled`` (64 x 64, rows of 128 bytes, 128-byte swizzle). B is ``n / 64`` blocks of
    64 K-rows x 64 N-columns (128 bytes), each block row-major and 128-byte swizzled (``b_tile_map``), read with
    the instruction's transpose bit: the leading byte offset steps from one 64-column block to the next, the
    stride byte offset from one 8-row group of K to the next, and step ``s`` starts 16 K-rows in.

    Parameters
    ----------
    n : int
        64, 128 or 256.
    scope : str
        The storage scope of A and B.
    dtype : str
        The inputs' dtype (``"float16"`` or ``"bfloat16"``).

    Returns
    -------
    tuple of PrimFunc
        ``(desc, impl)``.
    """
    regs = n // 2
    ptx_type = INPUT_TYPES[dtype][0]
    depth, width, blocks = 64, MN_ATOM, n // MN_ATOM

    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (64, depth), dtype, align=16, offset_factor=8, scope=scope)
        B = T.match_buffer(b, (blocks, depth, width), dtype, align=16, offset_factor=8, scope=scope)
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        with T.block("root"):
            T.reads(C[0:WARPGROUP, 0:regs], A[0:64, 0:depth], B[0:blocks, 0:depth, 0:width])
            T.writes(C[0:WARPGROUP, 0:regs])
            for i, j, k in T.grid(64, n, depth):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[acc_layout(vi, vj)[0], acc_layout(vi, vj)[1]] = C[
                        acc_layout(vi, vj)[0], acc_layout(vi, vj)[1]] + T.Cast(
                        "float32", A[vi, vk]) * T.Cast("float32", B[vj // width, vk, vj % width])

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (64, depth), dtype, align=16, offset_factor=8, scope=scope, strides=[depth, 1])
        B = T.match_buffer(b, (blocks, depth, width), dtype, align=16, offset_factor=8, scope=scope,
                           strides=[depth * width, width, 1])
        C = T.match_buffer(c, (WARPGROUP, regs), "float32", align=64, offset_factor=1, scope=SCOPE)
        with T.block("root"):
            T.reads(C[0:WARPGROUP, 0:regs], A[0:64, 0:depth], B[0:blocks, 0:depth, 0:width])
            T.writes(C[0:WARPGROUP, 0:regs])
            for tx in T.thread_binding(WARPGROUP, thread="threadIdx.x"):
                T.evaluate(T.ptx_wgmma_fence())
                for step in T.unroll(4):
                    T.evaluate(T.ptx_wgmma("handle", f"m64n{n}k16", ptx_type, ptx_type, "fp32",
                                           A.access_ptr("r", offset=16 * step), 8, 8 * depth,
                                           B.access_ptr("r", offset=16 * width * step), depth * width, 8 * width,
                                           C.data, C.elem_offset + regs * tx, 128, 1))
                T.evaluate(T.ptx_wgmma_commit_group())

    return desc, impl


def b_tile_map(k, j):
    """The layout of an MN-major B tile (``B[k, j]``, N contiguous) for ``wgmma_sync_nn``:
    ``(k, j) -> (j // 64, k, j % 64)``: 64-column blocks, each row-major with 128-byte rows (then swizzled).

    Parameters
    ----------
    k, j : PrimExpr
        K and N index of the shared tile.

    Returns
    -------
    tuple
        The index in the 3-D buffer.
    """
    return j // MN_ATOM, k, j % MN_ATOM


for _n in WGMMA_N:
    for _steps in K_STEPS:
        for _dtype in INPUT_TYPES:
            TensorIntrin.register(intrin_name(_n, _steps, dtype=_dtype), *wgmma_sync(_n, _steps, dtype=_dtype),
                                  override=True, meta=_meta("sync", n=_n, k_steps=_steps))
            TensorIntrin.register(intrin_name(_n, _steps, swizzle=True, dtype=_dtype),
                                  *wgmma_sync_swizzled(_n, _steps, dtype=_dtype), override=True,
                                  meta=_meta("sync", n=_n, k_steps=_steps, swizzle=SWIZZLE_OF_K_STEPS[_steps]))
    for _dtype in INPUT_TYPES:
        TensorIntrin.register(intrin_name(_n, 4, dtype=_dtype, b_mn_major=True), *wgmma_sync_nn(_n, dtype=_dtype),
                              override=True, meta=_meta("sync", n=_n, k_steps=4, swizzle=128, b_mn_major=True))
