"""A generic CPU schedule for an untuned task: parallel outer loops, vectorized inner loop.

``default_schedules(mod, lanes)`` gives the schedules to try in order, best first:

1. *tiled*: spatial blocks that are not the output are inlined (padding, broadcasts); each
   reduction is register-tiled (rows of the second-to-last spatial axis x one or two vector
   registers of the last, 12-14 accumulator registers, the last tiles guarded), its reduction loops
   between the outer tile loops and the register tile, the outer spatial loops fused and parallel;
   the tile accumulates in a local buffer (registers) that an elementwise epilogue computed at the
   tile reads (so conv + bias + relu is one pass over the output); a weight the function marks
   layout-free (a graph constant) is packed once, at load, into one contiguous panel per column tile,
   else a dense layer's weight panel is packed per call where its layout hurts; a depthwise
   convolution or a pooling reads its input through the padding, row tiles outermost and every
   channel tile of a row tile inside (one ordered pass over memory); a row reduction (softmax,
   layer norm) accumulates ``lanes`` partial results in a vector (rfactor); spatial blocks are split
   by the lanes, vectorized inside, parallel outside;
2. *simple*: only the parallel outer loops and the inlining;
3. the program as ``te`` made it.

The caller builds each in turn and keeps the first that compiles. Every task of a graph gets a usable
kernel: extents that do not divide leave guarded tiles (masked vector lanes, blended into the local
accumulator), not scalar code.
"""
from __future__ import annotations

import logging
import math

from ..arith.index_map import IndexMap
from ..ir import dtype as dt
from ..ir.expr import IterVar
from ..ir.functor import collect_vars
from ..schedule import Schedule
from ..transform.split_layout_rewrite import LAYOUT_FREE_BUFFERS, LAYOUT_REWRITE_PREPROC
from .register_tile import (_lane_width, _register_tile, _scored_register_tile, _vector_width, reuse_rows,  # noqa: F401
                            accumulator_registers, stores_in_iterator_order)

logger = logging.getLogger(__name__)

__all__ = ["default_schedules", "tiled_schedule", "simple_schedule", "schedule_variants", "fuse_image_pixels"]


def _is_reduction(sch: Schedule, block) -> bool:
    return any(iv.iter_type == IterVar.CommReduce for iv in sch.get(block).iter_vars)


def _num_spatial(sch: Schedule, block) -> int:
    return sum(iv.iter_type == IterVar.DataPar for iv in sch.get(block).iter_vars)


def _extent(sch: Schedule, loop) -> int:
    return int(sch.get(loop).extent)


def _inline_spatial(sch: Schedule, keep_pad: bool = False) -> list:
    """Inline every spatial block that is not an output (nor a padding with ``keep_pad``: a padded
    copy spares the convolution's inner loop a bounds test per load); returns the blocks left."""
    root = sch.get_block("root")
    outputs = {b.name for b in sch.get_output_blocks(root)}
    for block in sch.get_child_blocks(root):
        if _is_reduction(sch, block) or _name(block) in outputs or (keep_pad and _name(block).startswith("pad")):
            continue
        try:
            sch.compute_inline(block)
        except Exception:  # noqa: BLE001 - a block that cannot be inlined stays
            logger.debug("cannot inline %s", _name(block))
    return sch.get_child_blocks(root)


def _name(block) -> str:
    return block.name


def _parallel_prefix(sch: Schedule, loops) -> None:
    if not loops:
        return
    outer = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    sch.parallel(outer)


def _schedule_spatial(sch: Schedule, block, lanes: int, parallel: bool = True) -> None:
    loops = sch.get_loops(block)
    if not loops:
        return
    last = _extent(sch, loops[-1])
    vec = _lane_width(last, lanes)
    if not parallel:  # computed at a parallel loop: only vectorized inside
        if vec > 1:
            sch.vectorize(sch.split(loops[-1], factors=[None, vec])[1] if vec < last else loops[-1])
        return
    if vec > 1 and vec < last:
        outer_last, inner = sch.split(loops[-1], factors=[None, vec])
        _parallel_prefix(sch, list(loops[:-1]) + [outer_last])
        sch.vectorize(inner)
    elif vec > 1:
        _parallel_prefix(sch, list(loops[:-1]))
        sch.vectorize(loops[-1])
    else:
        _parallel_prefix(sch, list(loops[:-1]) or list(loops))


