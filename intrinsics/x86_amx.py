"""Intel AMX tensor intrinsics: int8 and bf16 tile matrix multiplies (``tdpb[su][su]d``, ``tdpbf16ps``).

AMX adds 8 tile registers (``tmm0``-``tmm7``) of up to 16 rows x 64 bytes, configured by a 64-byte
descriptor (``ldtilecfg``), and instructions that multiply whole tiles:

=============  ============================  ===============================================  ==========
instruction    operands                      computes (one call)                              feature
=============  ============================  ===============================================  ==========
``tdpbusd``    C s32[16,16], A u8, B s8      C[i, j] += sum_k A[i, k] * B[k, j], k < 64       amx-int8
``tdpbssd``    A s8, B s8                    (the same)                                       amx-int8
``tdpbsud``    A s8, B u8                    (the same)                                       amx-int8
``tdpbuud``    A u8, B u8                    (the same)                                       amx-int8
``tdpbf16ps``  C f32[16,16], A bf16, B bf16  C[i, j] += sum_k A[i, k] * B[k, j], k < 32       amx-bf16
``tileloadd``  tile <- 16 rows of 64 bytes, any row stride                                    amx-tile
``tilestored`` tile -> memory                                                                 amx-tile
``tilezero``   tile <- 0                                                                      amx-tile
=============  ============================  ===============================================  ==========

A is row-major (16 rows of 64 bytes: 64 int8 or 32 bf16 values of K). B is *VNNI-packed*: its tile is
K/4 rows (int8; K/2 for bf16) of N x 4 bytes, row ``r`` holding ``B[4r + q, n]`` at byte ``4n + q``. As
a TensorIR buffer B is packed ``(N // 16, K // 4, 16, 4)`` (bf16: ``(N // 16, K // 2, 16, 2)``) from the
GEMM's ``B[j, k]``, so one B tile is 1 KiB of contiguous memory.

The intrinsics compute ``C[16 * mt, 16 * nt] += A[16 * mt, 64 * ks] . B`` (bf16: ``32 * ks``): a block of
``mt x nt`` accumulator tiles (``mt * nt + mt + nt <= 8`` tile registers), reduced over ``ks`` tile steps
inside the intrinsic, so the accumulators stay in tile registers across the K steps while the A and B
tiles stream. The single-tile ``matmul_16x16x64_u8i8s32_amx`` is ``mt = nt = ks = 1``; the 2 x 2 block
uses all 8 tiles (4 accumulators, 2 A, 2 B).

Code generation: the *plain* LLVM intrinsics with an explicit ``ldtilecfg``
(``llvm.x86.ldtilecfg``, ``llvm.x86.tileloadd64``, ``llvm.x86.tdpbusd``, ``llvm.x86.tilestored64``,
``llvm.x86.tilezero``: tile registers named by immediates), not the ``.internal`` variants whose
``x86_amx`` values let LLVM configure and allocate tiles itself. Why:

- the ``.internal`` intrinsics return and take ``x86_amx`` values: neither llvmlite's IR builder nor
  TensorIR has such a type, so every tile value would need textual IR and a TIR dtype of its own;
  the plain intrinsics are ``void`` calls on immediates and pointers, i.e. ordinary TIR statements;
- the schedule decides the register blocking (which tile holds which accumulator); with named tiles
  that decision is visible in the TIR and checked against the 8-register limit here, not left to
  LLVM's tile register allocator, and the interpreter can run the very same calls on a numpy model
  of the tile registers (``intrinsics.x86_amx_model``);
- all tiles here have one shape (16 rows x 64 bytes), so one constant configuration serves every
  intrinsic; it is loaded at the start of each call (a few dozen cycles against ``mt * nt * ks``
  tile multiplies of 16 cycles each). Calls do not ``tilerelease``: the next call configures again.

Issue order: unless the core renames tile registers (nothing public says it does), a load into a tile waits for
the multiplies that still read it. The impl loads an operand tile for the next K step right after its last
multiply of this step (the 2 x 2 step: load B1, A1; C00 += A0 B0; C01 += A0 B1; load A0'; C10 += A1 B0; load
B0'; C11 += A1 B1), as hand-written AMX kernels interleave them, rather than all four loads before the four
multiplies (``impl_variant_intrin(name, "grouped")`` gives that order, and ``prefetch=`` adds software
prefetches of the operand tiles a few steps ahead, ``stream=`` loads an operand with the no-reuse hint
``tileloaddt1``, for timing one impl against another).

The OS must grant the process the tile data state first (Linux ``arch_prctl(ARCH_REQ_XCOMP_PERM,
XFEATURE_XTILEDATA)``): ``tensorize.runtime`` requests it at the first call of a module that calls AMX
intrinsics (``tensorize.runtime.amx``) and raises ``AMXPermissionError`` when the kernel refuses.

>>> import tensorize as tvm
>>> intrin = tvm.tir.TensorIntrin.get(AMX_U8S8_INTRIN)
>>> intrin.meta.features, intrin.meta.extra["instruction"]
(('amx-tile', 'amx-int8'), 'tdpbusd')
>>> amx_matmul_intrin("uint8", "int8", 2, 2, 4)
'matmul_32x32x256_u8i8s32_amx'
"""
from __future__ import annotations

