"""How tensor intrinsics are named, and registration under that scheme.

Every intrinsic of this package is registered as::

    <op>_<shape>_<dtypes>_<isa>[_<variant>]

- ``op``: what it computes: ``dot`` (``C[i] += sum_k A[k] * B[i, k]``), ``fma``
  (``C[i] += A[0] * B[i]``), ``matmul`` (``C[i, j] += sum_k A[i, k] * B[j, k]``), ``lanedot``
  (``C[i] += sum_k A[i, k] * B[i, k]``: every lane its own operands, for depthwise convolutions);
- ``shape``: the extents of the desc's iterators in loop order, joined by ``x`` (``16x4``: 16 lanes,
  4 reduced per lane; ``2x2x8``);
- ``dtypes``: the dtype codes of the operands A, B, C in order (inputs first, the accumulator
  last): ``u8i8s32`` is uint8 x int8 -> int32. The codes are those of TVM's Arm names (``i8`` is
  int8 but ``s32`` is int32), so those names fit unchanged; see ``DTYPE_CODES``;
- ``isa``: the instruction or extension that does the work (``vnni``, ``avx512``, ``avx2``, ``sdot``,
  ``neon``, ``sve256``);
- ``variant``: only where an intrinsic differs from the plain one in semantics: ``sat`` for int16
  saturating sequences (``vpmaddubsw``) that are exact only for part of the input range.

Older names and TVM's own names stay usable as aliases (``TensorIntrin.register_alias``), e.g.
``dot_16x4_vnni`` for ``dot_16x4_u8i8s32_vnni``.

>>> intrin_name("dot", (8, 4), ("uint8", "int8", "int32"), "avx2")
'dot_8x4_u8i8s32_avx2'
>>> parse_intrin_name("dot_16x4_u8i8s32_avx512_sat")
IntrinName(op='dot', shape=(16, 4), dtypes=('uint8', 'int8', 'int32'), isa='avx512', variant='sat')
"""
from __future__ import annotations

import re
from typing import NamedTuple

from tensorize.ir.tensor_intrin import IntrinMeta, TensorIntrin

__all__ = ["DTYPE_CODES", "OPS", "VARIANTS", "IntrinName", "intrin_name", "parse_intrin_name", "check_name",
           "register", "registered_names"]

DTYPE_CODES = {
    "int8": "i8", "uint8": "u8", "int16": "s16", "uint16": "u16", "int32": "s32", "uint32": "u32",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
}
_DTYPE_OF = {code: dtype for dtype, code in DTYPE_CODES.items()}
OPS = ("dot", "fma", "matmul", "lanedot")
VARIANTS = ("sat", "pa")  # saturating; A pre-packed into tiles (AMX)

_NAME = re.compile(r"^(?P<op>[a-z]+)_(?P<shape>\d+(?:x\d+)*)_(?P<dtypes>(?:[a-z]+\d+){3})_(?P<isa>[a-z][a-z0-9]*)"
                   r"(?:_(?P<variant>[a-z]+))?$")
_CODE = re.compile(r"[a-z]+\d+")
_REGISTERED: dict[str, tuple] = {}  # name -> aliases, for every registration made through ``register``


class IntrinName(NamedTuple):
    """The parts of an intrinsic name (dtypes spelled out: ``"uint8"``, not ``"u8"``)."""

    op: str
    shape: tuple
    dtypes: tuple
    isa: str
    variant: str | None


def intrin_name(op: str, shape, dtypes, isa: str, variant: str | None = None) -> str:
    """The name of an intrinsic under the scheme.

    Parameters
    ----------
    op : str
        One of ``OPS``.
    shape : sequence of int
        The desc's iterator extents in loop order.
    dtypes : sequence of str
        The dtypes of the operands A, B, C.
    isa : str
        The instruction or extension (lower case letters and digits).
    variant : str, optional
        One of ``VARIANTS``.

    Returns
    -------
    str

    Examples
    --------
    >>> intrin_name("fma", (16,), ("float32",) * 3, "avx512")
    'fma_16_f32f32f32_avx512'
    """
    if op not in OPS:
        raise ValueError(f"unknown intrinsic op {op!r}; use one of {OPS} or add it to naming.OPS")
    missing = [d for d in dtypes if d not in DTYPE_CODES]
    if missing or len(dtypes) != 3:
        raise ValueError(f"an intrinsic name needs the dtypes of A, B and C from {sorted(DTYPE_CODES)}, "
                         f"got {tuple(dtypes)}")
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; use one of {VARIANTS} or add it to naming.VARIANTS")
    name = f"{op}_{'x'.join(str(int(s)) for s in shape)}_{''.join(DTYPE_CODES[d] for d in dtypes)}_{isa}"
    name += f"_{variant}" if variant else ""
    if not _NAME.match(name):
        raise ValueError(f"{name!r} does not fit the scheme op_shape_dtypes_isa[_variant] (isa {isa!r} must be "
                         "lower case letters and digits)")
    return name