def _vectorize_row_reduction(sch: Schedule, block, lanes: int) -> None:
    """Split a row reduction's innermost loop by ``lanes`` (the last piece masked where it does not
    divide) and rfactor the lanes out: ``lanes`` partial results accumulate in a vector (a float sum
    is not reassociated by LLVM, so the plain loop stays scalar, with its ``exp`` or other inlined
    math), then one short loop combines them. The partial results keep the lanes innermost (with the
    lanes outermost every vector access was a gather). Left as it is for a row shorter than two
    vectors or a reduction rfactor cannot factor."""
    loops = sch.get_loops(block)
    if not loops or _extent(sch, loops[-1]) < 2 * lanes or not _is_reduction(sch, block):
        return
    _, inner = sch.split(loops[-1], factors=[None, lanes])
    try:
        factored = sch.rfactor(inner, factor_axis=len(sch.get(block).writes[0].buffer.shape))
    except Exception:  # noqa: BLE001 - e.g. a reduction rfactor does not support: the loop stays scalar
        logger.debug("cannot rfactor the row reduction %s", _name(block))
        return
    rf_loops = sch.get_loops(factored)
    _parallel_prefix(sch, rf_loops[:len(loops) - 1])  # the rows (the lanes and chunks follow)
    sch.vectorize(rf_loops[-1])


