"""Code generators: lowered TensorIR to a runnable ``tensorize.runtime.Module``.

``build_module(lowered_mod, target)`` picks the generator by ``target.kind``: ``llvm`` (CPU, see
``codegen.llvm``). A CUDA source generator plugs in here under ``cuda``/``nvptx``.

>>> import tensorize as tvm
>>> from tensorize import te
>>> A = te.placeholder((8,), name="A")
>>> B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
>>> rt_mod = build_module(tvm.lower(te.create_prim_func([A, B])), Target("llvm"))
>>> callable(rt_mod["main"])
True
"""
from __future__ import annotations

from ..errors import TVMError
from ..target import Target, create

_GENERATORS = {}


def register(kind: str):
    """Register ``fbuild(lowered_mod, target) -> runtime.Module`` for a target kind.

    Parameters
    ----------
    kind : str
        The target kind (``"llvm"``, ``"cuda"``).

    Returns
    -------
    callable
        A decorator registering ``fbuild``.
    """
    def wrap(fbuild):
        _GENERATORS[kind] = fbuild
        return fbuild

    return wrap


@register("llvm")
def _build_llvm(mod, target):
    from .llvm import build

    return build(mod, target)


@register("cuda")
def _build_cuda(mod, target):
    from .cuda import build

    return build(mod, target)


def build_module(lowered_mod, target: "Target | str") -> "object":
    """Compile a lowered IRModule for ``target`` into a runtime Module.

    Parameters
    ----------
    lowered_mod : IRModule
        The lowered module.
    target : Target or str
        The target.

    Returns
    -------
    Module
        The runtime module.
    """
    target = create(target)
    fbuild = _GENERATORS.get(target.kind.name)
    if fbuild is None:
        raise TVMError(f"no code generator for target kind {target.kind.name!r} yet; available: {sorted(_GENERATORS)}")
    return fbuild(lowered_mod, target)


__all__ = ["build_module", "register"]
