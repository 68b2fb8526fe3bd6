"""The GEMM schedule of Hopper's warpgroup MMA (``intrinsics.cuda_wgmma``), for hand use and for the search.

``C[i, j] = sum_k A[i, k] * B[j, k]`` with A (M x K) and B (N x K) both K-major (cuBLAS's "TN" case), or
``C[i, j] = sum_k A[i, k] * B[k, j]`` with B stored K x N (``gemm_nn``: its tiles are kept in 64-column
swizzled blocks and read through the instruction's transpose bit; K tiles of 64), f16 or bf16 in, either
with a leading batch axis on every operand (``batch=``: one ``blockIdx.z`` plane per batch entry). Each
thread block computes a ``64 * warpgroups`` x ``n`` tile of C, one warpgroup (128 threads on
``threadIdx.x``) per 64 rows (``threadIdx.y``), its accumulators in registers (``"warp.group"``). The K
loop steps ``16 * k_steps`` columns at a time through shared tiles of A and B, fetched by all threads
with 16-byte copies. By default (``swizzle=True``) the tiles are row-major in the swizzled layout of
``32 * k_steps`` bytes (``SwizzleSharedLayout``): consecutive threads copy consecutive 16 bytes of a row,
so global reads are whole lines and shared writes are free of bank conflicts; otherwise they are in the
unswizzled core-matrix layout (``shared_tile_map``), consecutive threads writing the 8 rows of one core
matrix (2.3x slower on an H100: the copies run at a fraction of the L2 bandwidth). With
``stages`` > 0 the fetches are software-pipelined: that many tiles load with ``cp.async`` ahead of the
multiply, each iteration issues its wgmma before its fetches (``software_pipeline_order``), and the shared
tiles get one version more than the depth needs (``software_pipeline_compute_lag = 1``): a barrier then
waits for all but the latest group of wgmma, so the Tensor Cores keep working across it. Shapes that do not
divide the block tile are padded (``pad_einsum``).

``fetch="annotate"`` leaves the fetches to the search's cooperative-fetch postproc (it fuses the fetch
loops in the order set here, spreads them over the threads and vectorizes 8 elements) and the pipeline
depth to its ``meta_schedule.software_pipeline_depth`` annotation.

>>> sch = schedule_wgmma_gemm(gemm_nt(128, 256, 128), n=256)
>>> "T.ptx_wgmma" in sch.mod.script()
True
"""
from __future__ import annotations

from tensorize import te
from tensorize.ir import expr as E
from tensorize.ir.functor import post_order_visit
from tensorize.schedule import Schedule
from tensorize.transform.inject_software_pipeline import ASYNC_STAGES, COMPUTE_LAG, ORDER, STAGE
from tensorize.transform.swizzle_shared import SWIZZLE
from tensorize.transform.warp_specialize import (WARP_SPECIALIZE, WARP_SPECIALIZE_CLUSTER,
                                                 WARP_SPECIALIZE_PERSISTENT)

from .cuda_tma import TMA_ROWS, tma_intrin_name
from .cuda_wgmma import (INPUT_TYPES, MN_ATOM, SCOPE, STORE_TYPES, SWIZZLE_OF_K_STEPS, WARPGROUP, acc_tile_map,
                         b_tile_map, intrin_name, shared_tile_map, tile_intrin_name)

COOPERATIVE_FETCH = "meta_schedule.cooperative_fetch"
PIPELINE_DEPTH = "meta_schedule.software_pipeline_depth"
LANES = 8  # f16 elements per 16-byte copy: one row of a core matrix


def _gemm(M, N, K, in_dtype, out_dtype, acc_dtype, b_mn_major, batch):
    acc_dtype = acc_dtype or out_dtype
    lead = (batch,) if batch else ()
    A = te.placeholder((*lead, M, K), in_dtype, name="A")
    B = te.placeholder((*lead, K, N) if b_mn_major else (*lead, N, K), in_dtype, name="B")
    k = te.reduce_axis((0, K), name="k")

    def product(*idx):
        *b, i, j = idx
        return te.sum(A[(*b, i, k)].astype(acc_dtype) * B[(*b, k, j) if b_mn_major else (*b, j, k)].astype(
            acc_dtype), axis=k)

    C = te.compute((*lead, M, N), product, name="C")
    if acc_dtype == out_dtype:
        return te.create_prim_func([A, B, C])
    D = te.compute((*lead, M, N), lambda *idx: C[idx].astype(out_dtype), name="D")
    return te.create_prim_func([A, B, D])