def _pack_column_panel(sch: Schedule, block, at, vec: int) -> None:
    """Copy the weight panel a column tile reads (reduction x ``vec``) into a contiguous buffer at loop
    ``at``, so that every row tile streams it with unit stride, where the plain layout hurts: rows a
    multiple of 4 KiB apart (3072 float32 columns put every row of the panel in the same L1 set) or a
    panel over 256 KiB (beyond what the prefetchers follow across rows). BERT/ViT's 768x3072 dense
    layer: 12.8 -> 9.2 ms; a 768x768 one is left alone (packing cost it 5%). Only for a dense layer whose
    panel serves at least 8 row tiles: a convolution's column tile sits inside its image-row loops,
    where a copy per row cost ResNet-50 15%."""
    blk = sch.get(block)
    spatial_last = [iv.var for iv in blk.iter_vars if iv.iter_type == IterVar.DataPar][-1]
    reduce_ivs = [iv for iv in blk.iter_vars if iv.iter_type == IterVar.CommReduce]
    reduce_vars = {id(iv.var) for iv in reduce_ivs}
    reduce_extent = math.prod(int(iv.dom.extent) for iv in reduce_ivs)
    for index, region in enumerate(blk.reads):
        used = {id(v) for r in region.region for v in collect_vars(r.min)}
        if id(spatial_last) not in used or not used & reduce_vars:
            continue
        itemsize = max(1, dt.bits_of(region.buffer.dtype) // 8)
        row_bytes = int(region.buffer.shape[-1]) * itemsize
        if row_bytes % 4096 == 0 or reduce_extent * vec * itemsize > 256 * 1024:
            packed = sch.cache_read(block, index, "global")
            sch.compute_at(packed, at)
            sch.vectorize(sch.get_loops(packed)[-1])
        return


def _pack_weight_at_load(sch: Schedule, block, vec: int) -> bool:
    """Read the block's weight (a parameter the function lists in ``layout_free_buffers``: a graph
    constant) through a copy packed column tile by column tile, ``W[..., n] -> W[n // vec, ..., n % vec]``,
    marked ``layout_rewrite_preproc`` so that the graph packs it once at load (``split_layout_rewrite``).
    Each column tile's weight panel is then one contiguous run that the register tile reads vector by
    vector, instead of ``vec`` floats per row of a wide matrix (every row on another page of a
    ResNet-50 3x3 layer's 9 MiB of weights). Returns whether a weight was packed."""
    func = sch.mod["main"]
    free = {id(func.buffer_map[func.params[int(i)]]) for i in func.attrs.get(LAYOUT_FREE_BUFFERS, ())
            if int(i) < len(func.params) and func.params[int(i)] in func.buffer_map}
    blk = sch.get(block)
    spatial_last = [iv.var for iv in blk.iter_vars if iv.iter_type == IterVar.DataPar][-1]
    for index, region in enumerate(blk.reads):
        shape = [int(s) for s in region.buffer.shape]
        if id(region.buffer) not in free or region.region[-1].min is not spatial_last or shape[-1] % vec:
            continue
        packed = sch.cache_read(block, index, "global")
        sch.transform_layout(packed, ("write", 0), IndexMap.from_func(
            lambda *idx: (idx[-1] // vec, *idx[:-1], idx[-1] % vec), ndim=len(shape)))
        sch.annotate(packed, LAYOUT_REWRITE_PREPROC, 1)
        return True
    return False


def _window_only(sch: Schedule, block) -> bool:
    """Whether ``block`` reduces over a small window only (a depthwise convolution or a pooling: at most
    64 products per output), so its input passes are memory-bound. A reduction over 16 or more channels
    alone (a 1x1 convolution, a matrix product) is not a window: register tiles over its pixels beat the
    streaming order (MobileNet-V2's 64 -> 384 layer 1.17x, its 16 -> 96 one 1.10x, ResNet-50's 64 -> 256
    ones 1.03x)."""
    reduce = [iv for iv in sch.get(block).iter_vars if iv.iter_type == IterVar.CommReduce]
    extents = [int(iv.dom.extent) for iv in reduce]
    if extents and extents[-1] >= 16 and all(e == 1 for e in extents[:-1]):
        return False
    return bool(reduce) and math.prod(extents) <= 64


def _inline_padding(sch: Schedule, block) -> None:
    """Read a window-only reduction's input through its padding (a bounds test per row of the window)
    instead of a padded copy: the copy, made whole or per tile, cost a pass of its own over an input
    that had just left the cache (MobileNet-V2's depthwise layers ran at half their speed)."""
    for producer in sch.get_producers(block):
        if not _name(producer).startswith("pad"):
            continue
        try:
            sch.compute_inline(producer)
        except Exception:  # noqa: BLE001 - the padded copy stays
            logger.debug("cannot inline the padding of %s", _name(block))


def fuse_image_pixels(sch: Schedule, block, epilogue, lanes: int):
    """Fuse the image rows and columns of ``block`` (its second- and third-to-last spatial axes, e.g. a
    convolution's ``y``, ``x``), of the buffer it writes and of ``epilogue`` (else of a local copy made
    here) into one axis of pixels, where the register tile then fills better: a 7x7 image gives 7 rows,
    at most 7 of 12 accumulators busy (4 rows of 2 registers for 7 rows wastes one), where its 49 pixels
    make 9 tiles of 6 rows of 2 registers, the last one half used. Done only where the tile's useful
    accumulators (``_scored_register_tile``) grow by over 5% (MobileNet-V2's 7x7 1x1 convolutions 1.3x, its
    14x14 ones 1.1-1.17x, 56x56 ones up to 1.13x; 12-pixel rows that two 6-row tiles fill stay apart). Not where
    an operand is indexed by only one of the two (a Winograd GEMM's weights by tile position: a tile of rows
    would need a weight vector per row). An epilogue of another shape (a transposed convolution interleaving its
    phases) does not follow: the tile goes to a local copy, and the caller runs the epilogue as a pass of its
    own. The search's ``multi_level_tiling`` makes the same fusion a sketch of its own.

    Parameters
    ----------
    sch : Schedule
        The schedule, changed in place when the pixels fuse (all steps, or none).
    block : BlockRV
        A reduction block with spatial iterators first (``..., y, x, c, <reduction>``) storing ``buf[spatial]``.
    epilogue : BlockRV or None
        Its elementwise consumer, whose iteration space follows; None (or another shape): a local copy.
    lanes : int
        Vector lanes of the target (the register tile the criterion scores).

    Returns
    -------
    BlockRV or None
        The consumer of the fused buffer (the epilogue or the copy), or None when nothing was fused.
    """
    blk = sch.get(block)
    ivs = blk.iter_vars
    ns = _num_spatial(sch, block)
    if ns < 3 or not stores_in_iterator_order(blk, ns):
        return None  # only a block whose iterators run spatial first and whose store is ``buf[spatial]``
    pair = {id(ivs[ns - 3].var), id(ivs[ns - 2].var)}
    for region in blk.reads:
        if len(pair & {id(v) for r in region.region for v in collect_vars(r.min)}) == 1:
            return None  # an operand indexed by one of the two (a Winograd GEMM's weight by tile position)
    last, rows, cols = (int(iv.dom.extent) for iv in (ivs[ns - 1], ivs[ns - 3], ivs[ns - 2]))
    if _scored_register_tile(last, rows * cols, lanes)[2] <= 1.05 * _scored_register_tile(last, cols, lanes)[2]:
        return None
    if epilogue is not None:
        out = sch.get(epilogue)
        if [int(iv.dom.extent) for iv in out.iter_vars] != [int(iv.dom.extent) for iv in ivs[:ns]] \
                or any(iv.iter_type != IterVar.DataPar for iv in out.iter_vars):
            epilogue = None  # another shape (a transposed convolution interleaving its phases): a local copy
    def pixels(ndim):  # (..., y, x, c, <reduction>) -> (..., y * cols + x, c, <reduction>)
        return IndexMap.from_func(lambda *idx: (*idx[:ns - 3], idx[ns - 3] * cols + idx[ns - 2], *idx[ns - 1:]),
                                  ndim=ndim)

    def fuse(target):
        consumer = epilogue if epilogue is not None else target.cache_write(block, 0, "local")
        target.transform_layout(block, ("write", 0), pixels(ns))
        target.transform_block_layout(block, pixels(len(ivs)))
        target.transform_block_layout(consumer, pixels(ns))
        return consumer

    trial = sch.copy()  # tried on a copy first: the steps apply together or not at all
    try:
        consumer = fuse(trial)
        trial.reverse_compute_at(consumer, trial.split(trial.get_loops(block)[ns - 3], [None, 2])[0])
    except Exception:  # noqa: BLE001 - a step does not apply, or the consumer cannot follow the fused tiles
        logger.debug("the pixels of %s stay in rows and columns", _name(block))
        return None
    return fuse(sch)


def _streams(sch: Schedule, block, stream_all: bool) -> bool:
    """Whether ``block`` takes the streaming order (rows outermost, its padding read inline): a window-only
    reduction, or with ``stream_all`` any reduction over an image (3 spatial axes or more)."""
    return _window_only(sch, block) or (stream_all and _num_spatial(sch, block) >= 3)


def _row_factor(sch: Schedule, rows: int, lanes: int, vec: int, sample: bool):
    """The row tile's split factor: ``rows``, or with ``sample`` a ``sample_categorical`` of every row count
    the accumulator registers allow, decided as ``rows`` (the search's mutators then try the others)."""
    if not sample:
        return rows
    options = list(range(1, max(rows, accumulator_registers(lanes) // max(1, vec // lanes)) + 1))
    return sch.sample_categorical(options, [1.0 / len(options)] * len(options), decision=options.index(rows))


def _schedule_reduction(sch: Schedule, block, epilogue, lanes: int, stream_all: bool = False,
                        sample_rows: bool = False) -> None:
    """Register-tile ``block``; compute ``epilogue`` (or a write cache) at the tile."""
    loops = sch.get_loops(block)
    ns = _num_spatial(sch, block)
    spatial, reduce = loops[:ns], loops[ns:]
    last = _extent(sch, spatial[-1]) if spatial else 1
    if ns == 0 or last < 4:  # a row reduction (softmax, mean): parallel rows
        _vectorize_row_reduction(sch, block, lanes)  # before the fuse: it needs the row loops apart
        _parallel_prefix(sch, sch.get_loops(block)[:ns])
        if epilogue is not None:
            _schedule_spatial(sch, epilogue, lanes)
        return
    # (a window-only reduction's weights are a few vectors per channel tile: nothing to gain)
    window = _streams(sch, block, stream_all)
    cache = None
    if not window:
        reuse_rows(sch, block, spatial)
        loops = sch.get_loops(block)
        spatial, reduce = loops[:ns], loops[ns:]
        consumer = fuse_image_pixels(sch, block, epilogue, lanes)
        if consumer is not None:
            cache = consumer if consumer != epilogue else None
            if cache is not None and epilogue is not None:  # fused without the epilogue (another shape)
                _schedule_spatial(sch, epilogue, lanes)
                epilogue = None
            ns -= 1
            loops = sch.get_loops(block)
            spatial, reduce = loops[:ns], loops[ns:]
    rows_extent = _extent(sch, spatial[-2]) if ns >= 2 else 1
    vec, rows = _register_tile(last, rows_extent, lanes)
    packed_at_load = vec >= lanes and not window and _pack_weight_at_load(sch, block, vec)
    s_o, s_i = sch.split(spatial[-1], factors=[None, vec])
    if ns >= 3 and window:
        r_o, r_i = sch.split(spatial[-2], factors=[None, _row_factor(sch, rows, lanes, vec, sample_rows)])
        # A depthwise convolution or a pooling is memory-bound: rows outermost, every column (channel)
        # tile of a row tile inside, so the input and the output stream through once, in order (the
        # column tile outermost read one cache line per pixel on each pass: 2x slower from memory).
        sch.reorder(*spatial[:-2], r_o, s_o, *reduce, r_i, s_i)
        outer = list(spatial[:-2])
    elif ns >= 2:
        r_o, r_i = sch.split(spatial[-2], factors=[None, _row_factor(sch, rows, lanes, vec, sample_rows)])
        # The column tile outermost: its weights (reduction x vec) stay in cache while every other
        # spatial tile passes over them.
        sch.reorder(s_o, *spatial[:-2], r_o, *reduce, r_i, s_i)
        outer = [s_o] + list(spatial[:-2])
        s_o = r_o
    else:
        r_i = None
        sch.reorder(s_o, *reduce, s_i)
        outer = []
    # The tile accumulates in a local buffer: LLVM keeps it in registers, where a global one (which it
    # cannot prove apart from the inputs) costs a load and a store per multiply-add.
    if cache is None:
        cache = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(cache, s_o)
    last_block = cache
    if epilogue is not None:
        sch.reverse_compute_at(epilogue, s_o)
        try:  # the epilogue reads the tile straight from the local buffer
            sch.compute_inline(cache)
        except Exception:  # noqa: BLE001 - the copy stays: still one pass over the tile, in cache
            logger.debug("cannot inline the accumulator copy of %s", _name(block))
        last_block = epilogue
    tail = sch.get_loops(last_block)[len(outer) + 1:]
    if not packed_at_load and outer and all(_extent(sch, lp) == 1 for lp in outer[1:]) and rows_extent // rows >= 8:
        # a dense layer (no batch or image rows around the column tile): the panel serves every row tile
        _pack_column_panel(sch, block, outer[-1], vec)
    _parallel_prefix(sch, outer)
    if reduce:
        sch.decompose_reduction(block, reduce[0])
    if r_i is not None and _extent(sch, r_i) > 1:
        sch.unroll(r_i)
    sch.vectorize(s_i)
    if tail and _extent(sch, tail[-1]) > 1:
        sch.vectorize(tail[-1])


def tiled_schedule(mod, lanes: int = 8, stream_all: bool = False, sample_rows: bool = False) -> Schedule:
    """Schedule 1 of the module docstring: inline, register-tile reductions, fuse epilogues, vectorize.

    Parameters
    ----------
    mod : IRModule or PrimFunc
        The task's program, as ``te`` made it.
    lanes : int
        float32 lanes of the target's vector registers (4, 8 or 16).
    stream_all : bool
        Give every reduction over an image (not only the window-only ones) the streaming order: rows
        outermost, the padding read inline, the weights unpacked. Better for convolutions of few input
        channels (a 7x7 convolution of 3 channels: 108 -> 113 GFLOPS), worse for wide ones.
    sample_rows : bool
        Split the register tile's rows by a ``sample_categorical`` decided as the heuristic's choice
        (the same program), so that a search that starts from this schedule can mutate the row count.

    Returns
    -------
    Schedule
        The scheduled program.
    """
    sch = Schedule(mod)
    blocks = _inline_spatial(sch, keep_pad=True)
    for block in blocks:
        if _is_reduction(sch, block) and _streams(sch, block, stream_all) and _num_spatial(sch, block) >= 3:
            _inline_padding(sch, block)
    blocks = sch.get_child_blocks(sch.get_block("root"))
    done = set()
    for i, block in enumerate(blocks):
        if _name(block) in done:
            continue
        if _is_reduction(sch, block):
            nxt = blocks[i + 1] if i + 1 < len(blocks) else None
            epilogue = None
            if nxt is not None and not _is_reduction(sch, nxt) and _name(nxt) not in done \
                    and [_name(b) for b in sch.get_consumers(block)] == [_name(nxt)]:
                epilogue = nxt
                done.add(_name(nxt))
            _schedule_reduction(sch, block, epilogue, lanes, stream_all, sample_rows)
        else:
            _schedule_spatial(sch, block, lanes)
        done.add(_name(block))
    return sch


def simple_schedule(mod, lanes: int = 8) -> Schedule:
    """Schedule 2 of the module docstring: inline, then parallel outer spatial loops.

    Parameters
    ----------
    mod : IRModule or PrimFunc
        The task's program, as ``te`` made it.
    lanes : int
        float32 lanes of the target's vector registers (4, 8 or 16).

    Returns
    -------
    Schedule
        The scheduled program.
    """
    sch = Schedule(mod)
    for block in _inline_spatial(sch):
        loops = sch.get_loops(block)
        ns = _num_spatial(sch, block)
        if ns:
            _parallel_prefix(sch, loops[:max(1, ns - 1)] if ns > 1 else loops[:1])
    return sch


def default_schedules(mod, lanes: int = 8):
    """Yield the schedules of the module docstring, best first (one that fails to apply is skipped).

    Parameters
    ----------
    mod : IRModule or PrimFunc
        The task's program, as ``te`` made it.
    lanes : int
        float32 lanes of the target's vector registers (4, 8 or 16).

    Yields
    ------
    Schedule
        The tiled schedule, the simple one, then the unscheduled program.
    """
    for make in (tiled_schedule, simple_schedule):
        try:
            yield make(mod, lanes)
        except Exception as err:  # noqa: BLE001 - the next, simpler schedule is tried
            logger.debug("%s failed: %s", make.__name__, err)
    yield Schedule(mod)


def schedule_variants(mod, lanes: int = 8, sample_rows: bool = False) -> list:
    """The tiled schedule and, where it differs, its streaming variant (``tiled_schedule(..., stream_all=True)``):
    the seeds a tuner measures first, so its best is never worse than either.

    Parameters
    ----------
    mod : IRModule or PrimFunc
        The task's program, as ``te`` made it.
    lanes : int
        float32 lanes of the target's vector registers (4, 8 or 16).
    sample_rows : bool
        As ``tiled_schedule``'s: the row counts as decisions a search can mutate.

    Returns
    -------
    list of Schedule
        One or two schedules (none when the tiled schedule does not apply).
    """
    variants = []
    for stream_all in (False, True):
        try:
            sch = tiled_schedule(mod, lanes, stream_all=stream_all, sample_rows=sample_rows)
        except Exception as err:  # noqa: BLE001 - a variant that does not apply is left out
            logger.debug("tiled schedule (stream_all=%s) failed: %s", stream_all, err)
            continue
        if sch.trace.insts and all(str(sch.trace) != str(v.trace) for v in variants):
            variants.append(sch)
    return variants
