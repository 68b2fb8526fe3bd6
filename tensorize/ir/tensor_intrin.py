"""The tensor intrinsic registry (``tvm.tir.TensorIntrin``).

A tensor intrinsic is a pair of PrimFuncs written in TVMScript: ``desc`` says what the hardware
instruction computes on small buffers, ``impl`` says how (the same buffers, a body that calls the
instruction). ``Schedule.tensorize`` matches a block against ``desc`` and swaps in ``impl``.

Intrinsics live in plugins outside the core (the ``intrinsics`` package registers its families on
import). A plugin announces itself under the Python entry-point group ``tensorize.intrinsics``;
``TensorIntrin.get`` loads the declared plugins on a miss, so ``sch.tensorize(loop, "dot_16x4_vnni")``
works without importing them first.

>>> from tensorize.script import tir as T
>>> @T.prim_func
... def desc(a: T.handle, c: T.handle):
...     A = T.match_buffer(a, (4,), "float32", offset_factor=1)
...     C = T.match_buffer(c, (1,), "float32", offset_factor=1)
...     with T.block("root"):
...         T.reads(C[0:1], A[0:4])
...         T.writes(C[0:1])
...         for k in range(4):
...             with T.block("update"):
...                 vk = T.axis.reduce(4, k)
...                 C[0] = C[0] + A[vk]
>>> intrin = TensorIntrin.register("doc_sum4", desc, desc, override=True)
>>> TensorIntrin.get("doc_sum4") is intrin
True

An intrinsic may also be known under other names (older spellings, TVM's names): an alias resolves
to the same intrinsic, while ``list_names`` lists each intrinsic once, by its registered name.

>>> _ = TensorIntrin.register_alias("doc_sum4_old", "doc_sum4", override=True)
>>> TensorIntrin.get("doc_sum4_old") is intrin, "doc_sum4_old" in TensorIntrin.list_names()
(True, False)
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

from .function import PrimFunc

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "tensorize.intrinsics"


@dataclass(frozen=True)
class OperandInfo:
    """One operand of an intrinsic: its name in ``desc``, dtype, shape, storage scope and whether it is written."""

    name: str
    dtype: str
    shape: tuple
    scope: str
    written: bool


@dataclass(frozen=True)
class IterInfo:
    """One iterator of the desc's computation block: name, extent and kind (``"S"`` spatial, ``"R"`` reduce)."""

    name: str
    extent: int
    kind: str


@dataclass(frozen=True)
class IntrinMeta:
    """What the search needs to know about an intrinsic besides its semantics.

    ``target_kind`` (``"llvm"``, ``"cuda"``), ``arch`` (``"x86_64"``, ``"aarch64"``), ``features``
    (the ``-mattr`` features the instruction needs, e.g. ``("avx512vnni",)``), ``operands`` and
    ``iters`` derived from ``desc``, and ``extra`` for anything family specific.
    """

    target_kind: str = "llvm"
    arch: str | None = None
    features: tuple = ()
    operands: tuple = ()
    iters: tuple = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def supported_by(self, target) -> bool:
        """Whether ``target`` (a ``tensorize.target.Target``) can run this intrinsic.

        Parameters
        ----------
        target : Target
            The target.

        Returns
        -------
        bool
            True when it has the needed features.
        """
        if getattr(target.kind, "name", None) != self.target_kind:
            return False
        if self.arch is not None:
            triple = getattr(target, "mtriple", None) or ""
            if triple and not triple.startswith(self.arch):
                return False
        return all(target.has_feature(f) for f in self.features)


