"""What LLVM knows about a target triple: its CPU and feature names, the host, and the checks that
keep a malformed target away from LLVM's aborts.

LLVM answers a bad ``-mcpu`` with a warning and then, for a 64-bit triple, ``LLVM ERROR: 64-bit
code requested on a subtarget that doesn't support it!``, which ends the process. Every name is
therefore checked against LLVM's own tables before a target machine is made: LLVM prints them
when asked for the CPU ``help``, which this module captures once per architecture.
"""
from __future__ import annotations

import difflib
import json
import logging
import os
import re
import subprocess
import sys
from functools import lru_cache

from ..errors import TargetError

logger = logging.getLogger(__name__)

# CPUs LLVM 22 knows for x86 that have no 64-bit mode: on an x86_64 triple each aborts the process
# (measured by compiling a function for every CPU of the table in a child process).
X86_32BIT_ONLY_CPUS = frozenset({
    "athlon", "athlon-4", "athlon-mp", "athlon-tbird", "athlon-xp", "c3", "c3-2", "geode", "i386", "i486", "i586",
    "i686", "k6", "k6-2", "k6-3", "lakemont", "pentium", "pentium-m", "pentium-mmx", "pentium2", "pentium3",
    "pentium3m", "pentium4", "pentium4m", "pentium_4", "pentium_4_sse3", "pentium_ii", "pentium_iii",
    "pentium_iii_no_xmm_regs", "pentium_m", "pentium_mmx", "pentium_pro", "pentiumpro", "prescott", "winchip-c6",
    "winchip2", "yonah",
})
# Feature changes that abort LLVM on a 64-bit x86 triple (measured the same way, +feature and -feature).
X86_64_FORBIDDEN_FEATURES = frozenset({"-64bit", "-64bit-mode", "+16bit-mode", "+32bit-mode", "-sse", "-sse2", "-x87"})


@lru_cache(maxsize=1)
def initialize() -> None:
    """Initialise LLVM's targets and printers (once per process)."""
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


@lru_cache(maxsize=1)
def host_cpu() -> tuple[str, frozenset]:
    """The host CPU name and its enabled features, as LLVM reports them.

    Returns
    -------
    tuple of (str, frozenset of str)
        The CPU name (``"znver3"``) and the enabled feature names without ``+``.

    Examples
    --------
    >>> name, features = host_cpu()
    >>> isinstance(name, str) and isinstance(features, frozenset)
    True
    """
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name(), frozenset(name for name, on in _host_feature_table().items() if on)


# Feature families whose instructions compiled code may contain (vector and bit-manipulation ISAs, AMX).
# Other features LLVM reports (mwaitx, rdpru, sgx, ...) are often hidden by hypervisors and never emitted.
_CODE_FEATURE_PREFIXES = ("sse", "ssse3", "avx", "amx", "fma", "f16c", "bmi", "popcnt", "lzcnt", "gfni", "vaes",
                          "vpclmulqdq", "xop", "sha", "aes", "pclmul", "movbe", "adx",
                          "neon", "dotprod", "i8mm", "sve", "sme", "bf16", "fullfp16")


def code_features(features) -> list[str]:
    """The features among ``features`` that change which instructions compiled code may contain.

    Parameters
    ----------
    features : iterable of str
        Feature names without ``+`` (a target's ``features``).

    Returns
    -------
    list of str
        The instruction-set features, sorted.

    Examples
    --------
    >>> code_features({"avx512f", "mwaitx", "prefer-256-bit", "fma"})
    ['avx512f', 'fma']
    """
    return sorted(f for f in features if f.startswith(_CODE_FEATURE_PREFIXES))


def host_lacks(features) -> list[str]:
    """The instruction-set features among ``features`` that this process's CPU does not have: code using
    them dies with an illegal instruction (SIGILL) here.

    Parameters
    ----------
    features : iterable of str
        Feature names without ``+``.

    Returns
    -------
    list of str
        The missing features, sorted (empty when the host has them all).

    Examples
    --------
    >>> host_lacks(["sse2"])
    []
    """
    try:
        host = _host_feature_table()
    except RuntimeError:  # LLVM cannot read this CPU's features: nothing is known to be missing
        logger.debug("LLVM reports no host CPU features; skipping the host feature check")
        return []
    return [f for f in code_features(features) if host.get(f) is False]


