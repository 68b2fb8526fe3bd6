"""``InjectWarpSpecialization`` checked without a GPU: the rewritten program's producer and consumers run as
concurrent agents over a model of the shared-memory transaction barriers (``mbarrier``: arrival counts, phases,
transaction bytes), TMA copies that land at random later times, and ``wgmma`` groups that read their tiles
until a ``wgmma.wait_group`` retires them. Every read must see the tile of its own K iteration for as long as
its group is in flight, and the agents must all finish (no deadlock), for several buffer counts, K lengths,
both B layouts and clusters of two blocks; a pass that freed buffers one group too early is caught."""
from __future__ import annotations

import random

import pytest

import tensorize as tvm
from intrinsics.cuda_wgmma_schedule import gemm_nn, gemm_nt, schedule_wgmma_gemm
from tensorize.arith import Analyzer
from tensorize.errors import TVMError
from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.functor import post_order_visit, substitute
from tensorize.transform.warp_specialize import inject_warp_specialization

_ANALYZER = Analyzer()


def _value(expr, env) -> int:
    free = set()
    post_order_visit(expr, lambda n: free.add(n) if isinstance(n, E.Var) else None)
    out = _ANALYZER.simplify(substitute(expr, {v: E.IntImm(v.dtype, env[v]) for v in free if v in env}))
    assert isinstance(out, E.IntImm), f"{expr} does not evaluate under {env}"
    return int(out.value)


class Barrier:
    def __init__(self, count):
        self.count, self.pending, self.phase, self.tx = count, count, 0, 0

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def arrive(self, tx=0):
        self.tx += tx
        self.pending -= 1
        assert self.pending >= 0, "more arrivals than the barrier's count in one phase"
        self._maybe_complete()

    def landed(self, nbytes):
        self.tx -= nbytes
        self._maybe_complete()

    def passed(self, parity) -> bool:  # try_wait.parity: the phase of that parity has completed
        return self.phase % 2 != parity


class Machine:
    """The blocks of one cluster: their barriers, shared tiles (tags of the K iteration that wrote them) and
    in-flight copies."""

    def __init__(self, ctas, sizes, rng):
        self.ctas, self.sizes, self.rng = ctas, sizes, rng  # sizes: shared data var -> elements of one version
        self.barriers = [{} for _ in range(ctas)]
        self.tiles = [{} for _ in range(ctas)]  # (buffer, version) -> {box offset: tag}
        self.in_flight = []
        self.sync_waiting = {}

    def version(self, data, offset):
        return data, offset // self.sizes[data]

    def land_one(self):
        ctas, data, offset, tag, index, nbytes = self.in_flight.pop(self.rng.randrange(len(self.in_flight)))
        for cta in ctas:
            self.tiles[cta].setdefault(self.version(data, offset), {})[offset] = tag
            self.barriers[cta][index].landed(nbytes)


