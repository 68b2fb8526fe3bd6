"""``HoistTileConfig``: configure the AMX tiles once per thread's share of the work, not once per intrinsic call.

Every AMX impl starts by writing its 64-byte descriptor into a local buffer and running ``ldtilecfg``, so that
the impl is right wherever tensorize puts it. Lowered, a GEMM then reconfigures the tiles before every block of
C. ``ldtilecfg`` is not a cheap register write: it zeroes all eight tiles and waits for the tile unit, and the
AMX libraries configure once per kernel and skip a configuration equal to the loaded one (oneDNN's brgemm
kernels, libxsmm's "no setup / no reset" flags, MLIR's tile-configuration hoisting).

The configuration is per thread and stays until the next ``ldtilecfg`` or ``tilerelease`` (or a call into code
that may use AMX: the ABI makes the tile state volatile across calls). So where every ``ldtilecfg`` of a region
(the body of a parallel loop, run by one thread per iteration, or a function's body outside any parallel loop)
loads the same constant descriptor, and the region holds nothing else that touches the configuration, the pass
loads it once at the region's start and adds a ``tilerelease`` at its end (the thread does not keep the tile
state after the kernel). Regions that do not qualify are left as they are.

For example (one thread per iteration of ``i``)::

    for i in T.parallel(4):                  for i in T.parallel(4):
        for j in range(8):                       cfg[0..7] = ...; ldtilecfg(cfg)
            cfg[0..7] = ...; ldtilecfg(cfg)      for j in range(8):
            tileloadd ... tdpbusd ...                tileloadd ... tdpbusd ...
                                                 tilerelease()

Off with ``PassContext(disabled_pass=["tir.HoistTileConfig"])``.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.expr_build import call_intrin
from ..ir.functor import StmtExprMutator
from ..ir.op_call import call_llvm_intrin
from .pass_infra import func_pass
from .tile_code import LDTILECFG, TILERELEASE, DescriptorScan, config_site, has_tile_code, llvm_intrin_name
from .remove_no_op import is_no_op

# Other instructions that read or change the configuration: a region holding one keeps its per-call loads.
_CONFIG_USERS = ("llvm.x86.sttilecfg", TILERELEASE)
# Calls into other code, which may configure the tiles for itself.
_FOREIGN_CALLS = frozenset({"tir.call_extern"})


class _RegionScan(DescriptorScan):
    """What one region holds: its ``ldtilecfg`` sites and descriptors (``DescriptorScan``), and whether anything
    in it (a nested parallel loop with tile code, another configuration instruction, a foreign call) forbids
    hoisting."""

    def __init__(self):
        super().__init__()
        self.allocs: dict = {}      # descriptor variable -> Allocate
        self.buffers: dict = {}     # descriptor variable -> Buffer
        self.other_loads: set = set()
        self.blocked = False
        self._in_site = False

    def visit_for_(self, op):
        if op.kind == S.ForKind.PARALLEL:
            self.blocked |= has_tile_code(op.body)
            return
        super().visit_for_(op)

    def visit_evaluate_(self, op):
        self._in_site = config_site(op) is not None
        super().visit_evaluate_(op)
        self._in_site = False

    def visit_call_(self, op):
        name = llvm_intrin_name(op)
        if name in _CONFIG_USERS or op.op.name in _FOREIGN_CALLS:
            self.blocked = True
        super().visit_call_(op)

    def visit_buffer_load_(self, op):
        if not self._in_site:
            self.other_loads.add(op.buffer.data)
        super().visit_buffer_load_(op)

    def visit_buffer_store_(self, op):
        self.buffers.setdefault(op.buffer.data, op.buffer)
        super().visit_buffer_store_(op)

    def visit_allocate_(self, op):
        self.allocs[op.buffer_var] = op
        super().visit_allocate_(op)

    def visit_decl_buffer_(self, op):
        self.buffers[op.buffer.data] = op.buffer
        super().visit_decl_buffer_(op)

    def descriptor(self) -> tuple | None:
        """The one descriptor every site loads (its words in index order), or None when the region does not
        qualify."""
        if self.blocked:
            return None
        return self.constant_descriptor(lambda var: var not in self.other_loads and var in self.allocs)


class _StripSites(StmtExprMutator):
    """The region without its descriptors: their allocations, stores and ``ldtilecfg`` calls."""

    def __init__(self, variables):
        super().__init__()
        self.variables = variables

    def visit_for_(self, op):
        return op if op.kind == S.ForKind.PARALLEL else super().visit_for_(op)

    def visit_evaluate_(self, op):
        return S.Evaluate(0) if config_site(op) in self.variables else op

    def visit_buffer_store_(self, op):
        return S.Evaluate(0) if op.buffer.data in self.variables else super().visit_buffer_store_(op)

    def visit_allocate_(self, op):
        return self.visit_stmt(op.body) if op.buffer_var in self.variables else super().visit_allocate_(op)

    def visit_decl_buffer_(self, op):
        return self.visit_stmt(op.body) if op.buffer.data in self.variables else super().visit_decl_buffer_(op)

    def visit_seq_stmt_(self, op):
        seq = [self.visit_stmt(s) for s in op.seq]
        kept = [s for s in seq if not is_no_op(s)]
        return S.SeqStmt.flatten(*kept) if kept else S.Evaluate(0)


class _Hoister(StmtExprMutator):
    def visit_for_(self, op):
        if op.kind == S.ForKind.PARALLEL:
            return op.replace(body=self.region(op.body))
        return super().visit_for_(op)

    def region(self, body):
        """``body`` with its nested parallel regions done, then its own sites hoisted when it qualifies."""
        body = self.visit_stmt(body)
        scan = _RegionScan()
        scan.visit_stmt(body)
        words = scan.descriptor()
        if words is None:
            return body
        variables = set(scan.sites)
        var = scan.sites[0]
        alloc, buffer = scan.allocs[var], scan.buffers[var]
        stores = [S.BufferStore(buffer, E.IntImm(buffer.dtype, w), [E.IntImm("int32", i)]) for i, w in enumerate(words)]
        address = call_intrin("handle", "tir.address_of", E.BufferLoad(buffer, [E.IntImm("int32", 0)]))
        load = S.Evaluate(call_llvm_intrin("void", LDTILECFG, address))
        release = S.Evaluate(call_llvm_intrin("void", TILERELEASE))
        inner = S.SeqStmt.flatten(*stores, load, _StripSites(variables).visit_stmt(body), release)
        return S.Allocate(var, alloc.dtype, alloc.extents, alloc.condition, S.DeclBuffer(buffer, inner),
                          alloc.annotations)


def hoist_tile_config(func):
    """``func`` with its AMX tile configurations loaded once per parallel iteration (or once per call outside
    parallel loops) instead of once per intrinsic call (the PrimFunc-level form of ``HoistTileConfig``).

    Parameters
    ----------
    func : PrimFunc
        The function, lowered to statements (no blocks).

    Returns
    -------
    PrimFunc
        The transformed function; unchanged without ``ldtilecfg`` calls.

    Examples
    --------
    >>> from tensorize.script import tir as T
    >>> @T.prim_func
    ... def f(C: T.Buffer((64,), "int32")):
    ...     for j in range(4):
    ...         cfg = T.allocate([8], "int64", "local")
    ...         cfg_1 = T.decl_buffer((8,), "int64", data=cfg, scope="local")
    ...         cfg_1[0] = T.int64(1)
    ...         T.call_llvm_intrin("void", "llvm.x86.ldtilecfg", T.address_of(cfg_1[0]))
    ...         T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(0), T.address_of(C[j * 16]), T.int64(64))
    >>> text = hoist_tile_config(f).script()
    >>> text.count("ldtilecfg"), text.index("ldtilecfg") < text.index("for j"), "tilerelease" in text
    (1, True, True)
    """
    if not has_tile_code(func.body):
        return func
    return func.with_body(_Hoister().region(func.body))


def HoistTileConfig():  # noqa: N802 - pass names follow TVM's
    """Load each thread's AMX tile configuration once per parallel iteration instead of once per intrinsic call.

    Returns
    -------
    Pass
        The pass (a ``PrimFuncPass``, phase 3 of lowering).
    """
    return func_pass(hoist_tile_config, "tir.HoistTileConfig")