def parse_intrin_name(name: str) -> IntrinName:
    """Split a name into its parts; ``ValueError`` when it does not follow the scheme.

    Parameters
    ----------
    name : str
        An intrinsic name, e.g. ``"dot_8x4_u8i8s32_avx2"``.

    Returns
    -------
    IntrinName
        Its parts.

    Raises
    ------
    ValueError
        When the name does not follow the scheme.

    >>> parse_intrin_name("dot_4x4_i8i8s32_sdot").dtypes
    ('int8', 'int8', 'int32')

    Examples
    --------
    >>> from intrinsics.naming import parse_intrin_name
    >>> n = parse_intrin_name("dot_8x4_u8i8s32_avx2")
    >>> n.op, n.shape, n.isa
    ('dot', (8, 4), 'avx2')
    """
    m = _NAME.match(name)
    if m is None:
        raise ValueError(f"{name!r} does not follow <op>_<shape>_<dtypes>_<isa>[_<variant>], "
                         "e.g. dot_16x4_u8i8s32_vnni")
    codes = _CODE.findall(m["dtypes"])
    unknown = [c for c in codes if c not in _DTYPE_OF]
    if unknown or m["op"] not in OPS or (m["variant"] is not None and m["variant"] not in VARIANTS):
        raise ValueError(f"{name!r}: unknown op, dtype code or variant ({m['op']}, {codes}, {m['variant']}); "
                         f"ops {OPS}, dtype codes {sorted(_DTYPE_OF)}, variants {VARIANTS}")
    return IntrinName(m["op"], tuple(int(s) for s in m["shape"].split("x")), tuple(_DTYPE_OF[c] for c in codes),
                      m["isa"], m["variant"])


def check_name(intrin: TensorIntrin, name: str | None = None) -> IntrinName:
    """Parse ``name`` (default: the intrinsic's) and check its shape and dtypes against the desc.

    Raises ``ValueError`` naming the mismatch.

    Parameters
    ----------
    intrin : TensorIntrin
        The intrinsic.
    name : str, optional
        The name to check (default: the intrinsic's).

    Returns
    -------
    IntrinName
        The parsed name.

    Raises
    ------
    ValueError
        When the name does not match the description.
    """
    name = name or intrin.name
    parts = parse_intrin_name(name)
    shape = tuple(it.extent for it in intrin.meta.iters)
    dtypes = tuple(op.dtype for op in intrin.meta.operands)
    if parts.shape != shape or parts.dtypes != dtypes:
        raise ValueError(f"{name!r} says shape {parts.shape} and dtypes {parts.dtypes}, but its desc has iterator "
                         f"extents {shape} and operand dtypes {dtypes}; rename it "
                         f"({intrin_name(parts.op, shape, dtypes, parts.isa, parts.variant)!r})")
    return parts


def register(name: str, desc, impl, meta: IntrinMeta, aliases=()) -> TensorIntrin:
    """Register an intrinsic under its scheme name (checked against ``desc``) and its ``aliases``.

    Re-registration replaces the previous one (a re-imported module registers again).

    Parameters
    ----------
    name : str
        The scheme name.
    desc : PrimFunc
        What it computes.
    impl : PrimFunc
        How it computes it.
    meta : IntrinMeta
        Features, family and shape information.
    aliases : list of str
        Other names (TVM's, where TVM has one).

    Returns
    -------
    TensorIntrin
        The registered intrinsic.
    """
    check_name(TensorIntrin(desc, impl, name, meta))  # unregistered: a name that fails is never registered
    intrin = TensorIntrin.register(name, desc, impl, override=True, meta=meta)
    for alias in aliases:
        TensorIntrin.register_alias(alias, name, override=True)
    _REGISTERED[name] = tuple(aliases)
    return intrin


def registered_names() -> dict[str, tuple]:
    """The intrinsics registered through ``register`` (this package's), each with its aliases.

    Returns
    -------
    dict of str to tuple
        Name to aliases.
    """
    return dict(_REGISTERED)