class TensorIntrin:
    """A registered tensor intrinsic: ``desc`` and ``impl`` PrimFuncs plus search metadata ``meta``."""

    _registry: dict[str, "TensorIntrin"] = {}
    _aliases: dict[str, str] = {}
    _lock = threading.RLock()
    _plugins_loaded = False

    def __init__(self, desc: PrimFunc, impl: PrimFunc, name: str = "", meta: IntrinMeta | None = None):
        if not isinstance(desc, PrimFunc) or not isinstance(impl, PrimFunc):
            raise TypeError("TensorIntrin takes two PrimFuncs (desc, impl) written with @T.prim_func, got "
                            f"{type(desc).__name__} and {type(impl).__name__}")
        if len(desc.params) != len(impl.params):
            raise ValueError(f"intrinsic {name!r}: desc has {len(desc.params)} parameters but impl has "
                             f"{len(impl.params)}; they must take the same buffers in the same order")
        for i, (p, q) in enumerate(zip(desc.params, impl.params)):
            a, b = desc.buffer_map.get(p), impl.buffer_map.get(q)
            if a is None or b is None:
                raise ValueError(f"intrinsic {name!r}: parameter {i} must be a buffer in both desc and impl")
            if a.dtype != b.dtype or [int(s) for s in a.shape] != [int(s) for s in b.shape]:
                raise ValueError(f"intrinsic {name!r}: buffer {i} is {a.dtype}{[int(s) for s in a.shape]} in desc "
                                 f"but {b.dtype}{[int(s) for s in b.shape]} in impl; they must agree")
        self.desc, self.impl, self.name = desc, impl, name
        self.meta = meta if meta is not None else IntrinMeta()
        if not self.meta.operands or not self.meta.iters:
            operands, iters = describe_desc(desc)
            self.meta = IntrinMeta(self.meta.target_kind, self.meta.arch, tuple(self.meta.features),
                                   self.meta.operands or operands, self.meta.iters or iters, dict(self.meta.extra))

    def __repr__(self) -> str:
        return f"TensorIntrin({self.name!r})"

    @staticmethod
    def register(name: str, desc: PrimFunc, impl: PrimFunc, override: bool = False, *,
                 meta: IntrinMeta | None = None) -> "TensorIntrin":
        """Register ``desc``/``impl`` under ``name``; a second registration of a name (or of an alias)
        raises unless ``override``.

        Parameters
        ----------
        name : str
            The name.
        desc : PrimFunc
            What it computes.
        impl : PrimFunc
            How it computes it.
        override : bool
            Replace an earlier registration.
        meta : IntrinMeta, optional
            Features, family and shape information.

        Returns
        -------
        TensorIntrin
            The intrinsic.
        """
        intrin = TensorIntrin(desc, impl, name, meta)
        with TensorIntrin._lock:
            if name in TensorIntrin._registry and not override:
                raise ValueError(f"a tensor intrinsic named {name!r} is already registered; pass override=True "
                                 "to replace it")
            if name in TensorIntrin._aliases:
                if not override:
                    raise ValueError(f"{name!r} is an alias of {TensorIntrin._aliases[name]!r}; pass override=True "
                                     "to register another intrinsic under that name instead")
                del TensorIntrin._aliases[name]
            TensorIntrin._registry[name] = intrin
        return intrin

    @staticmethod
    def register_alias(alias: str, name: str, override: bool = False) -> str:
        """Make ``alias`` another name of the registered intrinsic ``name``; returns ``name``.

        ``get(alias)`` then returns the very intrinsic ``get(name)`` returns. An alias may not shadow
        a registered name, and re-pointing an existing alias elsewhere needs ``override``.

        Parameters
        ----------
        alias : str
            The other name.
        name : str
            A registered name.
        override : bool
            Replace an earlier alias.

        Returns
        -------
        str
            ``name``.
        """
        with TensorIntrin._lock:
            if name not in TensorIntrin._registry:
                raise ValueError(f"cannot alias {alias!r} to {name!r}: no intrinsic named {name!r} is registered; "
                                 "register it first")
            if alias in TensorIntrin._registry:
                raise ValueError(f"cannot make {alias!r} an alias: an intrinsic is registered under that name")
            old = TensorIntrin._aliases.get(alias)
            if old is not None and old != name and not override:
                raise ValueError(f"{alias!r} is already an alias of {old!r}; pass override=True to re-point it")
            TensorIntrin._aliases[alias] = name
        return name

    @staticmethod
    def aliases() -> dict[str, str]:
        """Every alias and the registered name it stands for (after loading the plugins).

        Returns
        -------
        dict of str to str
            Alias to name.
        """
        load_plugins()
        return dict(TensorIntrin._aliases)

    @staticmethod
    def get(name: str, allow_missing: bool = False) -> "TensorIntrin | None":
        """The intrinsic registered as ``name`` (or aliased to it); on a miss, load the
        ``tensorize.intrinsics`` plugins and retry.

        Parameters
        ----------
        name : str
            A name or alias.
        allow_missing : bool
            Return None instead of raising.

        Returns
        -------
        TensorIntrin or None
            The intrinsic.
        """
        intrin = TensorIntrin._lookup(name)
        if intrin is None:
            load_plugins()
            intrin = TensorIntrin._lookup(name)
        if intrin is None and not allow_missing:
            known = ", ".join(sorted(TensorIntrin._registry)) or "none"
            raise ValueError(f"no tensor intrinsic named {name!r} is registered (registered: {known}); "
                             "`import intrinsics` registers the project's intrinsics, or register your own with "
                             "tvm.tir.TensorIntrin.register(name, desc, impl)")
        return intrin

    @staticmethod
    def _lookup(name: str) -> "TensorIntrin | None":
        intrin = TensorIntrin._registry.get(name)
        if intrin is None and name in TensorIntrin._aliases:
            intrin = TensorIntrin._registry.get(TensorIntrin._aliases[name])
        return intrin

    @staticmethod
    def list_names() -> list[str]:
        """The registered names of all intrinsics, aliases left out (after loading the plugins).

        Returns
        -------
        list of str
            The names, sorted.
        """
        load_plugins()
        return sorted(TensorIntrin._registry)


