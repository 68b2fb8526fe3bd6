"""``InjectWarpSpecialization``: a producer warpgroup feeds the K loop with TMA copies; the others multiply.

A loop annotated ``warp_specialize_stages = S`` (``sch.annotate(k0, WARP_SPECIALIZE, 4)``; the wgmma GEMM
schedule's ``fetch="tma"``) whose body is its tile copies (``ptx_tma_load``, tensorized with
``intrinsics.cuda_tma``) followed by the compute that reads them, inside the loop bound to ``threadIdx.y``
(the warpgroups, ``W`` of them), is rewritten into the Hopper GEMM's producer/consumer form:

* ``threadIdx.y`` gets one more warpgroup, ``W``: the **producer**. It lowers its register budget
  (``setmaxnreg.dec``), and one thread walks the K loop: for iteration ``k`` it waits until buffer
  ``k % S`` is free (``empty[k % S]``), announces the bytes to come on ``full[k % S]`` and issues the TMA
  copies of the tiles into that buffer; the copies complete the barrier's phase when they land.
* Warpgroups ``0 .. W - 1`` are the **consumers**: they raise their register budget, and for each ``k``
  wait for ``full[k % S]``, issue their (asynchronous) ``wgmma``, wait until only this iteration's groups
  are in flight, and then free the buffer of iteration ``k - 1`` (one arrival per consumer warpgroup on
  ``empty``). The rest of their body (accumulator initialisation before the loop, the store after it)
  is unchanged.

The shared tiles the copies write get ``S`` versions (iteration ``k`` uses version ``k % S``). The two
barrier arrays live in shared memory (``uint64``, ``2 S`` of them) and are initialised by one thread before
a block-wide barrier; the region is marked ``pipeline_explicit_sync`` so the code generator adds no
``__syncthreads()`` inside it (a barrier inside one side of the split would never be reached by the other).

With ``warp_specialize_cluster = C`` (``schedule_wgmma_gemm(cluster=2)``) the ``C`` consecutive blocks of
``blockIdx.x`` form a thread block cluster: a copy whose tile is the same for all of them (found by evaluating
its offsets for the first block pairs) is split among them, each copying its share and multicasting it to
all; a consumer frees a buffer on every block's ``empty`` barrier (``C W`` arrivals), and a cluster-wide
barrier follows the barriers' initialisation and precedes the exit (no block may leave while another still
arrives on its barriers). The kernel gets ``__cluster_dims__`` from the ``cluster_dims`` attribute.

With ``warp_specialize_persistent = P`` the grid shrinks to the largest divisor ``B`` of the tiles not above ``P``
and each side walks its block's tiles ``t * B + blockIdx.x`` in a serial loop, the buffers and barrier phases
running on over the tiles (step ``t * n + k``): the producer copies the next tile's first K tiles while the
consumers still store the previous tile's result.

The pass runs in the CUDA code generator (``tensorize.codegen.cuda.split_kernels``), not in the common
lowering: a serial emulation of the threads cannot run a producer and its consumers concurrently, so
``run_warp_emulated`` runs the loop as written (copy, then multiply, per iteration), which computes the
same numbers.

Loops it cannot rewrite raise a ``TVMError`` that names what is missing.
"""
from __future__ import annotations

from ..arith import Analyzer
from ..errors import TVMError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import calls_op, ir_transform, post_order_visit, substitute
from ..ir.mutator import StmtExprMutator
from .inject_software_pipeline import EXPLICIT_SYNC, _Versioned, hoisted_allocations, versioned_allocations

WARP_SPECIALIZE = "warp_specialize_stages"
WARP_SPECIALIZE_CLUSTER = "warp_specialize_cluster"  # CTAs of blockIdx.x that share a tile by TMA multicast
WARP_SPECIALIZE_PERSISTENT = "warp_specialize_persistent"  # at most this many CTAs, each walking several tiles
CLUSTER_DIMS = "cluster_dims"  # the attribute telling the code generator the kernel's cluster (x)
TMA_LOAD = "tir.ptx_tma_load"
PRODUCER_REGISTERS = 40  # the producer only issues copies
CONSUMER_REGISTERS = 232  # 128 accumulator registers and the descriptors; 40 * 128 + 232 * 256 <= 64K
_I32 = "int32"


def _int(value: int):
    return E.IntImm(_I32, value)


def _call(name: str, *args):
    return S.Evaluate(E.Call(_I32, E.Op.get("tir." + name), tuple(args)))


