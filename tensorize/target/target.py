"""Compilation targets: ``Target("llvm -mcpu=znver4 -mattr=+avx512f,+avx512vnni")``.

A target is a kind (``llvm``, ``c``, ``cuda``, ``nvptx``) plus attributes parsed from ``-key=value``
options (or given as a dict). For ``llvm`` the attributes that matter are ``mtriple`` (defaults to
the host), ``mcpu`` (``native`` resolves to the host CPU and its features; no ``mcpu`` means LLVM's
generic CPU, as in TVM) and ``mattr`` (``+feature`` / ``-feature``).

>>> t = Target("llvm -mcpu=znver4 -mattr=+avx512f,+avx512vnni")
>>> t.kind.name, t.mcpu, t.has_feature("avx512vnni")
('llvm', 'znver4', True)
>>> with Target("llvm"):
...     Target.current().kind.name
'llvm'
"""
from __future__ import annotations

import os
import shlex
import threading
from typing import Any, Mapping

from ..errors import TargetError, TVMTypeError
from . import llvm as _llvm
from .cpus import cpu_features
from .llvm import arch_of as _arch_of
from .llvm import host_cpu, host_triple

_KINDS = {
    "llvm": {"keys": ("cpu",), "device": "cpu"},
    "c": {"keys": ("cpu",), "device": "cpu"},
    "cuda": {"keys": ("cuda", "gpu"), "device": "cuda"},
    "nvptx": {"keys": ("cuda", "gpu"), "device": "cuda"},
}
# Attributes that hold lists (comma separated on the command line).
_LIST_ATTRS = {"mattr", "keys", "libs"}
_INT_ATTRS = {"num-cores", "opt-level", "max_num_threads", "thread_warp_size", "max_threads_per_block",
              "max_shared_memory_per_block", "multi_processor_count", "vector-width", "msve-vector-bits"}
_LOCAL = threading.local()