def gemm_nt(M: int, N: int, K: int, in_dtype: str = "float16", out_dtype: str = "float32", acc_dtype=None,
            batch: int = 0):
    """The workload: ``C[i, j] = sum_k A[i, k] * B[j, k]`` as a PrimFunc.

    Parameters
    ----------
    M, N, K : int
        The GEMM's extents.
    in_dtype, out_dtype : str
        Input and output dtypes.
    acc_dtype : str, optional
        The accumulation dtype (default: ``out_dtype``). When it differs, ``C`` accumulates in it and a second
        block ``"D"`` casts to ``out_dtype`` (f16 out with f32 accumulation, as cuBLAS's f16 GEMM).
    batch : int
        With a batch > 0 every operand gets that leading axis: ``C[b, i, j] = sum_k A[b, i, k] * B[b, j, k]``.

    Returns
    -------
    PrimFunc
        Block ``"C"`` (and ``"D"``).
    """
    return _gemm(M, N, K, in_dtype, out_dtype, acc_dtype, False, batch)


def gemm_nn(M: int, N: int, K: int, in_dtype: str = "float16", out_dtype: str = "float32", acc_dtype=None,
            batch: int = 0):
    """The workload with B stored K x N: ``C[i, j] = sum_k A[i, k] * B[k, j]`` as a PrimFunc.

    Parameters
    ----------
    M, N, K : int
        The GEMM's extents.
    in_dtype, out_dtype : str
        Input and output dtypes.
    acc_dtype : str, optional
        The accumulation dtype, as in ``gemm_nt``.
    batch : int
        A leading batch axis on every operand, as in ``gemm_nt``.

    Returns
    -------
    PrimFunc
        Block ``"C"`` (and ``"D"``).
    """
    return _gemm(M, N, K, in_dtype, out_dtype, acc_dtype, True, batch)


def gemm_operands(block):
    """The read indices of A and B, and B's major-ness, when ``block`` computes ``C[i, j] += A[i, k] * B[j, k]``
    (B stored N x K: K-major) or ``C[i, j] += A[i, k] * B[k, j]`` (B stored K x N), f16 or bf16 in, f32 out,
    possibly with a leading batch axis ``b`` indexing every operand first.

    Parameters
    ----------
    block : Block
        A block (its init may be present).

    Returns
    -------
    tuple or None
        ``(index of A, index of B, B is K-major)`` among ``block.reads``, or None for another computation.
    """
    ivs = block.iter_vars
    kinds = [E.IterVar.DataPar, E.IterVar.DataPar, E.IterVar.CommReduce]
    if len(ivs) not in (3, 4) or [iv.iter_type for iv in ivs[-3:]] != kinds or (
            len(ivs) == 4 and ivs[0].iter_type != E.IterVar.DataPar):
        return None
    lead = [iv.var for iv in ivs[:-3]]  # a batch axis, indexing every operand first
    i, j, k = (iv.var for iv in ivs[-3:])
    store = block.body
    if not isinstance(getattr(store, "value", None), E.PrimExpr) or store.buffer.dtype != "float32" \
            or not _indexed(store.indices, [*lead, i, j]):
        return None
    loads = []
    post_order_visit(store.value, lambda n: loads.append(n) if isinstance(n, E.BufferLoad)
                     and n.buffer is not store.buffer else None)
    by_role = {}
    for load in loads:
        if load.buffer.dtype not in INPUT_TYPES:
            return None
        role = next((name for (x, y), name in (((i, k), "A"), ((j, k), "B"), ((k, j), "B^T"))
                     if _indexed(load.indices, [*lead, x, y])), "?")
        by_role[role] = load.buffer
    b_role = "B" if "B" in by_role else "B^T"
    if (sorted(by_role) != sorted(["A", b_role]) or len(loads) != 2 or by_role["A"] is by_role[b_role]
            or by_role["A"].dtype != by_role[b_role].dtype):
        return None
    reads = [r.buffer for r in block.reads]
    if by_role["A"] not in reads or by_role[b_role] not in reads:
        return None
    return reads.index(by_role["A"]), reads.index(by_role[b_role]), b_role == "B"


def _indexed(indices, variables) -> bool:
    return len(indices) == len(variables) and all(a is b for a, b in zip(indices, variables))


