"""The AMX tile machine in code: the tile configuration, each instruction's operand types, and the instruction
sequences of the intrinsics' impls (``intrinsics.x86_amx`` registers the intrinsics; its docstring is the
datasheet).

An impl configures the tiles, loads the ``mt x nt`` accumulator tiles, runs ``ks`` K steps of ``mt`` A tile
loads, ``nt`` B tile loads and ``mt * nt`` tile multiplies, and stores the accumulators. ``ImplOptions`` says how
a step's instructions are ordered and hinted; the computation is the same for every option.

>>> ImplOptions(issue="grouped", prefetch="b").suffix()
'_grouped_rows_prefetch_b2'
"""
from __future__ import annotations

from dataclasses import dataclass

from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.op import call_llvm_intrin
from tensorize.script import tir as T

TILE_ROWS = 16
TILE_BYTES = 64  # bytes per tile row
NUM_TILES = 8
TILE_CONFIG_BYTES = 64
FEATURES_INT8 = ("amx-tile", "amx-int8")
FEATURES_BF16 = ("amx-tile", "amx-bf16")

# (A dtype, B dtype) -> (instruction, accumulator dtype, K per tile step, features)
INSTRUCTIONS = {
    ("uint8", "int8"): ("tdpbusd", "int32", 64, FEATURES_INT8),
    ("int8", "int8"): ("tdpbssd", "int32", 64, FEATURES_INT8),
    ("int8", "uint8"): ("tdpbsud", "int32", 64, FEATURES_INT8),
    ("uint8", "uint8"): ("tdpbuud", "int32", 64, FEATURES_INT8),
    ("bfloat16", "bfloat16"): ("tdpbf16ps", "float32", 32, FEATURES_BF16),
}



def tile_config(rows: int = TILE_ROWS, colsb: int = TILE_BYTES, tiles: int = NUM_TILES) -> list[int]:
    """The 64-byte ``ldtilecfg`` descriptor (palette 1, every tile ``rows`` x ``colsb`` bytes) as 8
    little-endian 64-bit words.

    Layout: byte 0 palette, byte 1 start row, bytes 16-47 ``colsb`` of tiles 0-15 (16 bits each),
    bytes 48-63 ``rows`` of tiles 0-15 (8 bits each); unused tiles stay 0.

    Parameters
    ----------
    rows : int
        Rows of each configured tile (at most ``TILE_ROWS``).
    colsb : int
        Bytes per row of each configured tile (at most ``TILE_BYTES``).
    tiles : int
        How many tiles (from tile 0) to configure (at most ``NUM_TILES``).

    Returns
    -------
    list of int
        The descriptor's 8 words.

    Raises
    ------
    ValueError
        When a size is beyond palette 1's limits.

    Examples
    --------
    >>> [hex(w) for w in tile_config()][:4]
    ['0x1', '0x0', '0x40004000400040', '0x40004000400040']
    """
    if not (0 < rows <= TILE_ROWS and 0 < colsb <= TILE_BYTES and 0 < tiles <= NUM_TILES):
        raise ValueError(f"palette 1 has {NUM_TILES} tiles of at most {TILE_ROWS} rows x {TILE_BYTES} bytes, "
                         f"got {tiles} tiles of {rows} x {colsb}")
    raw = bytearray(TILE_CONFIG_BYTES)
    raw[0] = 1
    for t in range(tiles):
        raw[16 + 2 * t:18 + 2 * t] = colsb.to_bytes(2, "little")
        raw[48 + t] = rows
    return [int.from_bytes(raw[8 * w:8 * w + 8], "little") for w in range(8)]


def instruction_of(a_dtype: str, b_dtype: str) -> tuple:
    """The ``INSTRUCTIONS`` entry of an operand pair.

    Parameters
    ----------
    a_dtype, b_dtype : str
        The dtypes of A and B.

    Returns
    -------
    tuple
        ``(instruction, accumulator dtype, K per tile step, features)``.

    Raises
    ------
    ValueError
        When AMX has no instruction for the pair.

    Examples
    --------
    >>> instruction_of("bfloat16", "bfloat16")[:3]
    ('tdpbf16ps', 'float32', 32)
    """
    try:
        return INSTRUCTIONS[(a_dtype, b_dtype)]
    except KeyError:
        raise ValueError(f"AMX has no instruction for A {a_dtype} x B {b_dtype}; pairs: {sorted(INSTRUCTIONS)}") \
            from None