@lru_cache(maxsize=1)
def _host_feature_table() -> dict:
    """Every feature LLVM knows for the host, enabled or not (one query per process)."""
    import llvmlite.binding as llvm

    return dict(llvm.get_host_cpu_features())


@lru_cache(maxsize=1)
def host_triple() -> str:
    """The LLVM target triple of this process (``x86_64-unknown-linux-gnu``).

    Returns
    -------
    str
        The triple.
    """
    import llvmlite.binding as llvm

    return llvm.get_process_triple()


def arch_of(triple: str) -> str:
    """The architecture part of a triple, normalised (``arm64`` -> ``aarch64``).

    Parameters
    ----------
    triple : str
        An LLVM target triple.

    Returns
    -------
    str
        The architecture.

    Examples
    --------
    >>> from tensorize.target.llvm import arch_of
    >>> arch_of("arm64-apple-darwin")
    'aarch64'
    """
    arch = triple.split("-", 1)[0]
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(arch, arch)


def normalize_triple(triple: str) -> str:
    """``aarch64-linux-gnu`` -> ``aarch64-unknown-linux-gnu`` (LLVM wants the vendor part).

    Parameters
    ----------
    triple : str
        An LLVM target triple.

    Returns
    -------
    str
        The triple with a vendor part.
    """
    parts = triple.split("-")
    if len(parts) == 3 and parts[1] == "linux":
        return f"{parts[0]}-unknown-{parts[1]}-{parts[2]}"
    return triple


_TRIPLE = re.compile(r"^[A-Za-z0-9_.]+(-[A-Za-z0-9_.]+){1,4}$")


def check_triple(triple: str) -> str:
    """``triple`` normalised, or ``TargetError`` when LLVM has no backend for it.

    Parameters
    ----------
    triple : str
        An LLVM target triple.

    Returns
    -------
    str
        The normalised triple.

    Raises
    ------
    TargetError
        When LLVM does not know it.
    """
    import llvmlite.binding as llvm

    if not isinstance(triple, str) or not _TRIPLE.match(triple):
        raise TargetError(f"-mtriple={triple!r} is not a target triple; write e.g. -mtriple=x86_64-linux-gnu or "
                          "-mtriple=aarch64-linux-gnu")
    initialize()
    normal = normalize_triple(triple)
    try:
        llvm.Target.from_triple(normal)
    except RuntimeError:
        known = sorted({t.split("-")[0] for t in ("x86_64-", "aarch64-", "nvptx64-")})
        raise TargetError(f"-mtriple={triple!r}: LLVM has no backend for this triple; architectures this build "
                          f"supports include {', '.join(known)}") from None
    return normal


_HELP_CHILD = """
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
llvm.Target.from_triple(sys.argv[1]).create_target_machine(cpu="help", features="")
"""