class Agent:
    """One warpgroup of one block (its lane 0: the other lanes wait on the same barriers and never arrive)."""

    def __init__(self, machine, cta, env, body, expected_boxes):
        self.m, self.cta, self.expected_boxes = machine, cta, expected_boxes
        self.groups, self.open_group = [], []
        self.iteration = None  # (tile, K iteration) of a consumer: its reads must see this tag
        self.tile = 0  # a persistent block's tile step
        self.steps = self.run(body, dict(env))
        self.blocked = None
        self.done = False

    # -- the interpreter: a generator yielding the condition it waits for ------------------------------------
    def run(self, s, env):
        if isinstance(s, S.SeqStmt):
            for item in s.seq:
                yield from self.run(item, env)
        elif isinstance(s, S.For):
            tag = s.thread_binding.thread_tag if s.thread_binding is not None else ""
            if tag == "threadIdx.x":
                yield from self.run(s.body, {**env, s.loop_var: 0})
                return
            assert not tag, f"unexpected thread loop {tag}"
            for i in range(_value(s.min, env), _value(s.min, env) + _value(s.extent, env)):
                if s.loop_var.name == "tile_step":
                    self.tile = i
                if s.loop_var.name.startswith("k_"):
                    self.iteration = (self.tile, i)
                yield from self.run(s.body, {**env, s.loop_var: i})
        elif isinstance(s, S.IfThenElse):
            if _value(s.condition, env):
                yield from self.run(s.then_case, env)
            elif s.else_case is not None:
                yield from self.run(s.else_case, env)
        elif isinstance(s, S.LetStmt):
            rank = isinstance(s.value, E.Call) and s.value.op.name == "tir.ptx_cluster_rank"
            yield from self.run(s.body, {**env, s.var: self.cta if rank else _value(s.value, env)})
        elif isinstance(s, (S.AttrStmt, S.Allocate, S.DeclBuffer)):
            yield from self.run(s.body, env)
        elif isinstance(s, S.Evaluate) and isinstance(s.value, E.Call):
            yield from self.call(s.value, env)

    def call(self, call, env):
        name = call.op.name[len("tir."):]
        bars = self.m.barriers[self.cta]
        if name == "ptx_mbarrier_init":
            bars[_value(call.args[1], env)] = Barrier(_value(call.args[2], env))
        elif name == "ptx_mbarrier_wait":
            index, parity = _value(call.args[1], env), _value(call.args[2], env)
            yield lambda: bars[index].passed(parity)
        elif name == "ptx_mbarrier_arrive":
            target = _value(call.args[2], env) if len(call.args) > 2 else self.cta
            self.m.barriers[target][_value(call.args[1], env)].arrive()
        elif name == "ptx_mbarrier_arrive_expect_tx":
            bars[_value(call.args[1], env)].arrive(tx=_value(call.args[2], env))
        elif name == "ptx_tma_load":
            access = call.args[0].args
            rows, cols = _value(call.args[4], env), _value(call.args[5], env)
            mask = _value(call.args[9], env) if len(call.args) > 9 else 1 << self.cta
            targets = [c for c in range(self.m.ctas) if mask >> c & 1]
            self.m.in_flight.append((targets, access[1], _value(access[2], env), self.iteration,
                                     _value(call.args[8], env), rows * cols * 2))
        elif name == "ptx_wgmma":
            for access in (call.args[4], call.args[7]):
                self.open_group.append((access.args[1], _value(access.args[2], env), self.iteration))
            self.check(self.open_group[-2:])
        elif name == "ptx_wgmma_commit_group":
            self.groups.append(self.open_group)
            self.open_group = []
        elif name == "ptx_wgmma_wait_group":
            keep = _value(call.args[0], env)
            while len(self.groups) > keep:  # a group retires: its reads must still see their tiles
                self.check(self.groups.pop(0))
        elif name in ("tvm_storage_sync", "ptx_cluster_sync"):
            key = (name, self.cta if name == "tvm_storage_sync" else None)
            waiting = self.m.sync_waiting.setdefault(key, [0, 0])  # arrived, generation
            generation = waiting[1]
            waiting[0] += 1
            expected = self.m.agents_per_cta * (1 if name == "tvm_storage_sync" else self.m.ctas)
            if waiting[0] == expected:
                waiting[0], waiting[1] = 0, generation + 1
            yield lambda: waiting[1] > generation

    def check(self, reads):
        for data, offset, tag in reads:
            boxes = self.m.tiles[self.cta].get(self.m.version(data, offset), {})
            assert len(boxes) == self.expected_boxes[data] and all(t == tag for t in boxes.values()), (
                f"block {self.cta} iteration {tag} reads {data.name} version {offset // self.m.sizes[data]} holding "
                f"iterations {sorted(boxes.values())}")

    def step(self) -> bool:
        """Advance until blocked or finished; whether anything happened."""
        if self.done or (self.blocked is not None and not self.blocked()):
            return False
        try:
            self.blocked = next(self.steps)
        except StopIteration:
            self.done = True
        return True


def _simulate(func, ctas=1, seed=0, block_x=None):
    body, outer = func.body, {}
    while not (isinstance(body, S.For) and body.thread_binding is not None
               and body.thread_binding.thread_tag == "threadIdx.y"):
        if isinstance(body, S.For):  # blockIdx loops: the cluster's blocks are 0 .. ctas - 1
            outer[body.loop_var] = body
        body = body.body if not isinstance(body, S.SeqStmt) else body.seq[0]
    barriers = body.body  # the pass's allocation of 2 barriers per buffer wraps the warpgroups' body
    assert isinstance(barriers, S.Allocate) and barriers.dtype == "uint64"
    stages = int(barriers.extents[0].value) // 2
    sizes, boxes = {}, {}  # shared tile -> elements of one version; tile -> its TMA copies

    def visit(n):
        if isinstance(n, S.Allocate) and n.buffer_var.name.endswith("_shared"):
            sizes[n.buffer_var] = int(n.extents[0].value) // stages
        if isinstance(n, E.Call) and n.op.name == "tir.ptx_tma_load":
            boxes.setdefault(n.args[0].args[1], set()).add(n)

    post_order_visit(body, visit)
    rng = random.Random(seed)
    machine = Machine(ctas, sizes, rng)
    machine.agents_per_cta = int(body.extent.value)
    # boxes a version holds: from the copies' sizes (a multicast copies 1 / ctas of a tile per block)
    expected = {}
    for data, calls in boxes.items():
        box = int(next(iter(calls)).args[4].value) * int(next(iter(calls)).args[5].value)
        expected[data] = sizes[data] // box
    agents = []
    for cta in range(ctas):
        env = {var: (cta if var is getattr(block_x, "loop_var", None) else 0) for var in outer}
        for ty in range(machine.agents_per_cta):
            agents.append(Agent(machine, cta, {**env, body.loop_var: ty}, body.body, expected))
    while not all(a.done for a in agents):
        moved = [a for a in agents if a.step()]
        if machine.in_flight and (not moved or rng.random() < 0.5):
            machine.land_one()
        elif not moved:
            raise AssertionError("deadlock: every warpgroup waits and no copy is in flight")
    assert not machine.in_flight