from tensorize.ir import expr as E
from tensorize.ir import stmt as S
from tensorize.ir.op import call_llvm_intrin
from tensorize.ir.tensor_intrin import IntrinMeta, TensorIntrin
from tensorize.script import tir as T

from .naming import check_name, intrin_name, register

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
# register blockings (mt, nt, ks) registered on import (listed by naming.registered_names); others register
# on demand (amx_matmul_intrin), with the same name checks. (1, 1, 16): one accumulator over a long K, which
# measured fastest for a hand-scheduled 1024^3 GEMM on a Sapphire Rapids core (int8 and bf16); (1, 2, 16) and
# (2, 1, 16): the fastest bf16 1024^3 blockings of a later probe on another AMX host (2.20 and 2.52 ms on 2
# threads against 2.62 for 1 x 1 and 2.76 for 2 x 2; results/amx_gemm.md), so the search proposes them too
PREREGISTERED = ((1, 1, 1), (2, 2, 4), (2, 2, 8), (2, 2, 16), (1, 1, 16), (1, 2, 16), (2, 1, 16))
# bf16's 2 x 2 block over the whole of a 1024-long K (32 steps of 32 values): the hand schedule's default there
PREREGISTERED_BF16 = ((2, 2, 32),)
# A packed into tiles, 8 steps a call: the K chunk the cache-blocked search sketch "a" keeps in L1
# (search.schedule_rule.amx_blocking; 2 tiles x 8 KiB beside the streaming B chunk in a 48 KiB L1)
PREREGISTERED_A_PACKED = ((2, 2, 8),)

AMX_U8S8_INTRIN = "matmul_16x16x64_u8i8s32_amx"
AMX_BF16_INTRIN = "matmul_16x16x32_bf16bf16f32_amx"


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


def _layout(a_dtype: str, b_dtype: str):
    try:
        return INSTRUCTIONS[(a_dtype, b_dtype)]
    except KeyError:
        raise ValueError(f"AMX has no instruction for A {a_dtype} x B {b_dtype}; pairs: {sorted(INSTRUCTIONS)}") \
            from None


