"""The ``target/`` group's targets as ``tensorize`` targets, with the errors a user can act on: a GPU target
in a build without the GPU backend, a cross target (AArch64) where the experiment must run its kernels.

>>> resolve_target({"name": "host", "target": "llvm -mcpu=native"}).kind.name
'llvm'
"""
from __future__ import annotations

import importlib.util
import os
from typing import Any, Mapping

import tensorize as tvm

__all__ = ["resolve_target", "ConfigError", "target_choices"]


class ConfigError(tvm.TVMError):
    """A configuration that cannot run here; the message names the key and the choices."""


def target_choices(config_dir: str | None = None) -> list[str]:
    """The names in ``configs/target/``."""
    folder = config_dir or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs",
                                        "target")
    return sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".yaml")) if os.path.isdir(folder) else []


def _has_backend(kind: str) -> bool:
    return importlib.util.find_spec(f"tensorize.codegen.{kind}") is not None


def resolve_target(tgt: Mapping[str, Any]) -> "tvm.target.Target":
    """The ``Target`` of a ``target/`` config; raises ``ConfigError`` when the experiment cannot run on it here."""
    name, text = tgt.get("name", "?"), tgt["target"]
    target = tvm.target.Target(text)
    kind = target.kind.name
    if kind in ("cuda", "nvptx", "rocm"):
        if not _has_backend(kind):
            raise ConfigError(
                f"target={name} ({text}) needs the {kind} code generator, and this build has only the LLVM CPU "
                f"backend; choose a CPU target (target=host, avx2, avx512, x86_vnni; choices: {target_choices()})")
        from tensorize.runtime.cuda_module import gpu_available

        if not gpu_available():
            raise ConfigError(
                f"target={name} ({text}) needs an NVIDIA GPU visible to cupy to run and time kernels, and this "
                f"machine has none; run on a GPU node, or choose a CPU target (target=host, avx2, avx512, "
                f"x86_vnni; choices: {target_choices()})")
    elif not target.is_host:
        raise ConfigError(
            f"target={name} ({text}) is not this machine's architecture: the experiment driver runs and times "
            f"kernels in this process. Tune it with search.tune_tir(..., builder='ray', runner='ray') on a cluster "
            f"with an {{\"arm64\": 1}} node, or pick a host target (choices: {target_choices()})")
    return target
