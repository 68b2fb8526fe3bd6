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

The impls are built by ``intrinsics.x86_amx_tiles`` (``build_impl``, ``ImplOptions``). Issue order: unless the
core renames tile registers (nothing public says it does), a load into a tile waits for the multiplies that
still read it. The impl loads an operand tile for the next K step right after its last multiply of this step
(the 2 x 2 step: load B1, A1; C00 += A0 B0; C01 += A0 B1; load A0'; C10 += A1 B0; load B0'; C11 += A1 B1), as
hand-written AMX kernels interleave them, rather than all four loads before the four multiplies
(``impl_variant_intrin(name, "grouped")`` gives that order, and ``prefetch=`` adds software prefetches of the
operand tiles a few steps ahead, ``stream=`` loads an operand with the no-reuse hint ``tileloaddt1``, for timing
one impl against another). Multiplies run row by row (A's first tile first), or column by column for the
A-packed intrinsics, whose schedules stream B.

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
from tensorize.ir.tensor_intrin import IntrinMeta, TensorIntrin
from tensorize.script import tir as T

from .naming import check_name, intrin_name, register
from .x86_amx_tiles import (INSTRUCTIONS, ISSUE_ORDERS, MULTIPLY_ORDERS, NUM_TILES, TILE_BYTES, TILE_ROWS,
                            ImplOptions, a_operand, a_view_strides, build_impl, instruction_of, tile_config)

# register blockings (mt, nt, ks) registered on import (listed by naming.registered_names); others register
# on demand (amx_matmul_intrin), with the same name checks. (1, 1, 16): one accumulator over a long K, which
# measured fastest for a hand-scheduled 1024^3 GEMM on a Sapphire Rapids core (int8 and bf16); (1, 2, 16) and
# (2, 1, 16): the fastest bf16 1024^3 blockings of a later probe on another AMX host (2.20 and 2.52 ms on 2
# threads against 2.62 for 1 x 1 and 2.76 for 2 x 2; results/amx_gemm.md), so the search proposes them too
# (2, 2, 1): one K step a call, for a direct convolution's 64 int8 (32 bf16) input channels, its taps as loops
# around the call (lowering keeps the accumulators in their tiles across them: PromoteTileAccumulators)
PREREGISTERED = ((1, 1, 1), (2, 2, 1), (2, 2, 4), (2, 2, 8), (2, 2, 16), (1, 1, 16), (1, 2, 16), (2, 1, 16))
# bf16's 2 x 2 block over the whole of a 1024-long K (32 steps of 32 values): the hand schedule's default there;
# (2, 2, 2): 64 bf16 input channels a call, a direct convolution's
PREREGISTERED_BF16 = ((2, 2, 32), (2, 2, 2))
# A packed into tiles, 8 steps a call: the K chunk the cache-blocked search sketch "a" keeps in L1
# (search.schedule_rule.amx_blocking; 2 tiles x 8 KiB beside the streaming B chunk in a 48 KiB L1)
PREREGISTERED_A_PACKED = ((2, 2, 8),)
# the impls' instruction order: A streams in the hand default and sketch "b" (its loads get the longest lead in
# row order); A-packed intrinsics serve sketch "a", where B streams
DEFAULT_IMPL = ImplOptions()
DEFAULT_IMPL_A_PACKED = ImplOptions(multiply_order="columns")

AMX_U8S8_INTRIN = "matmul_16x16x64_u8i8s32_amx"
AMX_BF16_INTRIN = "matmul_16x16x32_bf16bf16f32_amx"


def _desc(a_dtype: str, b_dtype: str, mt: int, nt: int, ks: int, strided: bool = False, a_packed: bool = False):
    """The semantics; ``strided``: the same loops over views with any row strides (an impl that emulates
    the instructions with plain code, see ``emulation_intrin``); ``a_packed``: A stored as tiles,
    ``A[i // 16, k // k_step, i % 16, k % k_step]`` (each tile one contiguous KiB)."""
    _, c_dtype, k_step, _ = instruction_of(a_dtype, b_dtype)
    M, N, K = 16 * mt, 16 * nt, k_step * ks
    pack = 4 if k_step == 64 else 2  # K values per 32-bit VNNI group
    a_shape, a_at = a_operand(mt, ks, k_step, a_packed)
    a_region = tuple(slice(0, e) for e in a_shape)
    sb0, sb1, sc = (E.Var(n, "int32") for n in ("sb0", "sb1", "sc"))
    a_strides, b_strides, c_strides = (a_view_strides(a_shape), [sb0, sb1, pack, 1], [sc, 1]) if strided \
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
    instruction, c_dtype, k_step, features = instruction_of(a_dtype, b_dtype)
    shape = (16 * m_tiles, 16 * n_tiles, k_step * k_steps)
    name = intrin_name("matmul", shape, (a_dtype, b_dtype, c_dtype), "amx", "pa" if a_packed else None)
    if name in TensorIntrin.list_names():
        return name
    extra = {"instruction": instruction, "m_tiles": m_tiles, "n_tiles": n_tiles, "k_steps": k_steps,
             "tiles_used": m_tiles * n_tiles + m_tiles + n_tiles, "b_layout": "vnni_packed",
             "ops_per_call": 2 * shape[0] * shape[1] * shape[2], "a_packed": a_packed, "hand_only": not _on_import,
             "impl_options": DEFAULT_IMPL_A_PACKED if a_packed else DEFAULT_IMPL,
             # A and C tiles load/store at any row stride: the search uses plain GEMM operands in place
             "in_place_operands": ("C",) if a_packed else ("A", "C")}
    desc = _desc(a_dtype, b_dtype, m_tiles, n_tiles, k_steps, a_packed=a_packed)
    impl = build_impl(a_dtype, b_dtype, m_tiles, n_tiles, k_steps, a_packed, extra["impl_options"])
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
                        stream: str = "", multiply_order: str | None = None) -> TensorIntrin:
    """AMX intrinsic ``name`` with another impl for the same computation, for timing one against another: its
    instructions in another issue order (``ISSUE_ORDERS``; registered intrinsics are ``"pipelined"``) or
    multiply order (``MULTIPLY_ORDERS``), software prefetches of the operand tiles ``distance`` K steps ahead
    (``prefetch``: ``"a"``, ``"b"``, ``"ab"``), and/or operands loaded with the no-reuse hint ``tileloaddt1``
    (``stream``); see ``x86_amx_tiles.ImplOptions``. Not registered: pass the object to ``sch.tensorize`` (or
    ``schedule_amx_gemm(intrin=...)``).

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
    multiply_order : str, optional
        ``"rows"`` or ``"columns"`` (default: the registered intrinsic's).

    Returns
    -------
    TensorIntrin
        The intrinsic (made once per variant, then cached).

    Examples
    --------
    >>> impl_variant_intrin(amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4), "grouped").name
    'matmul_32x32x128_bf16bf16f32_amx_grouped_rows'
    >>> impl_variant_intrin(amx_matmul_intrin("bfloat16", "bfloat16", 2, 2, 4), prefetch="b").name
    'matmul_32x32x128_bf16bf16f32_amx_pipelined_rows_prefetch_b2'
    """
    intrin = TensorIntrin.get(name)
    extra = intrin.meta.extra
    options = ImplOptions(issue, multiply_order or extra["impl_options"].multiply_order, prefetch, distance, stream)
    if (name, options) not in _IMPL_VARIANTS:
        a_dtype, b_dtype = (intrin.desc.buffer_map[p].dtype for p in intrin.desc.params[:2])
        impl = build_impl(a_dtype, b_dtype, extra["m_tiles"], extra["n_tiles"], extra["k_steps"],
                          extra.get("a_packed", False), options)
        meta = IntrinMeta(target_kind="llvm", arch="x86_64", features=intrin.meta.features,
                          extra={**extra, "impl_options": options})
        _IMPL_VARIANTS[name, options] = TensorIntrin(intrin.desc, impl, name + options.suffix(), meta)
    return _IMPL_VARIANTS[name, options]


__all__ = ["AMX_U8S8_INTRIN", "AMX_BF16_INTRIN", "INSTRUCTIONS", "ISSUE_ORDERS", "MULTIPLY_ORDERS", "NUM_TILES",
           "TILE_ROWS", "TILE_BYTES", "ImplOptions", "amx_matmul_intrin", "emulation_intrin", "impl_variant_intrin",
           "tile_config"]
