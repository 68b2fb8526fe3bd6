"""CPU features that target-specific LLVM intrinsics need, checked before LLVM sees the module.

LLVM does not report an intrinsic the target cannot select (``llvm.x86.avx512.vpdpbusd.512`` for
``-mcpu=haswell``, ``llvm.aarch64.neon.sdot`` without ``+dotprod``): it prints ``LLVM ERROR`` and
aborts the whole process. ``check_intrinsic_features`` reads the intrinsics the generated IR
declares, looks up the features each needs (``REQUIREMENTS``, most specific pattern first) and
raises ``MissingTargetFeatureError`` naming the intrinsic, the missing feature and the fix.

The target's features are ``Target.features`` (the host's for ``-mcpu=native``, the table of
``tensorize.target.cpus`` for a named CPU, then ``-mattr``) closed under the implications LLVM
applies (``avx512vnni`` enables ``avx512f``, which enables ``avx2`` and ``fma``, ...).

>>> from tensorize.target import Target
>>> missing_features("llvm.x86.avx512.vpdpbusd.512", Target("llvm -mcpu=haswell"))
('avx512vnni',)
>>> missing_features("llvm.x86.avx2.pmadd.wd", Target("llvm -mattr=+avx512vnni"))
()
"""
from __future__ import annotations

import re

from ...errors import TVMError
from ...target import Target
from ...target.cpus import CPU_FEATURES

__all__ = ["MissingTargetFeatureError", "REQUIREMENTS", "required_features", "effective_features",
           "missing_features", "declared_intrinsics", "check_intrinsic_features"]


class MissingTargetFeatureError(TVMError):
    """A program calls an LLVM intrinsic whose CPU feature the target does not enable.

    ``intrinsic`` is the LLVM name, ``features`` the features that are missing, ``target`` the
    target text.
    """

    def __init__(self, message: str, intrinsic: str, features: tuple, target: str):
        super().__init__(message)
        self.intrinsic, self.features, self.target = intrinsic, features, target


# (pattern, architecture, alternatives): the intrinsic may be used when every feature of one
# alternative is enabled. The first pattern that matches the name decides; () means no feature.
REQUIREMENTS: tuple = (
    # x86: AVX512-VNNI and AVX-VNNI (LLVM spells both with the avx512 names)
    (r"llvm\.x86\.avx512\.vpdp(bu|ws)sds?\.512", "x86_64", (("avx512vnni",),)),
    (r"llvm\.x86\.avx512\.vpdp(bu|ws)sds?\.(128|256)", "x86_64", (("avx512vnni", "avx512vl"), ("avxvnni",))),
    (r"llvm\.x86\.avx512bf16\..*\.(128|256)$", "x86_64", (("avx512bf16", "avx512vl"),)),
    (r"llvm\.x86\.avx512bf16\.", "x86_64", (("avx512bf16",),)),
    (r"llvm\.x86\.avx512fp16\.", "x86_64", (("avx512fp16",),)),
    (r"llvm\.x86\.avx512\.(pmaddubs\.w|pmaddw\.d|pshuf\.b|psad\.bw|dbpsadbw|pmul\.hr\.sw|pmulhu?\.w|packss|packus"
     r"|pavg|permvar\.hi)", "x86_64", (("avx512bw",),)),
    (r"llvm\.x86\.avx512\..*\.(128|256)$", "x86_64", (("avx512vl",),)),
    (r"llvm\.x86\.avx512\.", "x86_64", (("avx512f",),)),
    (r"llvm\.x86\.avx2\.vpdpb", "x86_64", (("avxvnniint8",),)),
    (r"llvm\.x86\.avx2\.vpdpw", "x86_64", (("avxvnniint16",),)),
    (r"llvm\.x86\.avx2\.", "x86_64", (("avx2",),)),
    (r"llvm\.x86\.fma\.", "x86_64", (("fma",),)),
    (r"llvm\.x86\.avx\.", "x86_64", (("avx",),)),
    (r"llvm\.x86\.sse42\.", "x86_64", (("sse4.2",),)),
    (r"llvm\.x86\.sse41\.", "x86_64", (("sse4.1",),)),
    (r"llvm\.x86\.ssse3\.", "x86_64", (("ssse3",),)),
    (r"llvm\.x86\.sse3\.", "x86_64", (("sse3",),)),
    # x86: AMX
    (r"llvm\.x86\.tdpbf16ps", "x86_64", (("amx-bf16",),)),
    (r"llvm\.x86\.tdpfp16ps", "x86_64", (("amx-fp16",),)),
    (r"llvm\.x86\.tdpb[su][su]d", "x86_64", (("amx-int8",),)),
    (r"llvm\.x86\.(tileloadd|tilestored|ldtilecfg|sttilecfg|tilezero|tilerelease)", "x86_64", (("amx-tile",),)),
    (r"llvm\.x86\.", "x86_64", ((),)),
    # AArch64 (Advanced SIMD itself is baseline)
    (r"llvm\.aarch64\.neon\.(usdot|sudot|smmla|ummla|usmmla)", "aarch64", (("i8mm",),)),
    (r"llvm\.aarch64\.neon\.[su]dot", "aarch64", (("dotprod",),)),
    (r"llvm\.aarch64\.neon\.bf", "aarch64", (("bf16",),)),
    (r"llvm\.aarch64\.sve\.(usdot|sudot|smmla|ummla|usmmla)", "aarch64", (("sve", "i8mm"),)),
    (r"llvm\.aarch64\.sve2\.", "aarch64", (("sve2",),)),
    (r"llvm\.aarch64\.sve\.", "aarch64", (("sve",),)),
    (r"llvm\.aarch64\.sme\.", "aarch64", (("sme",),)),
    (r"llvm\.aarch64\.", "aarch64", ((),)),
)
_COMPILED = tuple((re.compile(p), arch, alts) for p, arch, alts in REQUIREMENTS)