def nt_gemm_operands(block):
    """The read indices of A and B when ``block`` computes ``C[i, j] += A[i, k] * B[j, k]`` (f16 or bf16 in, f32
    out, B K-major).

    Parameters
    ----------
    block : Block
        A block (its init may be present).

    Returns
    -------
    tuple of int or None
        ``(index of A, index of B)`` among ``block.reads``, or None for another computation.
    """
    found = gemm_operands(block)
    return found[:2] if found is not None and found[2] else None


def _fuse_cast(sch, producer) -> None:
    """Inline the single consumer of ``producer`` when it only rounds the f32 result to f16 or bf16, element
    for element (``D[...] = cast(C[...])`` at the same indices)."""
    consumers = sch.get_consumers(producer)
    if len(consumers) != 1:
        return
    store = sch.get(consumers[0]).body
    value = getattr(store, "value", None)
    if (isinstance(value, E.Cast) and value.dtype in STORE_TYPES and value.dtype != "float32"
            and isinstance(value.value, E.BufferLoad) and value.value.buffer is sch.get(producer).writes[0].buffer
            and _indexed(value.value.indices, list(store.indices))):
        sch.reverse_compute_inline(consumers[0])


def _leading(index_map, batched):
    """``index_map`` of a tile's last two axes, for a buffer with a leading batch axis when ``batched``."""
    if not batched:
        return index_map
    return lambda b, x, y: (b, *index_map(x, y))


def _fetch(sch, block, index, anchor, warpgroups, fetch, swizzle, mn_major=False, batched=False, tensorize=True):
    shared = sch.cache_read(block, index, "shared")
    sch.compute_at(shared, anchor)
    r, k = sch.get_loops(shared)[-2:]  # (rows, K) of a K-major tile; (K, N) of an MN-major one
    if fetch == "tma":  # tensor memory accelerator copies, swizzled as they land
        dtype = sch.get(shared).writes[0].buffer.dtype
        if mn_major:  # one copy per 64-column block of 64 K-rows (b_tile_map)
            sch.transform_layout(block, ("read", index), _leading(b_tile_map, batched))
            blocks, cols = sch.split(k, [None, MN_ATOM])
            sch.reorder(blocks, r, cols)
        rows, cols = (int(sch.get(loop).extent) for loop in (r, k if not mn_major else cols))
        if tensorize:
            sch.tensorize(r, tma_intrin_name(rows, cols, dtype))
        else:
            sch.blockize(r)
        return shared
    k0, k1 = sch.split(k, [None, LANES])
    if mn_major:  # 64-column blocks of 128-byte rows (b_tile_map), copied along N
        sch.transform_layout(block, ("read", index), _leading(b_tile_map, batched))
    if swizzle:  # row-major rows; consecutive threads copy consecutive 16 bytes of a row
        sch.annotate(shared, SWIZZLE, swizzle)
        loops = [r, k0]
    else:  # core matrices; consecutive threads copy the 8 rows of one (128 contiguous bytes)
        sch.transform_layout(block, ("read", index), _leading(shared_tile_map, batched))
        r0, r1 = sch.split(r, [None, 8])
        sch.reorder(r0, k0, r1, k1)
        loops = [r0, k0, r1]
    if fetch == "annotate":
        sch.annotate(shared, COOPERATIVE_FETCH, LANES)
        return shared
    fused = sch.fuse(*loops)
    _, ty, tx = sch.split(fused, [None, warpgroups, WARPGROUP])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(k1)
    return shared