class TargetKind:
    """The kind of a target (``target.kind.name == "llvm"``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    @property
    def device_type(self) -> int:
        """The device type code (``kDLCPU`` or ``kDLCUDA``) of this kind."""
        from ..runtime.device import CPU, CUDA

        return CPU if _KINDS[self.name]["device"] == "cpu" else CUDA

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        return isinstance(other, TargetKind) and other.name == self.name or other == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class Target:
    """A compilation target, built from a string (``"llvm -mcpu=native"``), a dict
    (``{"kind": "llvm", "mcpu": "znver4"}``) or another Target.

    Attributes: ``kind``, ``attrs`` (dict), ``keys``, ``host``; for llvm also ``mtriple``, ``mcpu``,
    ``mattr`` and the resolved ``features``. ``with target:`` makes it ``Target.current()``.
    """

    def __init__(self, target: "str | Mapping[str, Any] | Target", host: "str | Mapping | Target | None" = None):
        if isinstance(target, Target):
            self.kind, self.attrs, self.tag = target.kind, dict(target.attrs), target.tag
            host = host if host is not None else target.host
        elif isinstance(target, Mapping):
            config = dict(target)
            kind = config.pop("kind", None)
            if kind is None:
                raise TargetError("a target dict needs a 'kind' entry, e.g. {'kind': 'llvm', 'mcpu': 'native'}")
            host = config.pop("host", host)
            self.tag = config.pop("tag", "")
            self.kind = _kind(kind)
            self.attrs = {k: _normalise(k, v) for k, v in config.items()}
        elif isinstance(target, str):
            self.tag = ""
            self.kind, self.attrs = _parse(target)
        else:
            raise TVMTypeError(f"Target expects a string or a dict, got {type(target).__name__}")
        self.attrs.setdefault("keys", list(_KINDS[self.kind.name]["keys"]))
        self._validate()
        self.host = Target(host) if host is not None and not isinstance(host, Target) else host
        if self.host is None and self.kind.name in ("cuda", "nvptx"):
            self.host = Target("llvm")

    def _validate(self) -> None:
        """Check ``-mtriple``, ``-mcpu``, ``-mattr`` and ``-arch`` against LLVM's tables, before LLVM sees them."""
        attrs = self.attrs
        for key in ("mtriple", "mcpu", "arch", "device", "model"):
            if key in attrs and not isinstance(attrs[key], str):
                raise TargetError(f"target attribute -{key} needs a value, e.g. -{key}=... (got {attrs[key]!r})")
        for key in ("mattr", "keys", "libs"):
            if key in attrs and not all(isinstance(v, str) for v in attrs[key]):
                raise TargetError(f"target attribute -{key} is a comma-separated list of names")
        if self.kind.name in ("cuda", "nvptx"):
            if "arch" in attrs:
                _llvm.check_cuda_arch(attrs["arch"])
            return
        if self.kind.name != "llvm" and not {"mtriple", "mcpu", "mattr"} & set(attrs):
            return
        triple = _llvm.check_triple(attrs["mtriple"]) if attrs.get("mtriple") else _llvm.normalize_triple(host_triple())
        mcpu = attrs.get("mcpu", "")
        if mcpu == "native" and _arch_of(triple) != _arch_of(host_triple()):
            raise TargetError(f"-mcpu=native means this machine's CPU ({_arch_of(host_triple())}), which cannot "
                              f"compile for {triple}; name a CPU of that architecture")
        _llvm.check_cpu(triple, mcpu)
        if "mattr" in attrs:
            attrs["mattr"] = _llvm.check_features(triple, attrs["mattr"])

    # -- attributes -------------------------------------------------------------------------
    @property
    def keys(self) -> list[str]:
        """The target's keys (``["cpu"]``, ``["cuda", "gpu"]``)."""
        return list(self.attrs.get("keys", ()))

    @property
    def mtriple(self) -> str:
        """The LLVM target triple (the host's when not given)."""
        return self.attrs.get("mtriple") or host_triple()

    @property
    def mcpu(self) -> str:
        """The CPU name; ``native`` resolves to the host CPU, none means ``generic``."""
        cpu = self.attrs.get("mcpu", "")
        if cpu == "native":
            return host_cpu()[0]
        return cpu or "generic"

    @property
    def mattr(self) -> list[str]:
        """The ``-mattr`` feature items."""
        return list(self.attrs.get("mattr", ()))

    @property
    def arch(self) -> str:
        """``x86_64``/``aarch64`` for llvm targets, the ``-arch`` (``sm_80``) for cuda."""
        if self.kind.name in ("cuda", "nvptx"):
            return self.attrs.get("arch", "")
        return _arch_of(self.mtriple)

    @property
    def is_host(self) -> bool:
        """True when code for this target runs in this process (same architecture as the host)."""
        return self.kind.name in ("llvm", "c") and _arch_of(self.mtriple) == _arch_of(host_triple())

    @property
    def features(self) -> frozenset:
        """Enabled CPU features without the ``+``: the host's for ``-mcpu=native``, then ``-mattr`` on top."""
        enabled: set[str] = set()
        mcpu = self.attrs.get("mcpu")
        if mcpu == "native":
            enabled |= host_cpu()[1]
        else:
            enabled |= cpu_features(mcpu)
        for item in self.mattr:
            name = item.lstrip("+-")
            if item.startswith("-"):
                enabled.discard(name)
            else:
                enabled.add(name)
        if self.arch == "aarch64" and {"dotprod", "i8mm", "sve"} & enabled:
            enabled.add("neon")
        return frozenset(enabled)

    def has_feature(self, name: str) -> bool:
        """``target.has_feature("avx512vnni")``: whether the CPU feature is enabled for this target.

        Parameters
        ----------
        name : str
            The feature (``"avx2"``).

        Returns
        -------
        bool
            Whether it is enabled.

        Examples
        --------
        >>> tvm.target.Target("llvm -mcpu=skylake-avx512").has_feature("avx512f")
        True
        """
        return name.lstrip("+") in self.features

    def llvm_feature_string(self) -> str:
        """The feature string handed to LLVM's target machine.

        Returns
        -------
        str
            E.g. ``"+avx2,+fma"``.
        """
        if self.attrs.get("mcpu") == "native":
            import llvmlite.binding as llvm

            base = llvm.get_host_cpu_features().flatten()
            return ",".join(filter(None, [base] + self.mattr))
        return ",".join(self.mattr)

    @property
    def num_cores(self) -> int:
        """The ``num-cores`` attribute, or the host's core count."""
        return int(self.attrs.get("num-cores") or os.cpu_count() or 1)

    def export(self) -> dict:
        """The target as a dict (the inverse of ``Target(dict)``).

        Returns
        -------
        dict
            The attributes, ``kind`` included.
        """
        out = {"kind": self.kind.name, **{k: (list(v) if isinstance(v, list) else v) for k, v in self.attrs.items()}}
        if self.host is not None:
            out["host"] = self.host.export()
        return out

    # -- current target ---------------------------------------------------------------------
    @staticmethod
    def current(allow_none: bool = True) -> "Target | None":
        """The innermost target entered with ``with target:``.

        Parameters
        ----------
        allow_none : bool
            Return None outside any ``with``; raise otherwise.

        Returns
        -------
        Target or None
            The target.
        """
        stack = getattr(_LOCAL, "stack", [])
        if stack:
            return stack[-1]
        if not allow_none:
            raise TargetError("no target is in scope; use `with tvm.target.Target('llvm'):`")
        return None

    def __enter__(self) -> "Target":
        if not hasattr(_LOCAL, "stack"):
            _LOCAL.stack = []
        _LOCAL.stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _LOCAL.stack.pop()

    # -- text ------------------------------------------------------------------------------
    def __str__(self) -> str:
        parts = [self.kind.name]
        for key, value in self.attrs.items():
            if key == "keys" and list(value) == list(_KINDS[self.kind.name]["keys"]):
                continue
            if isinstance(value, list):
                value = ",".join(value)
            elif isinstance(value, bool):
                value = str(value).lower()
            parts.append(f"-{key}={value}")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = Target(other)
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def _kind(name: str) -> TargetKind:
    if not isinstance(name, str) or name not in _KINDS:
        raise TargetError(f"unknown target kind {name!r}; known kinds: {', '.join(sorted(_KINDS))}")
    return TargetKind(name)