def load_plugins() -> None:
    """Import every module declared under the ``tensorize.intrinsics`` entry-point group (once)."""
    with TensorIntrin._lock:
        if TensorIntrin._plugins_loaded:
            return
        TensorIntrin._plugins_loaded = True
        from importlib.metadata import entry_points

        declared = list(entry_points(group=ENTRY_POINT_GROUP))
        for ep in declared:
            try:
                ep.load()
            except ModuleNotFoundError as err:
                if err.name != ep.value:
                    raise
                logger.debug("tensor intrinsic plugin %s (%s) is declared but not present", ep.name, ep.value)
            except Exception as err:  # a broken plugin must not hide the others
                logger.warning("could not load tensor intrinsic plugin %s (%s): %s", ep.name, ep.value, err)
        if not declared:
            logger.debug("no tensor intrinsic plugins are declared under %r", ENTRY_POINT_GROUP)


def describe_desc(desc: PrimFunc) -> tuple[tuple, tuple]:
    """Operands and iterators of an intrinsic's ``desc``: the buffers with dtype/shape/scope and whether
    written, and the iterators of the innermost computation block.

    Parameters
    ----------
    desc : PrimFunc
        The intrinsic's description.

    Returns
    -------
    tuple of (tuple, tuple)
        The operands and the iterators.
    """
    from .stmt import Block

    blocks: list[Block] = []

    def visit(node):
        if isinstance(node, Block):
            blocks.append(node)

    from .functor import post_order_visit

    post_order_visit(desc.body, visit)
    written = {id(w.buffer) for b in blocks for w in b.writes}
    operands = tuple(
        OperandInfo(buf.name, buf.dtype, tuple(int(s) for s in buf.shape), buf.scope(), id(buf) in written)
        for buf in (desc.buffer_map[p] for p in desc.params))
    compute = [b for b in blocks if b.iter_vars]
    iters = ()
    if compute:
        inner = compute[0]  # post-order: the innermost block comes first
        iters = tuple(IterInfo(iv.var.name, int(iv.dom.extent), "R" if iv.iter_type == iv.CommReduce else "S")
                      for iv in inner.iter_vars)
    return operands, iters


__all__ = ["TensorIntrin", "IntrinMeta", "OperandInfo", "IterInfo", "load_plugins", "describe_desc",
           "ENTRY_POINT_GROUP"]