def a_operand(mt: int, ks: int, k_step: int, a_packed: bool):
    """The A operand of an ``mt``-tile block over ``ks`` steps: row-major ``(16 * mt, k_step * ks)``, or packed
    into tiles of one contiguous KiB, ``A[i // 16, k // k_step, i % 16, k % k_step]``.

    Parameters
    ----------
    mt, ks : int
        A tiles along M, and K steps.
    k_step : int
        K values per tile step.
    a_packed : bool
        Packed into tiles.

    Returns
    -------
    tuple
        ``(shape, index)``: the buffer shape and a function from element ``(i, k)`` to its indices.
    """
    if a_packed:
        return (mt, ks, 16, k_step), lambda i, k: (i // 16, k // k_step, i % 16, k % k_step)
    return (16 * mt, k_step * ks), lambda i, k: (i, k)


def a_view_strides(shape) -> list:
    """Free row strides of an A view (unit stride innermost): ``[sa, 1]``, or ``[sa0, sa1, sa2, 1]`` packed.

    Parameters
    ----------
    shape : tuple
        The view's shape (2-D row-major, or 4-D packed).

    Returns
    -------
    list
        One fresh int32 variable per outer dimension, then 1.
    """
    names = ["sa"] if len(shape) == 2 else [f"sa{d}" for d in range(len(shape) - 1)]
    return [E.Var(n, "int32") for n in names] + [1]


def _impl_skeleton(a_dtype: str, b_dtype: str, mt: int, nt: int, ks: int, a_packed: bool = False):
    _, c_dtype, k_step, _ = instruction_of(a_dtype, b_dtype)
    M, N, K = 16 * mt, 16 * nt, k_step * ks
    pack = 4 if k_step == 64 else 2
    a_shape, _ = a_operand(mt, ks, k_step, a_packed)
    a_region, a_strides = tuple(slice(0, e) for e in a_shape), a_view_strides(a_shape)

    @T.prim_func
    def impl(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, a_shape, a_dtype, offset_factor=1, strides=a_strides)
        sb0 = T.int32()
        sb1 = T.int32()
        B = T.match_buffer(b, (nt, K // pack, 16, pack), b_dtype, offset_factor=1, strides=[sb0, sb1, pack, 1])
        sc = T.int32()
        C = T.match_buffer(c, (M, N), c_dtype, offset_factor=1, strides=[sc, 1])
        with T.block("root"):
            T.reads(C[0:M, 0:N], A[a_region], B[0:nt, 0:K // pack, 0:16, 0:pack])
            T.writes(C[0:M, 0:N])
            cfg = T.alloc_buffer((8,), "int64", scope="local")  # noqa: F841 - the impl's tile configuration
            T.evaluate(0)

    return impl


def tile_call(name: str, *args) -> S.Evaluate:
    """A statement calling the void LLVM intrinsic ``name`` (a tile instruction, a prefetch).

    Parameters
    ----------
    name : str
        The LLVM intrinsic, e.g. ``"llvm.x86.tdpbusd"``.
    *args : PrimExpr
        Its arguments.

    Returns
    -------
    Evaluate
    """
    return S.Evaluate(call_llvm_intrin("void", name, *args))


def tmm(t: int) -> E.IntImm:
    """Tile register ``t`` as the instructions' immediate operand.

    Parameters
    ----------
    t : int
        0 to 7.

    Returns
    -------
    IntImm
        An int8 constant.
    """
    return E.IntImm("int8", t)


def _bytes(stride, dtype: str) -> E.PrimExpr:
    size = {"int8": 1, "uint8": 1, "bfloat16": 2, "int32": 4, "float32": 4}[dtype]
    return E.Cast("int64", stride) * E.IntImm("int64", size)


ISSUE_ORDERS = ("pipelined", "grouped")
MULTIPLY_ORDERS = ("rows", "columns")
_PREFETCH_T0 = (E.IntImm("int32", 0), E.IntImm("int32", 3), E.IntImm("int32", 1))  # read, keep in all levels, data


@dataclass(frozen=True)
class ImplOptions:
    """How an AMX impl orders and hints a K step's instructions.

    Parameters
    ----------
    issue : str
        ``"pipelined"``: an operand tile whose last multiply is not the step's last is loaded for the next step
        right after that multiply, the others at the start of their step; ``"grouped"``: the step's loads, then
        its multiplies. Unless the core renames tile registers, a load into a tile waits for the multiplies
        that read its previous contents: grouped, every step's first multiply waits for a load issued after the
        previous step's last multiply.
    multiply_order : str
        ``"rows"``: the multiplies of A's first tile first (its next-step load gets the longest lead: for
        schedules that stream A from L2); ``"columns"``: B's first tile first (B streams).
    prefetch : str
        Operands (``"a"``, ``"b"``, ``"ab"``) whose tiles of the step ``distance`` ahead each step prefetches
        into L1 (``prefetcht0``, one per 64-byte tile row; the last step's where that is past the call's K).
    distance : int
        How many K steps ahead the prefetches reach.
    stream : str
        Operands whose tiles load with ``tileloaddt1``, the hint that they will not be reused soon (so that
        they displace less of the operand a cache-blocked schedule keeps in L1).
    """

    issue: str = "pipelined"
    multiply_order: str = "rows"
    prefetch: str = ""
    distance: int = 2
    stream: str = ""

    def __post_init__(self):
        if self.issue not in ISSUE_ORDERS:
            raise ValueError(f"unknown issue order {self.issue!r}; use one of {ISSUE_ORDERS}")
        if self.multiply_order not in MULTIPLY_ORDERS:
            raise ValueError(f"unknown multiply order {self.multiply_order!r}; use one of {MULTIPLY_ORDERS}")
        if set(self.prefetch) - set("ab") or set(self.stream) - set("ab") or self.distance < 1:
            raise ValueError(f"prefetch and stream name operands 'a' and/or 'b' and distance is at least 1, got "
                             f"{self.prefetch!r}, {self.stream!r} and {self.distance}")

    def suffix(self) -> str:
        """The name suffix of an impl variant with these options (``_<issue>_<multiply order>...``).

        Returns
        -------
        str
        """
        parts = [self.issue, self.multiply_order]
        if self.prefetch:
            parts.append(f"prefetch_{self.prefetch}{self.distance}")
        if self.stream:
            parts.append(f"stream_{self.stream}")
        return "_" + "_".join(parts)


def build_impl(a_dtype: str, b_dtype: str, mt: int, nt: int, ks: int, a_packed: bool = False,
               options: ImplOptions = ImplOptions()):
    """The impl PrimFunc of the ``mt x nt`` block over ``ks`` K steps: configure, load the accumulators, the K
    steps (ordered and hinted as ``options`` says), store the accumulators. Tiles: C 0..mt*nt-1, then A, then
    B. A packed into tiles is loaded from ``A[t, s, 0, 0]`` at its tile row stride.

    Parameters
    ----------
    a_dtype, b_dtype : str
        A pair of ``INSTRUCTIONS``.
    mt, nt, ks : int
        Accumulator tiles along M and N, and K steps.
    a_packed : bool
        A stored as tiles of one contiguous KiB.
    options : ImplOptions
        Instruction order and hints.

    Returns
    -------
    PrimFunc
    """
    instruction, c_dtype, k_step, _ = instruction_of(a_dtype, b_dtype)
    if mt * nt + mt + nt > NUM_TILES:
        raise ValueError(f"a {mt}x{nt} accumulator block needs {mt * nt} + {mt} + {nt} tile registers; AMX has "
                         f"{NUM_TILES}")
    issue, prefetch, distance, stream = options.issue, options.prefetch, options.distance, options.stream
    skeleton = _impl_skeleton(a_dtype, b_dtype, mt, nt, ks, a_packed)
    A, B, C = (skeleton.buffer_map[p] for p in skeleton.params)
    root = skeleton.body.block
    cfg = root.alloc_buffers[0]
    a_stride, c_stride = _bytes(A.strides[-2], a_dtype), _bytes(C.strides[0], c_dtype)  # A's tile rows apart
    b_stride = _bytes(B.strides[1], b_dtype)
    c_tile = {(t, u): t * nt + u for t in range(mt) for u in range(nt)}
    rows_per_step = 16  # one B tile covers 16 packed rows (64 int8 or 32 bf16 values of K)

    def load(operand, step):
        kind, index = operand
        instruction_name = "llvm.x86.tileloaddt164" if kind.lower() in stream else "llvm.x86.tileloadd64"
        if kind == "A":
            corner = (index, step, 0, 0) if a_packed else (16 * index, step * k_step)
            return tile_call(instruction_name, tmm(mt * nt + index), T.address_of(A[corner]), a_stride)
        return tile_call(instruction_name, tmm(mt * nt + mt + index),
                          T.address_of(B[index, step * rows_per_step, 0, 0]), b_stride)

    def prefetches(step) -> list:
        ahead = E.Min(step + distance, E.IntImm("int32", ks - 1)) if isinstance(step, E.Var) else \
            E.IntImm("int32", min(int(step.value) + distance, ks - 1))
        out = []
        for t in range(mt) if "a" in prefetch else ():
            for r in range(16):
                row = (t, ahead, r, 0) if a_packed else (16 * t + r, ahead * k_step)
                out.append(tile_call("llvm.prefetch.p0", T.address_of(A[row]), *_PREFETCH_T0))
        for u in range(nt) if "b" in prefetch else ():
            for r in range(16):
                out.append(tile_call("llvm.prefetch.p0", T.address_of(B[u, ahead * rows_per_step + r, 0, 0]),
                                      *_PREFETCH_T0))
        return out

    def multiply(t, u):
        return tile_call(f"llvm.x86.{instruction}", tmm(c_tile[t, u]), tmm(mt * nt + t), tmm(mt * nt + mt + u))

    order = sorted(c_tile, key=(lambda tu: tu) if options.multiply_order == "rows" else (lambda tu: (tu[1], tu[0])))
    operands = [("A", t) for t in range(mt)] + [("B", u) for u in range(nt)]
    uses = {op: [p for p, (t, u) in enumerate(order) if op in (("A", t), ("B", u))] for op in operands}
    ahead = [] if issue == "grouped" else [op for op in operands if uses[op][-1] < len(order) - 1]
    at_start = operands if issue == "grouped" else sorted((op for op in operands if op not in ahead),
                                                          key=lambda op: uses[op][0])

    def step_body(step, load_next: bool) -> list:
        body = prefetches(step) + [load(op, step) for op in at_start]
        for p, (t, u) in enumerate(order):
            body.append(multiply(t, u))
            if load_next:
                body.extend(load(op, step + 1) for op in ahead if uses[op][-1] == p)
        return body

    body = [S.BufferStore(cfg, E.IntImm("int64", w), [E.IntImm("int32", i)]) for i, w in enumerate(tile_config())]
    body.append(tile_call("llvm.x86.ldtilecfg", T.address_of(cfg[0])))
    for (t, u), reg in c_tile.items():
        body.append(tile_call("llvm.x86.tileloadd64", tmm(reg), T.address_of(C[16 * t, 16 * u]), c_stride))
    s = E.Var("s", "int32")
    if ahead:  # the first step's early loads before the loop, the last step (nothing to load ahead) peeled
        body.extend(load(op, E.IntImm("int32", 0)) for op in ahead)
        if ks > 1:
            body.append(S.For(s, E.IntImm("int32", 0), E.IntImm("int32", ks - 1), S.ForKind.SERIAL,
                              S.SeqStmt(step_body(s, True))))
        body.extend(step_body(E.IntImm("int32", ks - 1), False))
    elif ks > 1:
        body.append(S.For(s, E.IntImm("int32", 0), E.IntImm("int32", ks), S.ForKind.SERIAL,
                          S.SeqStmt(step_body(s, False))))
    else:
        body.extend(step_body(E.IntImm("int32", 0), False))
    for (t, u), reg in c_tile.items():
        body.append(tile_call("llvm.x86.tilestored64", tmm(reg), T.address_of(C[16 * t, 16 * u]), c_stride))
    new_root = skeleton.body.replace(block=root.replace(body=S.SeqStmt(body)))
    return skeleton.with_body(new_root)


__all__ = ["INSTRUCTIONS", "ISSUE_ORDERS", "MULTIPLY_ORDERS", "NUM_TILES", "TILE_ROWS", "TILE_BYTES", "FEATURES_INT8",
           "FEATURES_BF16", "ImplOptions", "a_operand", "a_view_strides", "build_impl", "instruction_of", "tile_call",
           "tile_config"]