def _normalise(key: str, value: Any) -> Any:
    if key in _LIST_ATTRS:
        if isinstance(value, str):
            return [v for v in value.split(",") if v]
        if isinstance(value, bool) or not isinstance(value, (list, tuple)):
            raise TargetError(f"target attribute -{key} is a comma-separated list, got {value!r}")
        return list(value)
    if key in _INT_ATTRS:
        try:
            number = int(value)
        except (TypeError, ValueError, OverflowError):
            raise TargetError(f"target attribute -{key} expects an integer, got {value!r}") from None
        if isinstance(value, bool) or not 0 <= number < 1 << 31:
            raise TargetError(f"target attribute -{key} expects a non-negative integer, got {value!r}")
        return number
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    return value


def _parse(text: str) -> tuple[TargetKind, dict]:
    try:
        tokens = shlex.split(text)
    except ValueError as err:
        raise TargetError(f"cannot read target string {text!r}: {err}") from None
    if not tokens:
        raise TargetError("empty target string; use e.g. 'llvm' or 'llvm -mcpu=native'")
    kind = _kind(tokens[0])
    attrs: dict[str, Any] = {}
    for token in tokens[1:]:
        key, eq, value = token.lstrip("-").partition("=")
        if not token.startswith("-") or not key:
            raise TargetError(f"bad target option {token!r} in {text!r}; options look like -mcpu=native")
        attrs[key] = _normalise(key, value if eq else True)
    return kind, attrs


def sm_version(target) -> int:
    """The compute capability of ``target`` as an int (``sm_90`` -> 90; 80 when the target names none).

    Parameters
    ----------
    target : Target
        A CUDA target.

    Returns
    -------
    int
        The version.
    """
    arch = str(getattr(target, "arch", "") or "sm_80")
    digits = "".join(c for c in arch.split("_")[-1] if c.isdigit())
    return int(digits) if digits else 80


def create(target: "str | Mapping | Target") -> Target:
    """``tvm.target.create``: the same as ``Target(target)``.

    Parameters
    ----------
    target : str, dict or Target
        The description.

    Returns
    -------
    Target
        The target.
    """
    return target if isinstance(target, Target) else Target(target)


def resolve(target: "str | Mapping | Target | None") -> Target:
    """A Target from a user argument, falling back to ``Target.current()`` then ``llvm``.

    Parameters
    ----------
    target : str, dict, Target or None
        The user's argument.

    Returns
    -------
    Target
        The target.
    """
    if target is None:
        target = Target.current() or "llvm"
    return create(target)


__all__ = ["Target", "TargetKind", "create", "resolve", "sm_version", "host_cpu", "host_triple", "TargetError"]
