"""The view of a scheduled program that the features read: its stores, each with its loop nest.

A candidate's module is lowered through phase 0 of the lowering pipeline (blocks become plain loops;
buffers keep their dimensions, loops keep their ``parallel``/``vectorized``/``unrolled`` kinds), which
costs about 2 ms for a tiled GEMM. The walk then records, for every ``BufferStore``, the loops around
it (outermost first), the buffer accesses of the statement (the store and every load of its value,
let-bound values included at their first use), its arithmetic and its calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tensorize.ir import dtype as dt
from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.function import IRModule, PrimFunc
from tensorize.transform.pipeline import phase_passes

__all__ = ["Access", "StoreInfo", "AllocInfo", "ProgramView", "lower_for_features", "collect_program"]

# families of tensor-intrinsic calls (substrings of the LLVM intrinsic name), checked in order
INTRIN_FAMILIES = (
    ("x86_int8_dot", ("vpdpbusd", "vpdpwssd", "pmaddubs", "pmaddw", "vpdpbssd")),
    ("arm_int8_dot", ("sdot", "udot", "aarch64.sve.sdot", "aarch64.sve.udot", "usdot")),
    ("matrix", ("smmla", "ummla", "tdp", "amx", "mma", "wmma")),
    ("float_dot", ("fma", "fmuladd", "dpbf16", "bfmmla", "bfdot")),
)
MATH_CALLS = frozenset({"exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt",
                        "sigmoid", "tanh", "sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan",
                        "atan2", "pow", "erf", "fabs", "floor", "ceil", "round", "trunc", "nearbyint",
                        "fmod", "hypot", "copysign", "ldexp", "isnan", "isinf", "isfinite", "abs"})
_FREE_CALLS = frozenset({"tir.reinterpret", "tir.likely", "tir.type_annotation", "tir.address_of",
                         "tir.tvm_access_ptr"})


@dataclass
class Access:
    """One buffer access of a store: ``buffer[indices]`` with ``lanes`` elements per execution."""

    buffer: object
    indices: tuple
    is_write: bool
    lanes: int


@dataclass
class StoreInfo:
    """A ``BufferStore`` with what surrounds it."""

    loops: list                      # For nodes, outermost first
    accesses: list                   # Access, the store's own first
    ops: dict = field(default_factory=dict)      # op class name -> count per execution
    intrins: dict = field(default_factory=dict)  # family -> calls per execution
    unroll_max_step: int = 0


@dataclass
class AllocInfo:
    """An ``Allocate``: its bytes and the loops around it."""

    buffer_var: object
    nbytes: int
    loops: list


@dataclass
class ProgramView:
    """The stores and allocations of a lowered program, as the feature extractor reads them."""
    stores: list
    allocs: list


def lower_for_features(mod) -> PrimFunc:
    """Phase 0 of the lowering pipeline on ``mod`` (IRModule or PrimFunc); returns its first PrimFunc."""
    if isinstance(mod, PrimFunc):
        mod = IRModule({"main": mod})
    for p in phase_passes(0):
        mod = p(mod)
    for func in mod.functions.values():
        if isinstance(func, PrimFunc):
            return func
    raise ValueError("the module holds no PrimFunc to extract features from")


def _int(e, default: int = 1) -> int:
    return int(e.value) if isinstance(e, E.IntImm) else default


def _lanes(dtype: str) -> int:
    return dt.lanes_of(dtype) if dtype else 1


class _ExprCounter:
    """Counts the arithmetic, calls and loads of one store's expressions. A let-bound value is counted
    at its first use (``charged`` holds the let variables already counted by earlier stores)."""

    def __init__(self, lets: dict, charged: set):
        self.lets = lets
        self.charged = charged
        self.ops: dict = {}
        self.intrins: dict = {}
        self.loads: list = []

    def add(self, key: str, n: int) -> None:
        self.ops[key] = self.ops.get(key, 0) + n

    def visit(self, e) -> None:  # noqa: C901 - one dispatch over expression kinds
        if isinstance(e, (E.IntImm, E.FloatImm, E.StringImm)):
            return
        if isinstance(e, E.Var):
            value = self.lets.get(e)
            if value is not None and e not in self.charged:
                self.charged.add(e)
                self.visit(value)
            return
        if isinstance(e, E.BufferLoad):
            self.loads.append(Access(e.buffer, e.indices, False, _lanes(e.dtype)))
            for i in e.indices:
                self.visit(i)
            return
        lanes = _lanes(e.dtype)
        if isinstance(e, E.BinaryOpExpr):
            kind = "float" if dt.is_float(e.a.dtype) else "bool" if dt.is_bool(e.a.dtype) else "int"
            if isinstance(e, E.CmpOpExpr):
                self.add(f"{kind}_cmp", lanes)
            elif isinstance(e, (E.And, E.Or)):
                self.add("bool_op", lanes)
            elif isinstance(e, E.Add) and (isinstance(e.a, E.Mul) or isinstance(e.b, E.Mul)):
                mul, other = (e.a, e.b) if isinstance(e.a, E.Mul) else (e.b, e.a)
                self.add(f"{kind}_mad", lanes)
                self.visit(mul.a)
                self.visit(mul.b)
                self.visit(other)
                return
            elif isinstance(e, (E.Add, E.Sub)):
                self.add(f"{kind}_addsub", lanes)
            elif isinstance(e, E.Mul):
                self.add(f"{kind}_mul", lanes)
            elif isinstance(e, (E.Div, E.Mod, E.FloorDiv, E.FloorMod)):
                self.add(f"{kind}_divmod", lanes)
            else:  # Min, Max
                self.add(f"{kind}_cmp", lanes)
            self.visit(e.a)
            self.visit(e.b)
            return
        if isinstance(e, E.Not):
            self.add("bool_op", lanes)
            self.visit(e.a)
        elif isinstance(e, E.Select):
            self.add("select_op", lanes)
            self.visit(e.condition)
            self.visit(e.true_value)
            self.visit(e.false_value)
        elif isinstance(e, E.Cast):
            self.add("cast_op", lanes)
            self.visit(e.value)
        elif isinstance(e, E.Ramp):
            self.visit(e.base)
            self.visit(e.stride)
        elif isinstance(e, E.Broadcast):
            self.visit(e.value)
        elif isinstance(e, E.Let):
            self.visit(e.value)
            self.visit(e.body)
        elif isinstance(e, E.Call):
            self._call(e, lanes)
        elif isinstance(e, E.Shuffle):
            for v in e.vectors:
                self.visit(v)

    def _call(self, e, lanes: int) -> None:
        name = getattr(e.op, "name", str(e.op))
        args = e.args
        if name in ("tir.call_llvm_pure_intrin", "tir.call_llvm_intrin"):
            intrin = args[0].value if args and isinstance(args[0], E.StringImm) else ""
            family = next((fam for fam, keys in INTRIN_FAMILIES if any(k in intrin for k in keys)), "other_llvm")
            self.intrins[family] = self.intrins.get(family, 0) + 1
            args = args[1:]
        elif name in ("tir.call_extern", "tir.call_pure_extern", "tir.call_packed", "tir.tvm_call_packed"):
            self.intrins["extern"] = self.intrins.get("extern", 0) + 1
        elif name not in _FREE_CALLS:
            short = name.split(".")[-1]
            kind = "float" if dt.is_float(e.dtype) else "int"
            self.add(f"{kind}_math_func" if short in MATH_CALLS and kind == "float" else f"{kind}_other_func",
                     lanes)
        for a in args:
            self.visit(a)


class _Collector:
    def __init__(self):
        self.loops: list = []
        self.lets: dict = {}
        self.charged: set = set()
        self.stores: list = []
        self.allocs: list = []
        self.unroll_steps: list = [0]

    def visit(self, s) -> None:  # noqa: C901 - one dispatch over statement kinds
        if s is None:
            return
        if isinstance(s, S.BufferStore):
            self._store(s)
        elif isinstance(s, S.For):
            step = s.annotations.get("pragma_auto_unroll_max_step")
            self.loops.append(s)
            self.unroll_steps.append(max(self.unroll_steps[-1], _int(step, 0) if step is not None else 0))
            self.visit(s.body)
            self.unroll_steps.pop()
            self.loops.pop()
        elif isinstance(s, S.SeqStmt):
            for x in s.seq:
                self.visit(x)
        elif isinstance(s, S.LetStmt):
            self.lets[s.var] = s.value
            self.visit(s.body)
        elif isinstance(s, S.Allocate):
            n = 1
            for x in s.extents:
                n *= _int(x)
            self.allocs.append(AllocInfo(s.buffer_var, n * dt.bits_of(s.dtype) * _lanes(s.dtype) // 8,
                                         list(self.loops)))
            self.visit(s.body)
        elif isinstance(s, S.IfThenElse):
            self.visit(s.then_case)
            self.visit(s.else_case)
        elif isinstance(s, (S.AttrStmt, S.AssertStmt, S.DeclBuffer, S.While)):
            self.visit(s.body)
        elif isinstance(s, S.BlockRealize):
            self.visit(s.block.body)
        elif isinstance(s, S.Block):
            self.visit(s.body)

    def _store(self, s) -> None:
        counter = _ExprCounter(self.lets, self.charged)
        counter.visit(s.value)
        for i in s.indices:
            counter.visit(i)
        write = Access(s.buffer, s.indices, True, _lanes(s.value.dtype))
        self.stores.append(StoreInfo(list(self.loops), [write] + counter.loads, counter.ops, counter.intrins,
                                     self.unroll_steps[-1]))


def collect_program(func: PrimFunc) -> ProgramView:
    """The stores and allocations of a lowered ``func`` (see ``lower_for_features``)."""
    c = _Collector()
    c.visit(func.body)
    return ProgramView(c.stores, c.allocs)