def schedule_wgmma_gemm(func_or_sch, block="C", warpgroups=2, n=256, k_steps=4, stages=2, tensorize=True,
                        fetch="bind", swizzle=True, group=0, cluster=1, persistent=0):
    """Schedule the NT GEMM ``block`` onto ``wgmma.mma_async.m64n{n}k16``.

    Parameters
    ----------
    func_or_sch : PrimFunc or Schedule
        The workload (``gemm_nt``), or a schedule of it (changed in place).
    block : str or BlockRV
        The GEMM block.
    warpgroups : int
        Warpgroups per thread block (the block tile has ``64 * warpgroups`` rows).
    n : int
        Columns of the block tile, one ``wgmma`` N (64, 128 or 256).
    k_steps : int
        ``k16`` steps per shared tile (the K tile is ``16 * k_steps``; 1, 2 or 4), issued as one wgmma group.
    stages : int or ExprRV
        Software-pipeline depth of the fetches (0: none). With ``fetch="annotate"`` it becomes the
        ``meta_schedule.software_pipeline_depth`` annotation.
    tensorize : bool
        Tensorize with the wgmma intrinsics (else blockize: the descriptions, for a CPU build).
    fetch : str
        ``"bind"`` (spread the fetches here), ``"annotate"`` (leave them to the search's postproc) or ``"tma"``
        (warp-specialised: one more warpgroup, the producer, copies each tile with the tensor memory accelerator
        into ``stages`` shared buffers, and the others multiply as the tiles land; transaction barriers order
        the two sides, ``tensorize.transform.warp_specialize``). ``"tma"`` takes ``k_steps=4``,
        ``swizzle=True`` and ``stages`` >= 2 buffers; a B stored K x N is copied one 64-column block at a time,
        a batched operand as one 2-D view whose rows run over the batch.
    swizzle : bool
        Row-major shared tiles in the swizzled layout of ``SWIZZLE_OF_K_STEPS[k_steps]`` bytes (the fast
        path), or the unswizzled core-matrix layout.
    group : int or ExprRV
        Rasterize the thread blocks in groups of ``group`` block rows (0: row by row; ignored when it does not
        divide the block rows): consecutive blocks then share tiles of A and B in L2. A sampled group must
        divide them.
    cluster : int or ExprRV
        With ``fetch="tma"``: thread block clusters of this many consecutive blocks (1 or 2), which share their
        tile of B (their rows of A differ: ``group`` must be even) and copy it once, each CTA a part multicast
        to all. It halves the L2 traffic of B.
    persistent : int
        With ``fetch="tma"``: launch at most this many thread blocks (e.g. the GPU's SM count; 0: one per tile),
        each walking its tiles in a serial loop (the largest count that divides the tiles is taken; the
        warp-specialisation pass builds the loop). The producer then copies the next tile's first K tiles while
        the consumers store the last one's result.

    Returns
    -------
    Schedule
        The schedule.

    Raises
    ------
    ValueError
        When the block is not such a GEMM, or a B stored K x N is asked for unswizzled or with another K
        tile (nothing is changed then).
    """
    sch = func_or_sch if isinstance(func_or_sch, Schedule) else Schedule(func_or_sch)
    block = sch.get_block(block) if isinstance(block, str) else block
    found = gemm_operands(sch.get(block))
    if found is None:
        raise ValueError(f"block {sch.get(block).name_hint!r} is not C[i, j] += A[i, k] * B[j, k] (or B[k, j]) in "
                         "f16 or bf16 -> f32")
    b_mn_major = not found[2]
    if b_mn_major and (not swizzle or k_steps != 4):
        raise ValueError("a B stored K x N (MN-major) is read from swizzled 64 x 64 tiles: use swizzle=True, "
                         "k_steps=4")
    M, N, K = (int(iv.dom.extent) for iv in sch.get(block).iter_vars[-3:])
    batched = len(sch.get(block).iter_vars) == 4
    if fetch == "tma":
        _check_tma(b_mn_major, batched, swizzle, k_steps, stages, warpgroups, n)
    if persistent and (fetch != "tma" or not isinstance(cluster, int) or cluster > 1):
        raise ValueError("persistent thread blocks take fetch='tma' without clusters")
    if not isinstance(cluster, int) or cluster > 1:
        if fetch != "tma" or (isinstance(group, int) and (group < 2 or group % 2)):
            raise ValueError("clusters share B's tile by TMA multicast between blocks of neighbouring rows: use "
                             "fetch='tma' and an even group")
    dtype = sch.get(block).reads[found[0]].buffer.dtype
    k_tile = 16 * k_steps
    padded = bool(M % (64 * warpgroups) or N % n or K % k_tile)
    if padded:
        sch.pad_einsum(block, [1] * batched + [64 * warpgroups, n, k_tile])
        for copy in sch.get_consumers(block):  # the un-padding copy rounds to a narrower output itself
            _fuse_cast(sch, copy)
        for copy in [*sch.get_producers(block), *sch.get_consumers(block)]:  # the padding copies: kernels
            _, bx, tx = sch.split(sch.fuse(*sch.get_loops(copy)), [None, 1024, 128])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
    *batch, i, j, k = sch.get_loops(block)[-3 - batched:]
    i0, i1, i2 = sch.split(i, [None, warpgroups, 64])
    j0, j1 = sch.split(j, [None, n])
    k0, k1 = sch.split(k, [None, k_tile])
    sch.reorder(i0, j0, i1, k0, i2, j1, k1)
    if batch:  # one grid plane per batch entry
        sch.bind(batch[0], "blockIdx.z")
    _rasterize(sch, i0, j0, group, cluster if isinstance(cluster, int) else 2, one_axis=bool(persistent))
    sch.bind(i1, "threadIdx.y")
    acc = sch.cache_write(block, 0, SCOPE)
    sch.reverse_compute_at(acc, i1)
    if not padded:  # an f16/bf16 output: the accumulators are rounded as they are stored
        _fuse_cast(sch, acc)
    operands = gemm_operands(sch.get(block))  # again: padding replaced the operands
    swizzled = SWIZZLE_OF_K_STEPS[k_steps] if swizzle else 0
    _fetch(sch, block, operands[0], k0, warpgroups, fetch, swizzled, batched=batched, tensorize=tensorize)
    _fetch(sch, block, operands[1], k0, warpgroups, fetch, swizzled, mn_major=b_mn_major, batched=batched,
           tensorize=tensorize)
    sch.transform_layout(block, ("write", 0), _leading(acc_tile_map(n), batched))
    init = sch.decompose_reduction(block, k0)
    for loop, name in ((sch.get_loops(init)[-2], tile_intrin_name("fill", n)),
                       (sch.get_loops(acc)[-2], tile_intrin_name("store", n, sch.get(acc).writes[0].buffer.dtype)),
                       (i2, intrin_name(n, k_steps, swizzle, dtype, b_mn_major))):
        if tensorize:
            sch.tensorize(loop, name)
        else:
            sch.blockize(loop)
    # pipelined, each iteration issues its (asynchronous) wgmma first and then the fetches of a later tile,
    # which go to another version of the shared tiles: the Tensor Cores work while the copies are issued
    # and the shared tiles get one version more, so the wgmma of the previous iteration may still run
    # after the barrier while this one's is issued (the code generator's waits leave one group in flight)
    if fetch == "tma":  # the producer/consumer split and the buffers are the code generator's pass
        sch.annotate(k0, WARP_SPECIALIZE, stages)
        if not isinstance(cluster, int) or cluster > 1:
            sch.annotate(k0, WARP_SPECIALIZE_CLUSTER, cluster)
        if persistent:
            sch.annotate(k0, WARP_SPECIALIZE_PERSISTENT, persistent)
    elif fetch == "annotate":
        sch.annotate(k0, PIPELINE_DEPTH, stages)
    elif stages:
        sch.annotate(k0, STAGE, [0, 0, stages])
        sch.annotate(k0, ASYNC_STAGES, [0])
    if fetch == "annotate" or (stages and fetch != "tma"):
        sch.annotate(k0, ORDER, [1, 2, 0])
        sch.annotate(k0, COMPUTE_LAG, 1)
    return sch