def _tma_bytes(stmt):
    """The bytes ``stmt`` copies when it is TMA copies only (possibly in constant serial loops), else None."""
    if isinstance(stmt, S.Evaluate) and isinstance(stmt.value, E.Call) and stmt.value.op.name == TMA_LOAD:
        call = stmt.value
        rows, cols = (int(a.value) for a in call.args[4:6])
        return rows * cols * dt.bits_of(call.args[0].args[0].dtype) // 8  # the access_ptr's element type
    if isinstance(stmt, S.For) and stmt.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED) \
            and isinstance(stmt.extent, E.IntImm):
        inner = _tma_bytes(stmt.body)
        return None if inner is None else inner * int(stmt.extent.value)
    if isinstance(stmt, S.SeqStmt):
        parts = [_tma_bytes(s) for s in stmt.seq]
        return None if None in parts else sum(parts)
    return None


def _is_tma(stmt) -> bool:
    return _tma_bytes(stmt) is not None


def _extend_copies(stmt, extend):
    """``stmt`` with the arguments of every TMA copy in it replaced by ``extend(args)``."""
    return ir_transform(stmt, None, lambda n: E.Call(n.dtype, n.op, extend(n.args)) if n.op.name == TMA_LOAD else None,
                        ["tir.Call"])


def _with_barrier(stmt, bar, index):
    """Every TMA copy of ``stmt`` completing on ``bar[index]`` (placed before a multicast mask)."""
    return _extend_copies(stmt, lambda args: (*args[:7], bar, index, *args[7:]))


def _tag(loop) -> str:
    return loop.thread_binding.thread_tag if loop.thread_binding is not None else ""


def _thread_loops(stmt, tag: str) -> list:
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, S.For) and n.kind == S.ForKind.THREAD_BINDING
                     and _tag(n) == tag else None)
    return found


def _commit_groups(stmt) -> int:
    """The ``wgmma`` commit groups one execution of ``stmt`` issues (per thread: lane loops count once)."""
    if isinstance(stmt, S.Evaluate):
        return int(isinstance(stmt.value, E.Call) and stmt.value.op.name == "tir.ptx_wgmma_commit_group")
    if isinstance(stmt, S.SeqStmt):
        return sum(_commit_groups(s) for s in stmt.seq)
    if isinstance(stmt, S.For):
        inner = _commit_groups(stmt.body)
        if stmt.kind == S.ForKind.THREAD_BINDING or not inner:
            return inner
        if not isinstance(stmt.extent, E.IntImm):
            raise TVMError(f"the loop {stmt.loop_var.name} around wgmma groups has a symbolic extent; the "
                           "warp-specialised consumer needs a constant number of groups per iteration")
        return inner * int(stmt.extent.value)
    if isinstance(stmt, S.IfThenElse):
        return max(_commit_groups(stmt.then_case), _commit_groups(stmt.else_case) if stmt.else_case else 0)
    body = getattr(stmt, "body", None)
    return _commit_groups(body) if body is not None else 0


class _Specializer(StmtExprMutator):
    def __init__(self):
        self.block_x = None  # the enclosing loop bound to blockIdx.x
        self.blocks = None  # the blocks a persistent rewrite inside it launches

    def visit_for_(self, op):
        if op.kind == S.ForKind.THREAD_BINDING and _tag(op) == "blockIdx.x":
            outer = self.block_x, self.blocks
            self.block_x, self.blocks = op, None
            try:
                new = super().visit_for_(op)
                if self.blocks is not None:  # persistent: fewer blocks, each walking its tiles
                    new = S.For(new.loop_var, new.min, _int(self.blocks), new.kind, new.body, new.thread_binding,
                                new.annotations)
                return new
            finally:
                self.block_x, self.blocks = outer
        if op.kind == S.ForKind.THREAD_BINDING and _tag(op) == "threadIdx.y":
            loops = []
            post_order_visit(op.body, lambda n: loops.append(n) if isinstance(n, S.For)
                             and WARP_SPECIALIZE in (n.annotations or {}) else None)
            if loops:
                if len(loops) > 1:
                    raise TVMError("one warp-specialised loop per warpgroup loop is supported; found "
                                   f"{[loop.loop_var.name for loop in loops]}")
                new, blocks = _specialize(op, loops[0], self.block_x)
                if blocks is not None:
                    self.blocks = blocks
                return new
        if WARP_SPECIALIZE in (op.annotations or {}):
            raise TVMError(f"the loop {op.loop_var.name} is annotated {WARP_SPECIALIZE} but is not inside a loop "
                           "bound to threadIdx.y (the consumer warpgroups); bind the warpgroup loop to threadIdx.y")
        return super().visit_for_(op)


