"""Calling scalable-vector (SVE) LLVM intrinsics from fixed-length vector code.

TensorIR vectors have a fixed length, and llvmlite's IR builder has no scalable vector types. When
the target fixes the SVE vector length (``llvm -mtriple=aarch64-linux-gnu -mattr=+sve
-msve-vector-bits=256``), a fixed ``int32x8`` holds exactly one SVE register, so an intrinsic impl
may call an SVE intrinsic by its LLVM name with fixed vectors::

    C[T.ramp(0, 1, 8)] = T.call_llvm_pure_intrin("int32x8", "llvm.aarch64.sve.sdot.nxv4i32",
                                                 C.vload([0], "int32x8"), a_int8x32, b_int8x32)

The call goes to a small *bridge* function written as LLVM IR text (the way clang lowers
``-msve-vector-bits`` types): it inserts each fixed vector into the scalable type
(``llvm.vector.insert``), calls the intrinsic and extracts the result. The bridge is linked into
the module and inlined; every function gets ``vscale_range(n, n)`` so LLVM keeps the values in Z
registers (``ldr z0, [x0]; sdot z0.s, z1.b, z2.b``) instead of spilling through the stack.
"""
from __future__ import annotations

import re

import llvmlite.ir as ir

from ...errors import TVMError
from .types import type_suffix

SVE_BITS_ATTR = "msve-vector-bits"
BRIDGE_PREFIX = "tensorize.sve_fixed."


def is_scalable_intrinsic(name: str) -> bool:
    """Whether the LLVM intrinsic ``name`` is overloaded on scalable vector types (``.nxv4i32``).

    Parameters
    ----------
    name : str
        The LLVM intrinsic.

    Returns
    -------
    bool
        The answer.
    """
    return name.startswith("llvm.") and re.search(r"\.nxv\d+", name) is not None


def sve_vector_bits(target) -> int | None:
    """The fixed SVE vector length in bits from ``-msve-vector-bits=N``, or None when not fixed.

    Parameters
    ----------
    target : Target
        The target.

    Returns
    -------
    int or None
        The vector length.
    """
    value = getattr(target, "attrs", {}).get(SVE_BITS_ATTR)
    if value in (None, "", False):
        return None
    try:
        bits = int(value)
    except (TypeError, ValueError):
        raise TVMError(f"-{SVE_BITS_ATTR} expects a number of bits (128, 256, ..., 2048), got {value!r}") from None
    if bits < 128 or bits > 2048 or bits % 128:
        raise TVMError(f"-{SVE_BITS_ATTR}={bits} is not an SVE vector length; use a multiple of 128 up to 2048")
    return bits


def vscale_of(target, intrinsic: str) -> int:
    """``vscale`` for ``intrinsic`` on ``target``: the fixed SVE length over 128 bits.

    Parameters
    ----------
    target : Target
        The target.
    intrinsic : str
        The LLVM intrinsic (for the error message).

    Returns
    -------
    int
        The vscale.
    """
    bits = sve_vector_bits(target)
    if bits is None:
        raise TVMError(f"the scalable intrinsic {intrinsic} is called with fixed-length vectors, which needs a fixed "
                       f"SVE vector length: add -{SVE_BITS_ATTR}=256 (or 128, 512, ...) and -mattr=+sve to the target")
    return bits // 128


class ScalableBridges:
    """The bridge functions one module needs, keyed by their declared (fixed-vector) name."""

    def __init__(self):
        self._bridges: dict[str, tuple[str, ir.Type, list]] = {}

    def declare(self, ctx, intrinsic: str, ret: ir.Type, args: list) -> ir.Function:
        """The bridge for calling ``intrinsic`` with these fixed types (declared in the llvmlite module).

        Parameters
        ----------
        ctx : ModuleContext
            The module being built.
        intrinsic : str
            The scalable intrinsic.
        ret : ir.Type
            The fixed return type.
        args : list of ir.Type
            The fixed argument types.

        Returns
        -------
        ir.Function
            The bridge's declaration.
        """
        vscale_of(ctx.target, intrinsic)  # fail early with the fix when the length is not fixed
        signature = ".".join(_mangle(t) for t in [ret, *args])
        name = f"{BRIDGE_PREFIX}{intrinsic}.{signature}"
        self._bridges[name] = (intrinsic, ret, list(args))
        return ctx.declare(name, ret, list(args))

    def __bool__(self) -> bool:
        return bool(self._bridges)

    def text(self, target, triple: str) -> str:
        """LLVM IR defining every bridge (to parse and link into the module).

        Parameters
        ----------
        target : Target
            The target.
        triple : str
            The target triple.

        Returns
        -------
        str
            The IR.
        """
        vscale = sve_vector_bits(target) // 128
        lines = [f'target triple = "{triple}"']
        declared: dict[str, str] = {}
        for name, (intrinsic, ret, args) in self._bridges.items():
            lines += _bridge(name, intrinsic, ret, args, vscale, declared)
        lines += declared.values()
        lines.append(f"attributes #0 = {{ alwaysinline nounwind vscale_range({vscale},{vscale}) }}")
        return "\n".join(lines) + "\n"