def _check_tma(b_mn_major, batched, swizzle, k_steps, stages, warpgroups, n) -> None:
    if not swizzle or k_steps != 4:
        raise ValueError("fetch='tma' copies tiles of 64 columns swizzled by 128 bytes: swizzle=True, k_steps=4")
    if isinstance(stages, int) and stages < 2:  # (a sampled count is checked by the search's verifier)
        raise ValueError(f"fetch='tma' needs stages >= 2 shared buffers (the producer fills one while the "
                         f"consumers read another), got {stages}")
    if 64 * warpgroups not in TMA_ROWS or n not in TMA_ROWS:
        raise ValueError(f"fetch='tma' copies tiles of {TMA_ROWS} rows: 64 * warpgroups = {64 * warpgroups} and "
                         f"n = {n} must be among them")


def _rasterize(sch, i0, j0, group, cluster_size=1, one_axis=False):
    """Bind the block-row and block-column loops to one ``blockIdx.x`` that walks ``group`` block rows at a time
    (to ``blockIdx.y``/``blockIdx.x`` without a group, unless ``one_axis``)."""
    rows = int(sch.get(i0).extent)
    if cluster_size > 1 and isinstance(group, int) and rows % group:
        raise ValueError(f"a cluster pairs blocks of neighbouring rows within a raster group: the group ({group}) "
                         f"must divide the {rows} block rows")
    if isinstance(group, int) and (group <= 1 or rows % group):
        if one_axis:
            sch.bind(sch.fuse(i0, j0), "blockIdx.x")
        else:
            sch.bind(i0, "blockIdx.y")
            sch.bind(j0, "blockIdx.x")
        return
    outer, inner = sch.split(i0, [None, group])  # a sampled group (ExprRV) divides the rows
    sch.reorder(outer, j0, inner)
    sch.bind(sch.fuse(outer, j0, inner), "blockIdx.x")