def _ann_int(loop, key, default=0) -> int:
    value = (loop.annotations or {}).get(key, default)
    return int(getattr(value, "value", value))


def _offsets(stmt):
    found = []
    post_order_visit(stmt, lambda n: found.append(n.args[2]) if isinstance(n, E.Call) and n.op.name == TMA_LOAD
                     else None)
    return found


def _shared_by_pairs(fetch, block_x) -> bool:
    """Whether the CTAs ``2c`` and ``2c + 1`` of ``blockIdx.x`` copy the same tiles in ``fetch`` (its offsets
    evaluated with every other variable at 0, for the first block pairs)."""
    analyzer = Analyzer()
    variables = set()
    for offset in _offsets(fetch):
        post_order_visit(offset, lambda n: variables.add(n) if isinstance(n, E.Var) else None)
    pairs = min(int(block_x.extent.value) // 2, 64)
    for offset in _offsets(fetch):
        for c in range(pairs):
            values = []
            for x in (2 * c, 2 * c + 1):
                env = {v: _int(x if v is block_x.loop_var else 0) for v in variables}
                values.append(analyzer.simplify(substitute(offset, env)))
            if not all(isinstance(v, E.IntImm) for v in values) or values[0].value != values[1].value:
                return False
    return True


def _replaced(stmt, old, new):
    """``stmt`` with the statement ``old`` in it replaced by ``new``."""
    return ir_transform(stmt, lambda n: new if n is old else None, None, ["tir.For"])


def _halved(fetch, rank, cluster):
    """``fetch`` split among the ``cluster`` CTAs: CTA ``rank`` copies its share of the tile (half of a single box's
    rows, or of a loop's boxes) and multicasts it to all of them."""
    mask = _int((1 << cluster) - 1)
    if isinstance(fetch, S.Evaluate):
        call = fetch.value
        dst, src, offset, ld, rows, cols, *rest = call.args
        if int(rows.value) % cluster:
            raise TVMError(f"a TMA box of {rows} rows cannot be split among a cluster of {cluster}")
        part = int(rows.value) // cluster
        access = list(dst.args)
        access[2] = E.add(access[2], E.mul(rank, _int(part * int(cols.value))))
        access[3] = _int(part * int(cols.value))
        dst = E.Call(dst.dtype, dst.op, tuple(access))
        return S.Evaluate(E.Call(call.dtype, call.op, (dst, src, E.add(offset, E.mul(rank, E.mul(ld, _int(part)))),
                                                       ld, _int(part), cols, *rest, mask)))
    if isinstance(fetch, S.For) and isinstance(fetch.extent, E.IntImm) and int(fetch.extent.value) % cluster == 0:
        part = int(fetch.extent.value) // cluster
        inner = E.Var(fetch.loop_var.name, fetch.loop_var.dtype)
        body = substitute(fetch.body, {fetch.loop_var: E.add(E.mul(rank, _int(part)), inner)})
        return S.For(inner, _int(0), _int(part), fetch.kind, _extend_copies(body, lambda args: (*args, mask)), None,
                     {})
    raise TVMError("a cluster shares a single TMA box or a loop of boxes whose count the cluster divides")


def _split_body(k_loop):
    """(hoisted allocations, TMA copy statements, compute statements) of the warp-specialised loop's body."""
    allocs, body = hoisted_allocations(k_loop.body)
    items = list(body.seq) if isinstance(body, S.SeqStmt) else [body]
    fetches = [s for s in items if _is_tma(s)]
    computes = [s for s in items if not _is_tma(s)]
    if not fetches or not computes or any(calls_op(s, TMA_LOAD) for s in computes):
        raise TVMError(f"the warp-specialised loop {k_loop.loop_var.name} must hold its TMA tile copies "
                       "(ptx_tma_load statements, or constant loops of them, in its body) and the compute that reads "
                       "them")
    return allocs, fetches, computes


def _cluster_fetches(fetches, block_x, rank, cluster):
    """The copies of one block of a cluster: the tiles its blocks share split among them and multicast."""
    if block_x is None or not isinstance(block_x.extent, E.IntImm) or int(block_x.extent.value) % cluster:
        raise TVMError(f"a cluster of {cluster} CTAs needs a blockIdx.x extent it divides")
    shared = [_shared_by_pairs(fetch, block_x) for fetch in fetches]
    if not any(shared):
        raise TVMError("no tile is the same for neighbouring CTAs of blockIdx.x, so a cluster has nothing to "
                       "multicast; walk the grid in an even number of block rows (schedule_wgmma_gemm group=8)")
    return [_halved(f, rank, cluster) if sh else f for f, sh in zip(fetches, shared)]


def _specialize(ty_loop, k_loop, block_x=None):
    stages = _ann_int(k_loop, WARP_SPECIALIZE)
    cluster = _ann_int(k_loop, WARP_SPECIALIZE_CLUSTER, 1)
    persistent = _ann_int(k_loop, WARP_SPECIALIZE_PERSISTENT, 0)
    if stages < 2:
        raise TVMError(f"{WARP_SPECIALIZE} = {stages}: the producer needs at least 2 buffers")
    if not isinstance(ty_loop.extent, E.IntImm) or not isinstance(k_loop.extent, E.IntImm) \
            or not (isinstance(k_loop.min, E.IntImm) and k_loop.min.value == 0):
        raise TVMError("the warp-specialised loop and the warpgroup loop need constant extents (and the loop a "
                       "zero start)")
    consumers, n = int(ty_loop.extent.value), int(k_loop.extent.value)
    allocs, fetches, computes = _split_body(k_loop)
    lanes = _thread_loops(S.SeqStmt(computes), "threadIdx.x")
    if not lanes:
        raise TVMError("the warp-specialised compute has no loop bound to threadIdx.x (the warpgroup's lanes)")
    lane_binding, lane_extent = lanes[0].thread_binding, lanes[0].extent
    groups = _commit_groups(S.SeqStmt(computes))
    fetched = set()
    for fetch in fetches:
        post_order_visit(fetch, lambda n: fetched.add(n.args[0].args[1]) if isinstance(n, E.Call)
                         and n.op.name == TMA_LOAD else None)
    try:
        wraps, versions = versioned_allocations(allocs, {data: stages for data in fetched})
    except ValueError as err:
        raise TVMError(f"the warp-specialised loop cannot version its tiles: {err}") from err
    if set(versions) != fetched:
        raise TVMError("the tiles the TMA copies write must be allocated in the warp-specialised loop's body")
    bar = E.Var("tz_mbar", E.PointerType("uint64", "shared"))
    k = k_loop.loop_var
    tiles, blocks, walk = _persistence(block_x, persistent, cluster)
    step = E.add(E.mul(walk, _int(n)), k) if walk is not None else k  # the buffer sequence runs over all tiles
    slot = E.floormod(step, _int(stages))
    phase = E.floormod(E.floordiv(step, _int(stages)), _int(2))
    ty = ty_loop.loop_var
    tile_of = {} if walk is None else {block_x.loop_var: E.add(E.mul(walk, _int(blocks)), block_x.loop_var)}

    def lane_loop(make_body):
        tx = E.Var("tx", _I32)
        return S.For(tx, _int(0), lane_extent, S.ForKind.THREAD_BINDING, make_body(tx), lane_binding, {})

    # the producer: one thread waits for a free buffer, announces the bytes, issues the copies (with a cluster,
    # the tiles the CTAs share are split among them and multicast: each CTA still receives all their bytes)
    nbytes = sum(_tma_bytes(fetch) for fetch in fetches)
    rank = E.Var("cta_rank", _I32)
    if cluster > 1:
        fetches = _cluster_fetches(fetches, block_x, rank, cluster)
    copies = [substitute(_with_barrier(_Versioned(versions, step).visit(fetch), bar, slot), tile_of)
              for fetch in fetches]
    free = S.IfThenElse(E.GE(step, _int(stages)), _call(
        "ptx_mbarrier_wait", bar, E.add(slot, _int(stages)),
        E.floormod(E.add(E.floordiv(step, _int(stages)), _int(1)), _int(2))))
    announce = _call("ptx_mbarrier_arrive_expect_tx", bar, slot, _int(nbytes))
    produce = _walk(walk, tiles, S.For(k, _int(0), _int(n), S.ForKind.SERIAL, S.SeqStmt([free, announce, *copies]),
                                       None, {}))
    producer = lane_loop(lambda tx: S.SeqStmt([_call("ptx_setmaxnreg", _int(0), _int(PRODUCER_REGISTERS)),
                                              S.IfThenElse(E.EQ(tx, _int(0)), produce)]))

    # the consumers: wait for the tile, multiply, free the previous iteration's buffer once its wgmma are done
    def release(tx):
        last = E.floormod(E.sub(step, _int(1)), _int(stages))
        arrive = ([_call("ptx_mbarrier_arrive", bar, E.add(last, _int(stages)))] if cluster == 1 else
                  [_call("ptx_mbarrier_arrive", bar, E.add(last, _int(stages)), _int(cta)) for cta in range(cluster)])
        return S.SeqStmt([_call("ptx_wgmma_wait_group", _int(groups)),
                          S.IfThenElse(E.And(E.EQ(tx, _int(0)), E.GT(step, _int(0))), S.SeqStmt(arrive))])

    consume = S.For(k, _int(0), _int(n), S.ForKind.SERIAL, S.SeqStmt([
        lane_loop(lambda tx: _call("ptx_mbarrier_wait", bar, slot, phase)),
        *(_Versioned(versions, step).visit(s) for s in computes),
        lane_loop(release)]), None, {})
    consumer = S.SeqStmt([lane_loop(lambda tx: _call("ptx_setmaxnreg", _int(1), _int(CONSUMER_REGISTERS))),
                          _walk(walk, tiles, substitute(_replaced(ty_loop.body, k_loop, consume), tile_of))])

    def init(tx):
        inits = [_call("ptx_mbarrier_init", bar, _int(s), _int(1)) for s in range(stages)]
        inits += [_call("ptx_mbarrier_init", bar, _int(stages + s), _int(consumers * cluster)) for s in range(stages)]
        return S.IfThenElse(E.And(E.EQ(ty, _int(0)), E.EQ(tx, _int(0))), S.SeqStmt(inits))

    split = S.IfThenElse(E.EQ(ty, _int(consumers)), producer, consumer)
    if cluster == 1:
        sync = S.Evaluate(E.Call(_I32, E.Op.get("tir.tvm_storage_sync"), (E.StringImm("shared"),)))
        body = [lane_loop(init), sync, split]
    else:  # the barriers of every CTA are initialised before any is used, and no CTA exits while others use its
        cluster_sync = lane_loop(lambda tx: _call("ptx_cluster_sync"))  # barriers or shared memory
        body = [lane_loop(init), cluster_sync, S.LetStmt(rank, E.Call(_I32, E.Op.get("tir.ptx_cluster_rank"), ()),
                                                         split), cluster_sync]
    new_body = S.AttrStmt(E.StringImm("default"), EXPLICIT_SYNC, _int(1), S.SeqStmt(body))
    if cluster > 1:
        new_body = S.AttrStmt(E.StringImm("default"), CLUSTER_DIMS, _int(cluster), new_body)
    for wrap in reversed(wraps):
        new_body = wrap(new_body)
    new_body = S.Allocate(bar, "uint64", [_int(2 * stages)], E.IntImm("bool", 1), new_body)
    return S.For(ty, ty_loop.min, _int(consumers + 1), ty_loop.kind, new_body, ty_loop.thread_binding,
                 ty_loop.annotations), (blocks if walk is not None else None)


def _persistence(block_x, persistent, cluster):
    """(tiles per block, blocks, the loop variable walking a block's tiles) of a persistent rewrite, or
    (1, None, None) without one: the blocks are the largest divisor of the tiles not above ``persistent``."""
    if not persistent:
        return 1, None, None
    if cluster > 1 or block_x is None or not isinstance(block_x.extent, E.IntImm):
        raise TVMError("persistent thread blocks need a constant blockIdx.x loop of tiles and no cluster")
    count = int(block_x.extent.value)
    blocks = max(d for d in range(1, min(count, persistent) + 1) if count % d == 0)
    return count // blocks, blocks, E.Var("tile_step", _I32)


def _walk(walk, tiles, body):
    """``body`` inside the loop over a persistent block's tiles (``body`` itself without one)."""
    if walk is None:
        return body
    return S.For(walk, _int(0), _int(tiles), S.ForKind.SERIAL, body, None, {})


def inject_warp_specialization(func):
    """``func`` with its ``warp_specialize_stages`` loops split into a TMA producer and wgmma consumers.

    Parameters
    ----------
    func : PrimFunc
        A lowered PrimFunc.

    Returns
    -------
    PrimFunc
        The transformed function (``func`` itself when no loop is annotated).

    Raises
    ------
    TVMError
        When an annotated loop is not of the form described in the module docstring.
    """
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, S.For)
                     and WARP_SPECIALIZE in (n.annotations or {}) else None)
    if not found:
        return func
    return func.with_body(_Specializer().visit(func.body))