# feature -> features LLVM enables with it (one level; ``effective_features`` closes the relation)
IMPLIES = {
    "avx512vnni": ("avx512f",), "avx512bw": ("avx512f",), "avx512vl": ("avx512f",), "avx512dq": ("avx512f",),
    "avx512cd": ("avx512f",), "avx512ifma": ("avx512f",), "avx512vpopcntdq": ("avx512f",),
    "avx512bf16": ("avx512bw",), "avx512vbmi": ("avx512bw",), "avx512vbmi2": ("avx512bw",),
    "avx512bitalg": ("avx512bw",), "avx512fp16": ("avx512bw", "avx512dq", "avx512vl"),
    "avx512f": ("avx2", "fma", "f16c"), "avxvnni": ("avx2",), "avxvnniint8": ("avx2",), "avxvnniint16": ("avx2",),
    "avx2": ("avx",), "fma": ("avx",), "f16c": ("avx",), "avx": ("sse4.2",), "sse4.2": ("sse4.1",),
    "sse4.1": ("ssse3",), "ssse3": ("sse3",), "sse3": ("sse2",),
    "amx-int8": ("amx-tile",), "amx-bf16": ("amx-tile",), "amx-fp16": ("amx-tile",),
    "sve2": ("sve",), "sve": ("neon",), "i8mm": ("neon",), "dotprod": ("neon",), "bf16": ("neon",), "sme": ("bf16",),
}
_ARCH_FAMILY = {"i386": "x86_64", "i686": "x86_64", "x86": "x86_64", "arm64": "aarch64"}
_DECLARE = re.compile(r'^declare\b[^@\n]*@"?([^"(\s]+)"?\(', re.M)
_LLVM_TARGET_INTRINSIC = re.compile(r"llvm\.(x86|aarch64)\.[\w.]+")


def _closure(features) -> set:
    out, todo = set(), list(features)
    while todo:
        f = todo.pop()
        if f not in out:
            out.add(f)
            todo.extend(IMPLIES.get(f, ()))
    return out


def effective_features(target: Target) -> frozenset:
    """``target.features`` plus what they imply, minus what a ``-mattr=-feature`` turns off (with
    every feature that needs it, as LLVM does).

    Parameters
    ----------
    target : Target
        The target.

    Returns
    -------
    frozenset of str
        The features.
    """
    disabled = {m[1:] for m in target.mattr if m.startswith("-")}
    enabled = _closure(target.features)
    return frozenset(f for f in enabled if not (_closure([f]) & disabled))


