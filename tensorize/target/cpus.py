"""CPU features implied by a named ``-mcpu`` (what LLVM enables for that CPU), for the features
that tensorization cares about. ``Target("llvm -mcpu=znver4").has_feature("avx512vnni")`` uses this;
``-mattr`` adds or removes features on top, and ``-mcpu=native`` asks LLVM about the host instead.
"""
from __future__ import annotations

_X86_V3 = {"sse4.2", "avx", "avx2", "fma", "f16c", "bmi", "bmi2", "popcnt"}
_AVX512 = _X86_V3 | {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
_ICELAKE = _AVX512 | {"avx512vnni", "avx512vbmi", "avx512vbmi2", "avx512bitalg", "avx512vpopcntdq", "avx512ifma",
                      "gfni", "vaes", "vpclmulqdq"}
_ARMV82_DOT = {"neon", "fp-armv8", "dotprod", "fullfp16"}

CPU_FEATURES: dict[str, frozenset[str]] = {
    # x86-64
    "haswell": frozenset(_X86_V3),
    "x86-64-v3": frozenset(_X86_V3),
    "skylake-avx512": frozenset(_AVX512),
    "x86-64-v4": frozenset(_AVX512),
    "cascadelake": frozenset(_AVX512 | {"avx512vnni"}),
    "cooperlake": frozenset(_AVX512 | {"avx512vnni", "avx512bf16"}),
    "icelake-server": frozenset(_ICELAKE),
    "icelake-client": frozenset(_ICELAKE),
    "tigerlake": frozenset(_ICELAKE | {"avx512vp2intersect"}),
    "sapphirerapids": frozenset(_ICELAKE | {"avx512bf16", "avx512fp16", "amx-tile", "amx-int8", "amx-bf16",
                                            "avxvnni"}),
    "znver3": frozenset(_X86_V3),
    "znver4": frozenset(_ICELAKE | {"avx512bf16"}),
    "znver5": frozenset(_ICELAKE | {"avx512bf16", "avxvnni", "avx512vp2intersect"}),
    # AArch64
    "generic": frozenset(),
    "cortex-a53": frozenset({"neon", "fp-armv8"}),
    "cortex-a72": frozenset({"neon", "fp-armv8"}),
    "cortex-a76": frozenset(_ARMV82_DOT),
    "neoverse-n1": frozenset(_ARMV82_DOT),
    "neoverse-n2": frozenset(_ARMV82_DOT | {"i8mm", "bf16", "sve", "sve2"}),
    "neoverse-v1": frozenset(_ARMV82_DOT | {"i8mm", "bf16", "sve"}),
    "neoverse-v2": frozenset(_ARMV82_DOT | {"i8mm", "bf16", "sve", "sve2"}),
    "apple-m1": frozenset(_ARMV82_DOT),
    "a64fx": frozenset({"neon", "fp-armv8", "sve", "fullfp16"}),
}


def cpu_features(cpu: str | None) -> frozenset[str]:
    """Features of the named CPU (empty for unknown names: only ``-mattr`` counts then).

    Parameters
    ----------
    cpu : str or None
        An LLVM CPU name (``"skylake-avx512"``).

    Returns
    -------
    frozenset of str
        The features.

    Examples
    --------
    >>> from tensorize.target.cpus import cpu_features
    >>> "avx512f" in cpu_features("skylake-avx512")
    True
    """
    return CPU_FEATURES.get(cpu or "generic", frozenset())