def _specialized(workload, K, stages, **kw):
    sch = schedule_wgmma_gemm(workload(256, 512, K), warpgroups=2, n=256, stages=stages, fetch="tma", **kw)
    return inject_warp_specialization(tvm.lower(sch.mod)["main"])


def _block_x(func):
    found = []
    post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, S.For) and n.thread_binding is not None
                     and n.thread_binding.thread_tag == "blockIdx.x" else None)
    return found[0]


@pytest.mark.parametrize("workload", [gemm_nt, gemm_nn])
@pytest.mark.parametrize("K, stages", [(64 * 5, 2), (64 * 7, 3), (64 * 2, 4), (64 * 9, 4)])
def test_every_read_sees_its_own_tile(workload, K, stages):
    func = _specialized(workload, K, stages)
    for seed in range(3):
        _simulate(func, seed=seed)


@pytest.mark.parametrize("K, stages", [(64 * 3, 2), (64 * 3, 4), (64 * 5, 3)])
def test_persistent_blocks_carry_the_buffers_over_their_tiles(K, stages):
    """Each block walks 2 tiles; the buffer sequence and the barrier phases run on across the tiles (K tiles
    not a multiple of the buffers, or fewer), so the producer fills the next tile's buffers early."""
    func = _specialized(gemm_nt, K, stages, group=2, persistent=3)
    assert int(_block_x(func).extent.value) == 2  # 4 tiles of 128 x 256: 2 blocks (the divisor of 4 up to 3)
    for seed in range(3):
        _simulate(func, seed=seed)


@pytest.mark.parametrize("workload", [gemm_nt, gemm_nn])
def test_clusters_of_two_share_the_tile_safely(workload):
    func = _specialized(workload, 64 * 6, 3, group=2, cluster=2)
    for seed in range(3):
        _simulate(func, ctas=2, seed=seed, block_x=_block_x(func))


def test_freeing_a_buffer_a_group_early_is_caught():
    """Consumers that free the previous buffer while its wgmma group may still read it: the model finds a tile
    overwritten under a pending group for some interleaving."""
    from tensorize.transform import warp_specialize

    original = warp_specialize._commit_groups
    warp_specialize._commit_groups = lambda stmt: original(stmt) + 1  # wait for one group fewer
    try:
        func = _specialized(gemm_nt, 64 * 8, 2)
    finally:
        warp_specialize._commit_groups = original
    failures = 0
    for seed in range(12):
        try:
            _simulate(func, seed=seed)
        except AssertionError as err:
            assert "reads" in str(err)
            failures += 1
    assert failures


def test_loops_it_cannot_rewrite_are_refused():
    sch = schedule_wgmma_gemm(gemm_nt(256, 512, 256), stages=3, fetch="tma")
    func = tvm.lower(sch.mod)["main"]

    def strip_threads(node):  # the warpgroup loop made serial: no threadIdx.y around the annotated loop
        if isinstance(node, S.For) and node.thread_binding is not None \
                and node.thread_binding.thread_tag == "threadIdx.y":
            return S.For(node.loop_var, node.min, node.extent, S.ForKind.SERIAL, node.body, None, node.annotations)
        return None

    from tensorize.ir.functor import ir_transform

    with pytest.raises(TVMError, match="threadIdx.y"):
        inject_warp_specialization(func.with_body(ir_transform(func.body, None, strip_threads, ["tir.For"])))


def test_copied_statements_define_their_own_variables():
    """The software pipeline's and the unroller's copies of a statement define fresh loop variables: a lowered
    pipelined GEMM defines no variable twice (it reads back structurally equal)."""
    from tensorize.ir.structural import assert_structural_equal
    from tensorize.script import from_source

    lowered = tvm.lower(schedule_wgmma_gemm(gemm_nt(128, 256, 256), stages=2).mod)
    assert_structural_equal(from_source(lowered.script()), lowered)