@lru_cache(maxsize=None)
def llvm_tables(triple: str) -> tuple[frozenset, frozenset]:
    """The CPU names and feature names LLVM knows for ``triple`` (its ``-mcpu=help`` tables).

    LLVM prints these tables once per process, so they are read in a child process and cached on
    disk (per llvmlite version and triple) under ``$TENSORIZE_CACHE_DIR`` or ``~/.cache/tensorize``.

    Parameters
    ----------
    triple : str
        A triple LLVM has a backend for (see ``check_triple``).

    Returns
    -------
    tuple of (frozenset of str, frozenset of str)
        The CPU names and the feature names.

    Examples
    --------
    >>> cpus, features = llvm_tables("x86_64-unknown-linux-gnu")
    >>> "znver4" in cpus, "avx512vnni" in features
    (True, True)
    """
    import llvmlite

    cache = os.path.join(os.environ.get("TENSORIZE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                               "tensorize"),
                         f"llvm-tables-{llvmlite.__version__}-{re.sub(r'[^A-Za-z0-9_.-]', '_', triple)}.json")
    try:
        with open(cache) as f:
            data = json.load(f)
        return frozenset(data["cpus"]), frozenset(data["features"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    result = subprocess.run([sys.executable, "-c", _HELP_CHILD, triple], capture_output=True, text=True,
                            timeout=120, check=False)
    cpus, _, features = result.stderr.partition("Available features for this target:")
    tables = _names(cpus.partition("Available CPUs for this target:")[2]), _names(features)
    if not tables[0] or not tables[1]:
        raise TargetError(f"could not read LLVM's CPU and feature tables for {triple} (exit {result.returncode}): "
                          f"{result.stderr[-500:]}")
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        temp = f"{cache}.{os.getpid()}.tmp"
        with open(temp, "w") as f:
            json.dump({"cpus": sorted(tables[0]), "features": sorted(tables[1])}, f)
        os.replace(temp, cache)
    except OSError:  # a read-only home: the tables stay in memory only
        logger.debug("cannot cache LLVM tables at %s", cache)
    return tables


def _names(section: str) -> frozenset:
    out = set()
    for line in section.splitlines():
        line = line.strip()
        if not line or line.startswith("Use ") or " - " not in line:
            continue
        out.add(line.split()[0])
    return frozenset(out)


def _close(name: str, known) -> str:
    matches = difflib.get_close_matches(name, sorted(known), n=4, cutoff=0.6)
    return f"; did you mean {', '.join(matches)}?" if matches else ""


def check_cpu(triple: str, cpu: str) -> None:
    """``TargetError`` unless ``cpu`` is a CPU LLVM knows for ``triple`` (and one that triple can use).

    Parameters
    ----------
    triple : str
        An LLVM target triple.
    cpu : str
        The CPU name.

    Raises
    ------
    TargetError
        When LLVM does not know it.
    """
    if cpu in ("", "generic", "native"):
        return
    cpus, _ = llvm_tables(triple)
    if cpu not in cpus:
        raise TargetError(f"-mcpu={cpu!r} is not a CPU LLVM knows for {triple}{_close(cpu, cpus)} "
                          "(-mcpu=native takes this machine's CPU)")
    if arch_of(triple) == "x86_64" and cpu in X86_32BIT_ONLY_CPUS:
        raise TargetError(f"-mcpu={cpu!r} has no 64-bit mode, so it cannot compile for {triple}; choose a 64-bit "
                          "CPU such as x86-64, haswell or znver4")


def check_features(triple: str, mattr: list[str]) -> list[str]:
    """The ``-mattr`` items with explicit signs (``avx2`` -> ``+avx2``), or ``TargetError`` naming the first
    unknown feature and LLVM's close matches.

    Parameters
    ----------
    triple : str
        An LLVM target triple.
    mattr : list of str
        The ``-mattr`` items.

    Returns
    -------
    list of str
        The signed items.

    Raises
    ------
    TargetError
        When LLVM does not know it.
    """
    _, features = llvm_tables(triple)
    out = []
    for item in mattr:
        if not isinstance(item, str) or not item.strip("+-"):
            raise TargetError(f"-mattr item {item!r} is empty; write -mattr=+avx2,+fma")
        sign = item[0] if item[0] in "+-" else "+"
        name = item[1:] if item[0] in "+-" else item
        if name not in features:
            raise TargetError(f"-mattr={item!r}: {name!r} is not a feature LLVM knows for {triple}"
                              f"{_close(name, features)}")
        if arch_of(triple) == "x86_64" and sign + name in X86_64_FORBIDDEN_FEATURES:
            raise TargetError(f"-mattr={item!r} cannot be used on {triple}: 64-bit x86 code needs that feature "
                              "as it is")
        out.append(sign + name)
    return out


def check_cuda_arch(arch: str) -> None:
    """``TargetError`` unless ``arch`` is an NVPTX ``sm_XX`` LLVM knows.

    Parameters
    ----------
    arch : str
        E.g. ``"sm_80"``.

    Raises
    ------
    TargetError
        When LLVM does not know it.
    """
    if not isinstance(arch, str) or not arch:
        raise TargetError(f"-arch={arch!r} is empty; write e.g. -arch=sm_80")
    cpus, _ = llvm_tables("nvptx64-nvidia-cuda")
    if arch not in cpus:
        known = sorted(c for c in cpus if c.startswith("sm_"))
        raise TargetError(f"-arch={arch!r} is not a CUDA architecture LLVM knows{_close(arch, known)} "
                          f"(known: {', '.join(known[:6])}, ...)")