def required_features(intrinsic: str) -> tuple[str, tuple] | None:
    """``(arch, alternatives)`` for an LLVM intrinsic name, or None when it is not target specific.

    Parameters
    ----------
    intrinsic : str
        The LLVM intrinsic name.

    Returns
    -------
    tuple or None
        The architecture and the alternative feature sets.
    """
    for pattern, arch, alternatives in _COMPILED:
        if pattern.match(intrinsic):
            return arch, alternatives
    return None


def missing_features(intrinsic: str, target: Target) -> tuple:
    """The features ``target`` lacks for ``intrinsic`` (the smallest set among the alternatives);
    ``()`` when it can be used.

    Parameters
    ----------
    intrinsic : str
        The LLVM intrinsic name.
    target : Target
        The target.

    Returns
    -------
    tuple of str
        The missing features.
    """
    req = required_features(intrinsic)
    if req is None:
        return ()
    _, alternatives = req
    have = effective_features(target)
    gaps = [tuple(f for f in alt if f not in have) for alt in alternatives]
    return () if any(not g for g in gaps) else min(gaps, key=len)


def declared_intrinsics(ir_text: str) -> list[str]:
    """The target-specific LLVM intrinsics (``llvm.x86.*``, ``llvm.aarch64.*``) the IR declares,
    also inside the names of bridge functions (``tensorize.sve_fixed.llvm.aarch64.sve.sdot...``).

    Parameters
    ----------
    ir_text : str
        LLVM IR text.

    Returns
    -------
    list of str
        The intrinsic names.
    """
    names = []
    for declared in _DECLARE.findall(ir_text):
        m = _LLVM_TARGET_INTRINSIC.search(declared)
        if m and m.group(0) not in names:
            names.append(m.group(0))
    return names


def check_intrinsic_features(ir_text: str, target: Target) -> None:
    """Raise ``MissingTargetFeatureError`` when the IR declares an intrinsic ``target`` cannot select
    (instead of letting LLVM abort the process).

    Parameters
    ----------
    ir_text : str
        LLVM IR text.
    target : Target
        The target.

    Raises
    ------
    MissingTargetFeatureError
        Naming the intrinsic and the missing features.
    """
    for name in declared_intrinsics(ir_text):
        arch, alternatives = required_features(name)
        if _ARCH_FAMILY.get(target.arch, target.arch) != arch:
            raise MissingTargetFeatureError(
                f"the program calls the {arch} intrinsic {name}, but the target {target} is {target.arch}; "
                f"build it for an {arch} target (e.g. -mtriple={arch}-linux-gnu) or tensorize with an intrinsic "
                f"for {target.arch}", name, (), str(target))
        missing = missing_features(name, target)
        if missing:
            raise MissingTargetFeatureError(_message(name, missing, alternatives, target), name, missing, str(target))


def _message(name: str, missing: tuple, alternatives: tuple, target: Target) -> str:
    needs = " or ".join("+".join(alt) for alt in alternatives)
    cpu = target.attrs.get("mcpu")
    if cpu == "native":
        whose = f"the host CPU ({target.mcpu}) does not have {', '.join(missing)}"
    elif cpu and cpu not in CPU_FEATURES:
        whose = (f"tensorize does not know the features of -mcpu={cpu} (tensorize.target.cpus), so it assumes "
                 f"none beyond -mattr")
    else:
        whose = f"the target does not enable {', '.join(missing)}"
    cpus = [c for c, feats in CPU_FEATURES.items() if any(set(alt) <= _closure(feats) for alt in alternatives)]
    pick = f" (e.g. -mcpu={cpus[0]})" if cpus else ""
    return (f"the program calls the LLVM intrinsic {name}, which needs CPU feature {needs}, but {whose}; LLVM "
            f"would abort the process compiling it for target '{target}'. Add -mattr={','.join('+' + f for f in missing)}"
            f" or pick a CPU that has it{pick}; code that must run on this target should use intrinsics its "
            f"features support (TensorIntrin.get(name).meta.supported_by(target))")