def _scalable(t: ir.Type, vscale: int, intrinsic: str) -> str:
    if not isinstance(t, ir.VectorType):
        return str(t)
    width = getattr(t.element, "width", None)
    if width == 1:  # predicates: one bit per lane of some element size
        if t.count % vscale:
            raise TVMError(f"{intrinsic}: a predicate of {t.count} lanes does not match SVE vscale {vscale}")
    elif width is None or t.count * width != 128 * vscale:
        bits = t.count * width if width else "?"
        raise TVMError(f"{intrinsic}: the fixed vector {t} has {bits} bits but an SVE register has {128 * vscale} "
                       f"(-{SVE_BITS_ATTR}={128 * vscale}); pass {128 * vscale // (width or 32)} lanes or build for "
                       f"-{SVE_BITS_ATTR}={bits}")
    return f"<vscale x {t.count // vscale} x {t.element}>"


def _mangle(t: ir.Type, scalable_count: int | None = None) -> str:
    if isinstance(t, ir.VoidType):
        return "void"
    if isinstance(t, ir.VectorType) and scalable_count is not None:
        return f"nxv{scalable_count}{type_suffix(t.element)}"
    return type_suffix(t)


def _bridge(name: str, intrinsic: str, ret: ir.Type, args: list, vscale: int, declared: dict) -> list[str]:
    body, call_args = [], []
    for i, t in enumerate(args):
        if isinstance(t, ir.VectorType):
            st = _scalable(t, vscale, intrinsic)
            insert = f"llvm.vector.insert.{_mangle(t, t.count // vscale)}.{_mangle(t)}"
            declared[insert] = f"declare {st} @{insert}({st}, {t}, i64)"
            body.append(f"  %s{i} = call {st} @{insert}({st} poison, {t} %a{i}, i64 0)")
            call_args.append(f"{st} %s{i}")
        else:
            call_args.append(f"{t} %a{i}")
    ret_text = _scalable(ret, vscale, intrinsic) if not isinstance(ret, ir.VoidType) else "void"
    declared[intrinsic] = f"declare {ret_text} @{intrinsic}({', '.join(a.rsplit(' ', 1)[0] for a in call_args)})"
    params = ", ".join(f"{t} %a{i}" for i, t in enumerate(args))
    lines = [f'define linkonce_odr {ret} @"{name}"({params}) #0 {{', *body]
    if isinstance(ret, ir.VoidType):
        lines += [f"  call void @{intrinsic}({', '.join(call_args)})", "  ret void"]
    elif isinstance(ret, ir.VectorType):
        extract = f"llvm.vector.extract.{_mangle(ret)}.{_mangle(ret, ret.count // vscale)}"
        declared[extract] = f"declare {ret} @{extract}({ret_text}, i64)"
        lines += [f"  %r = call {ret_text} @{intrinsic}({', '.join(call_args)})",
                  f"  %out = call {ret} @{extract}({ret_text} %r, i64 0)", f"  ret {ret} %out"]
    else:
        lines += [f"  %r = call {ret} @{intrinsic}({', '.join(call_args)})", f"  ret {ret} %r"]
    return lines + ["}"]


_DEFINE = re.compile(r"^(define [^\n]*\))([^\n{]*)$", re.M)


def with_vscale_range(text: str, target) -> str:
    """``text`` with ``vscale_range(n,n)`` on every defined function when the target fixes the SVE length.

    Parameters
    ----------
    text : str
        LLVM IR.
    target : Target
        The target.

    Returns
    -------
    str
        The IR.
    """
    bits = sve_vector_bits(target)
    if bits is None:
        return text
    attribute = f" vscale_range({bits // 128},{bits // 128})"
    return _DEFINE.sub(lambda m: m.group(1) + m.group(2).rstrip() + attribute, text)


__all__ = ["ScalableBridges", "is_scalable_intrinsic", "sve_vector_bits", "with_vscale_range", "SVE_BITS_ATTR"]