def _a_operand(mt: int, ks: int, k_step: int, a_packed: bool):
    """(shape, index of element (i, k)) of the A operand: row-major ``(16 * mt, k_step * ks)``, or packed into
    tiles of one contiguous KiB, ``A[i // 16, k // k_step, i % 16, k % k_step]``."""
    if a_packed:
        return (mt, ks, 16, k_step), lambda i, k: (i // 16, k // k_step, i % 16, k % k_step)
    return (16 * mt, k_step * ks), lambda i, k: (i, k)


def _a_strides(shape) -> list:
    """Free row strides of an A view (unit stride innermost): ``[sa, 1]``, or ``[sa0, sa1, sa2, 1]`` packed."""
    names = ["sa"] if len(shape) == 2 else [f"sa{d}" for d in range(len(shape) - 1)]
    return [E.Var(n, "int32") for n in names] + [1]


def _desc(a_dtype: str, b_dtype: str, mt: int, nt: int, ks: int, strided: bool = False, a_packed: bool = False):
    """The semantics; ``strided``: the same loops over views with any row strides (an impl that emulates
    the instructions with plain code, see ``emulation_intrin``); ``a_packed``: A stored as tiles,
    ``A[i // 16, k // k_step, i % 16, k % k_step]`` (each tile one contiguous KiB)."""
    _, c_dtype, k_step, _ = _layout(a_dtype, b_dtype)
    M, N, K = 16 * mt, 16 * nt, k_step * ks
    pack = 4 if k_step == 64 else 2  # K values per 32-bit VNNI group
    a_shape, a_at = _a_operand(mt, ks, k_step, a_packed)
    a_region = tuple(slice(0, e) for e in a_shape)
    sb0, sb1, sc = (E.Var(n, "int32") for n in ("sb0", "sb1", "sc"))
    a_strides, b_strides, c_strides = (_a_strides(a_shape), [sb0, sb1, pack, 1], [sc, 1]) if strided \
        else (None,) * 3

    @T.prim_func
    def desc(a: T.handle, b: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, a_shape, a_dtype, offset_factor=1, strides=a_strides)
        B = T.match_buffer(b, (nt, K // pack, 16, pack), b_dtype, offset_factor=1, strides=b_strides)
        C = T.match_buffer(c, (M, N), c_dtype, offset_factor=1, strides=c_strides)
        with T.block("root"):
            T.reads(C[0:M, 0:N], A[a_region], B[0:nt, 0:K // pack, 0:16, 0:pack])
            T.writes(C[0:M, 0:N])
            for i, j, k in T.grid(M, N, K):
                with T.block("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + T.Cast(c_dtype, A[a_at(vi, vk)]) * T.Cast(
                        c_dtype, B[vj // 16, vk // pack, vj % 16, vk % pack])

    return desc


def _impl_skeleton(a_dtype: str, b_dtype: str, mt: int, nt: int, ks: int, a_packed: bool = False):
    _, c_dtype, k_step, _ = _layout(a_dtype, b_dtype)
    M, N, K = 16 * mt, 16 * nt, k_step * ks
    pack = 4 if k_step == 64 else 2
    a_shape, _ = _a_operand(mt, ks, k_step, a_packed)
    a_region, a_strides = tuple(slice(0, e) for e in a_shape), _a_strides(a_shape)

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


def _tile_call(name: str, *args) -> S.Evaluate:
    return S.Evaluate(call_llvm_intrin("void", name, *args))


def _tile(t: int) -> E.IntImm:
    return E.IntImm("int8", t)


def _bytes(stride, dtype: str) -> E.PrimExpr:
    size = {"int8": 1, "uint8": 1, "bfloat16": 2, "int32": 4, "float32": 4}[dtype]
    return E.Cast("int64", stride) * E.IntImm("int64", size)


ISSUE_ORDERS = ("pipelined", "grouped")
_PREFETCH_T0 = (E.IntImm("int32", 0), E.IntImm("int32", 3), E.IntImm("int32", 1))  # read, keep in all levels, data


def _impl(a_dtype: str, b_dtype: str, mt: int, nt: int, ks: int, a_packed: bool = False, issue: str = "pipelined",
          prefetch: str = "", distance: int = 2, stream: str = ""):
    """The impl: configure, load the accumulators, for each K step load mt A and nt B tiles and multiply
    each pair into its accumulator, store the accumulators. Tiles: C 0..mt*nt-1, then A, then B. A packed
    into tiles is loaded from ``A[t, s, 0, 0]`` at its tile row stride.

    ``issue`` orders a step's instructions. ``"grouped"``: the step's mt + nt loads, then its mt * nt
    multiplies. ``"pipelined"``: an operand tile whose last multiply is not the step's last is loaded for the
    next step right after that multiply, overlapping the multiplies still to run; the others load at the
    start of their step. Without tile renaming, a load into a tile waits for the multiplies that read its
    previous contents: grouped, every step's first multiply waits for a load issued after the previous step's
    last multiply.

    ``prefetch`` (``"a"``, ``"b"`` or ``"ab"``): each step starts by prefetching into L1 (``prefetcht0``, one per
    64-byte tile row) the tiles of those operands that the step ``distance`` ahead loads (the last step's
    where that is past the call's K). ``stream`` (``"a"``, ``"b"``): those operands' tiles load with
    ``tileloaddt1``, the hint that they will not be reused soon (so that they displace less of the operand a
    cache-blocked schedule keeps in L1)."""
    instruction, c_dtype, k_step, _ = _layout(a_dtype, b_dtype)
    if mt * nt + mt + nt > NUM_TILES:
        raise ValueError(f"a {mt}x{nt} accumulator block needs {mt * nt} + {mt} + {nt} tile registers; AMX has "
                         f"{NUM_TILES}")
    if issue not in ISSUE_ORDERS:
        raise ValueError(f"unknown issue order {issue!r}; use one of {ISSUE_ORDERS}")
    if set(prefetch) - set("ab") or set(stream) - set("ab") or distance < 1:
        raise ValueError(f"prefetch and stream name operands 'a' and/or 'b' and distance is at least 1, got "
                         f"{prefetch!r}, {stream!r} and {distance}")
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
            return _tile_call(instruction_name, _tile(mt * nt + index), T.address_of(A[corner]), a_stride)
        return _tile_call(instruction_name, _tile(mt * nt + mt + index),
                          T.address_of(B[index, step * rows_per_step, 0, 0]), b_stride)

    def prefetches(step) -> list:
        ahead = E.Min(step + distance, E.IntImm("int32", ks - 1)) if isinstance(step, E.Var) else \
            E.IntImm("int32", min(int(step.value) + distance, ks - 1))
        out = []
        for t in range(mt) if "a" in prefetch else ():
            for r in range(16):
                row = (t, ahead, r, 0) if a_packed else (16 * t + r, ahead * k_step)
                out.append(_tile_call("llvm.prefetch.p0", T.address_of(A[row]), *_PREFETCH_T0))
        for u in range(nt) if "b" in prefetch else ():
            for r in range(16):
                out.append(_tile_call("llvm.prefetch.p0", T.address_of(B[u, ahead * rows_per_step + r, 0, 0]),
                                      *_PREFETCH_T0))
        return out

    def multiply(t, u):
        return _tile_call(f"llvm.x86.{instruction}", _tile(c_tile[t, u]), _tile(mt * nt + t), _tile(mt * nt + mt + u))

    order = list(c_tile)  # the multiplies of a step, row-major over the accumulator block
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
    body.append(_tile_call("llvm.x86.ldtilecfg", T.address_of(cfg[0])))
    for (t, u), tile in c_tile.items():
        body.append(_tile_call("llvm.x86.tileloadd64", _tile(tile), T.address_of(C[16 * t, 16 * u]), c_stride))
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
    for (t, u), tile in c_tile.items():
        body.append(_tile_call("llvm.x86.tilestored64", _tile(tile), T.address_of(C[16 * t, 16 * u]), c_stride))
    new_root = skeleton.body.replace(block=root.replace(body=S.SeqStmt(body)))
    return skeleton.with_body(new_root)


def amx_matmul_intrin(a_dtype: str = "uint8", b_dtype: str = "int8", m_tiles: int = 1, n_tiles: int = 1,
                      k_steps: int = 1, a_packed: bool = False, _on_import: bool = False) -> str:
    """Register (once) and name the AMX intrinsic for a block of ``m_tiles x n_tiles`` accumulator tiles
    reduced over ``k_steps`` tile steps.

    Parameters
    ----------
    a_dtype, b_dtype : str
        ``uint8``/``int8`` pairs (int32 accumulators) or ``bfloat16`` for both (float32 accumulators).
    m_tiles, n_tiles : int
        Accumulator tiles along M and N (``m_tiles * n_tiles + m_tiles + n_tiles <= 8``).
    k_steps : int
        Tile steps along K inside one call (64 int8 / 32 bf16 values each).
    a_packed : bool
        A stored as tiles, ``A[i // 16, k // k_step, i % 16, k % k_step]`` (each tile one contiguous KiB; the
        name ends in ``_pa``): loads without L1 set conflicts between a tile's rows (``schedule_amx_gemm(pack_a=True)``;
        the search's candidates pack A in the kernel).

    Intrinsics registered here on demand, not on import (``PREREGISTERED``...), are marked ``hand_only``: the
    search leaves them out, so that its space does not depend on which hand schedules ran before it.

    Returns
    -------
    str
        The registered name, e.g. ``matmul_32x32x256_u8i8s32_amx``.

    Examples
    --------
    >>> amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 1)
    'matmul_32x32x32_bf16bf16f32_amx'
    """
    instruction, c_dtype, k_step, features = _layout(a_dtype, b_dtype)
    shape = (16 * m_tiles, 16 * n_tiles, k_step * k_steps)
    name = intrin_name("matmul", shape, (a_dtype, b_dtype, c_dtype), "amx", "pa" if a_packed else None)
    if name in TensorIntrin.list_names():
        return name
    extra = {"instruction": instruction, "m_tiles": m_tiles, "n_tiles": n_tiles, "k_steps": k_steps,
             "tiles_used": m_tiles * n_tiles + m_tiles + n_tiles, "b_layout": "vnni_packed",
             "ops_per_call": 2 * shape[0] * shape[1] * shape[2], "a_packed": a_packed, "hand_only": not _on_import,
             "issue": "pipelined",
             # A and C tiles load/store at any row stride: the search uses plain GEMM operands in place
             "in_place_operands": ("C",) if a_packed else ("A", "C")}
    desc = _desc(a_dtype, b_dtype, m_tiles, n_tiles, k_steps, a_packed=a_packed)
    impl = _impl(a_dtype, b_dtype, m_tiles, n_tiles, k_steps, a_packed)
    meta = IntrinMeta(target_kind="llvm", arch="x86_64", features=features, extra=extra)
    if _on_import:
        register(name, desc, impl, meta)
    else:
        check_name(TensorIntrin(desc, impl, name, meta))
        TensorIntrin.register(name, desc, impl, override=True, meta=meta)
    return name


for _pair in INSTRUCTIONS:
    for _blocking in PREREGISTERED + (PREREGISTERED_BF16 if _pair == ("bfloat16", "bfloat16") else ()):
        amx_matmul_intrin(*_pair, *_blocking, _on_import=True)
    for _blocking in PREREGISTERED_A_PACKED:
        amx_matmul_intrin(*_pair, *_blocking, a_packed=True, _on_import=True)

_EMULATIONS: dict[str, TensorIntrin] = {}


def emulation_intrin(name: str) -> TensorIntrin:
    """The twin of AMX intrinsic ``name`` whose impl is its desc over strided views: plain loops that LLVM
    compiles for any CPU. Not registered (the search must never propose it): pass the object to
    ``sch.tensorize``.

    Parameters
    ----------
    name : str
        A registered AMX intrinsic, e.g. ``AMX_U8S8_INTRIN``.

    Returns
    -------
    TensorIntrin
        The emulating intrinsic (made once per name, then cached).
    """
    if name not in _EMULATIONS:
        intrin = TensorIntrin.get(name)
        extra = intrin.meta.extra
        a_dtype, b_dtype = (intrin.desc.buffer_map[p].dtype for p in intrin.desc.params[:2])
        impl = _desc(a_dtype, b_dtype, extra["m_tiles"], extra["n_tiles"], extra["k_steps"], strided=True,
                     a_packed=extra.get("a_packed", False))
        _EMULATIONS[name] = TensorIntrin(intrin.desc, impl, f"{name}_emulated",
                                         IntrinMeta(target_kind="llvm", arch="x86_64",
                                                    extra={**extra, "emulates": name}))
    return _EMULATIONS[name]


_IMPL_VARIANTS: dict[tuple, TensorIntrin] = {}


def impl_variant_intrin(name: str, issue: str = "pipelined", prefetch: str = "", distance: int = 2,
                        stream: str = "") -> TensorIntrin:
    """AMX intrinsic ``name`` with another impl for the same computation, for timing one against another: its
    instructions in another issue order (``ISSUE_ORDERS``; registered intrinsics are ``"pipelined"``), software
    prefetches of the operand tiles ``distance`` K steps ahead (``prefetch``: ``"a"``, ``"b"``, ``"ab"``), and/or
    operands loaded with the no-reuse hint ``tileloaddt1`` (``stream``). Not registered: pass the object to
    ``sch.tensorize`` (or ``schedule_amx_gemm(intrin=...)``).

    Parameters
    ----------
    name : str
        A registered AMX intrinsic, e.g. ``"matmul_32x32x1024_bf16bf16f32_amx"``.
    issue : str
        ``"grouped"`` (each K step's loads, then its multiplies) or ``"pipelined"``.
    prefetch : str
        The operands whose tiles are prefetched into L1 (none by default).
    distance : int
        How many K steps ahead they are prefetched.
    stream : str
        The operands whose tiles load with ``tileloaddt1`` (none by default).

    Returns
    -------
    TensorIntrin
        The intrinsic (made once per variant, then cached).

    Examples
    --------
    >>> impl_variant_intrin(amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4), "grouped").name
    'matmul_32x32x128_bf16bf16f32_amx_grouped'
    >>> impl_variant_intrin(amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4), prefetch="b").name
    'matmul_32x32x128_bf16bf16f32_amx_pipelined_prefetch_b2'
    """
    key = (name, issue, prefetch, distance, stream)
    if key not in _IMPL_VARIANTS:
        intrin = TensorIntrin.get(name)
        extra = intrin.meta.extra
        a_dtype, b_dtype = (intrin.desc.buffer_map[p].dtype for p in intrin.desc.params[:2])
        impl = _impl(a_dtype, b_dtype, extra["m_tiles"], extra["n_tiles"], extra["k_steps"],
                     extra.get("a_packed", False), issue, prefetch, distance, stream)
        meta = IntrinMeta(target_kind="llvm", arch="x86_64", features=intrin.meta.features,
                          extra={**extra, "issue": issue, "prefetch": prefetch, "prefetch_distance": distance,
                                 "stream": stream})
        suffix = f"_{issue}" + (f"_prefetch_{prefetch}{distance}" if prefetch else "") + \
            (f"_stream_{stream}" if stream else "")
        _IMPL_VARIANTS[key] = TensorIntrin(intrin.desc, impl, name + suffix, meta)
    return _IMPL_VARIANTS[key]


__all__ = ["AMX_U8S8_INTRIN", "AMX_BF16_INTRIN", "INSTRUCTIONS", "ISSUE_ORDERS", "NUM_TILES", "TILE_ROWS",
           "TILE_BYTES", "amx_matmul_intrin", "emulation_intrin", "impl_variant_intrin", "tile_config"]
