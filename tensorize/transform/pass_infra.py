"""Pass infrastructure: ``Pass``, ``module_pass``, ``prim_func_pass``, ``Sequential`` and ``PassContext``.

A pass maps an ``IRModule`` to a new ``IRModule``; the input is never changed. Passes run under
the innermost ``PassContext``: a pass whose ``opt_level`` is above the context's is skipped unless
it is listed in ``required_pass``; a pass named in ``disabled_pass`` is always skipped.

>>> from tensorize.ir.function import IRModule
>>> @prim_func_pass(opt_level=0, name="Identity")
... def identity(f, mod, ctx):
...     return f
>>> identity.info.name, identity(IRModule({})).functions
('Identity', {})
>>> with PassContext(opt_level=3, config={"tir.disable_vectorize": True}) as ctx:
...     PassContext.current().config["tir.disable_vectorize"]
True
"""
from __future__ import annotations

import functools
import inspect
import logging
import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import TVMAttributeError, TVMError, TVMTypeError, TVMValueError
from ..ir.function import IRModule, PrimFunc

logger = logging.getLogger(__name__)

# Config options TVM users set through PassContext(config=...), with the Python types accepted.
_CONFIG_OPTIONS: dict[str, tuple[type, ...]] = {}


def register_config_option(key: str, types: type | tuple[type, ...] = object) -> None:
    """Declare a ``PassContext`` config key (``"tir.disable_vectorize"``) and the value types it takes.

    Parameters
    ----------
    key : str
        The config key.
    types : type or tuple of type
        The accepted value types.
    """
    _CONFIG_OPTIONS[key] = types if isinstance(types, tuple) else (types,)


for _key, _types in {
    "tir.add_lower_pass": (list, tuple),
    "tir.disable_vectorize": (bool, int),
    "tir.disable_assert": (bool, int),
    "tir.disable_cse_tir": (bool, int),
    "tir.enable_equiv_terms_in_cse_tir": (bool, int),
    "tir.noalias": (bool, int),
    "tir.UnrollLoop": (dict, Mapping),
    "tir.instrument_bound_checkers": (bool, int),
    "tir.detect_global_barrier": (bool, int),
    "tir.disable_storage_rewrite": (bool, int),
    "tir.is_entry_func": (bool, int),
    "tir.use_async_copy": (bool, int),
    "tir.merge_static_smem": (bool, int),
    "tir.ptx_ldg32": (bool, int),
    "tir.enable_debug": (bool, int),
    "relay.backend.use_auto_scheduler": (bool, int),
    "relay.backend.use_meta_schedule": (bool, int),
    "relay.FuseOps.max_depth": (int,),
    "tir.LoopPartition": (dict, Mapping),
    "tir.HoistIfThenElse": (dict, Mapping),
    "tir.Simplify": (dict, Mapping),
}.items():
    register_config_option(_key, _types)


class PassInfo:
    """What a pass is called, its optimisation level and the passes it requires."""

    __slots__ = ("opt_level", "name", "required", "traceable")

    def __init__(self, opt_level: int, name: str, required: Sequence[str] | None = None, traceable: bool = False):
        self.opt_level, self.name = int(opt_level), str(name)
        self.required = tuple(required or ())
        self.traceable = traceable

    def __repr__(self) -> str:
        return f"PassInfo(name={self.name!r}, opt_level={self.opt_level}, required={list(self.required)})"


class PassContext:
    """The settings passes run under; a context manager (``with PassContext(opt_level=3): ...``).

    Parameters
    ----------
    opt_level : int
        Passes with a higher ``opt_level`` are skipped (unless required).
    required_pass, disabled_pass : list of str
        Pass names forced on, or off.
    config : dict
        Options such as ``{"tir.add_lower_pass": [(1, my_pass)], "tir.disable_vectorize": True}``.
    """

    _local = threading.local()

    def __init__(self, opt_level: int = 2, required_pass: Iterable[str] | None = None,
                 disabled_pass: Iterable[str] | None = None, instruments: Sequence | None = None,
                 config: Mapping[str, Any] | None = None, trace=None, trace_stack=None, make_traceable=None,
                 num_evals: int = 0, tuning_api_database=None):
        self.opt_level = int(opt_level)
        self.required_pass = frozenset(required_pass or ())
        self.disabled_pass = frozenset(disabled_pass or ())
        self.instruments = list(instruments or ())
        self.config = dict(config or {})
        for key, value in self.config.items():
            types = _CONFIG_OPTIONS.get(key)
            if types is None:
                known = ", ".join(sorted(_CONFIG_OPTIONS))
                raise TVMAttributeError(f"invalid PassContext config option {key!r}; known options: {known} "
                                     "(register new ones with tensorize.transform.register_config_option)")
            if object not in types and not isinstance(value, types):
                raise TVMTypeError(f"PassContext config {key!r} expects {' or '.join(t.__name__ for t in types)}, "
                                f"got {type(value).__name__}")
        self._check_lower_passes(self.config.get("tir.add_lower_pass", ()))

    @staticmethod
    def _check_lower_passes(entries) -> None:
        for entry in entries:
            if not (isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], int)
                    and 0 <= entry[0] <= 3 and callable(entry[1])):
                raise TVMValueError(f"'tir.add_lower_pass' entries must be (phase, pass) with phase 0..3, got {entry!r}")

    @classmethod
    def _stack(cls) -> list["PassContext"]:
        stack = getattr(cls._local, "stack", None)
        if stack is None:
            stack = cls._local.stack = []
        return stack

    @classmethod
    def current(cls) -> "PassContext":
        """The innermost active context (a default one, ``opt_level=2``, outside any ``with``).

        Returns
        -------
        PassContext
            The context.
        """
        stack = cls._stack()
        if stack:
            return stack[-1]
        default = getattr(cls._local, "default", None)
        if default is None:
            default = cls._local.default = PassContext()
        return default

    def __enter__(self) -> "PassContext":
        self._stack().append(self)
        for instrument in self.instruments:
            if hasattr(instrument, "enter_pass_ctx"):
                instrument.enter_pass_ctx()
        return self

    def __exit__(self, *exc) -> None:
        for instrument in self.instruments:
            if hasattr(instrument, "exit_pass_ctx"):
                instrument.exit_pass_ctx()
        stack = self._stack()
        if stack and stack[-1] is self:
            stack.pop()

    def pass_enabled(self, info: PassInfo) -> bool:
        """Whether a pass with ``info`` runs under this context.

        Parameters
        ----------
        info : PassInfo
            The pass's name, level and requirements.

        Returns
        -------
        bool
            Whether it runs.
        """
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return info.opt_level <= self.opt_level

    def override_instruments(self, instruments: Sequence) -> None:
        """Replace the context's pass instruments.

        Parameters
        ----------
        instruments : list
            The new instruments.
        """
        self.instruments = list(instruments)

    def __repr__(self) -> str:
        return f"PassContext(opt_level={self.opt_level}, config={self.config})"


class Pass:
    """Base class of passes: ``new_mod = pass_(mod)``."""

    def __init__(self, info: PassInfo):
        self._info = info

    @property
    def info(self) -> PassInfo:
        """The pass's ``PassInfo`` (name, opt level, required passes)."""
        return self._info

    def __call__(self, mod: IRModule) -> IRModule:
        if isinstance(mod, PrimFunc):
            raise TVMTypeError(f"pass {self.info.name} takes an IRModule; wrap the function: IRModule({{'main': func}})")
        if not isinstance(mod, IRModule):
            raise TVMTypeError(f"pass {self.info.name} takes an IRModule, got {type(mod).__name__}")
        ctx = PassContext.current()
        if not ctx.pass_enabled(self.info):
            logger.debug("skipping pass %s (opt_level %d > %d or disabled)", self.info.name, self.info.opt_level,
                         ctx.opt_level)
            return mod
        for instrument in ctx.instruments:
            if hasattr(instrument, "should_run") and not instrument.should_run(mod, self.info):
                return mod
        for instrument in ctx.instruments:
            if hasattr(instrument, "run_before_pass"):
                instrument.run_before_pass(mod, self.info)
        for name in self.info.required:
            required = _lookup_pass(name)
            if required is not None:
                mod = required(mod)
        result = self._run(mod, ctx)
        if not isinstance(result, IRModule):
            raise TVMError(f"pass {self.info.name} returned {type(result).__name__}; a pass must return an IRModule")
        for instrument in ctx.instruments:
            if hasattr(instrument, "run_after_pass"):
                instrument.run_after_pass(result, self.info)
        return result

    def _run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.info.name})"


_PASS_FACTORIES: dict[str, Callable[[], Pass]] = {}


def register_pass_factory(name: str, factory: Callable[[], Pass]) -> None:
    """Make ``factory`` (a pass constructor such as ``Simplify``) the pass that ``PassInfo.required`` names.

    ``tensorize.transform`` registers its lowering passes here, so this module needs none of them.

    Parameters
    ----------
    name : str
        The pass name.
    factory : callable
        Makes the pass.
    """
    _PASS_FACTORIES[name] = factory


def _lookup_pass(name: str) -> Pass | None:
    factory = _PASS_FACTORIES.get(name)
    return factory() if factory is not None else None


class ModulePass(Pass):
    """A pass over the whole module: ``pass_func(mod, ctx) -> mod``."""

    def __init__(self, pass_func: Callable, info: PassInfo):
        super().__init__(info)
        self.pass_func = pass_func

    def _run(self, mod, ctx):
        return self.pass_func(mod.copy(), ctx)


class PrimFuncPass(Pass):
    """A pass applied to each PrimFunc of the module: ``pass_func(func, mod, ctx) -> func`` (None drops it)."""

    def __init__(self, pass_func: Callable, info: PassInfo):
        super().__init__(info)
        self.pass_func = pass_func

    def _run(self, mod, ctx):
        functions = {}
        for gv, func in mod.functions.items():
            if not isinstance(func, PrimFunc):
                functions[gv] = func
                continue
            new = self.pass_func(func, mod, ctx)
            if new is None:
                continue
            if not isinstance(new, PrimFunc):
                raise TVMError(f"prim_func_pass {self.info.name} returned {type(new).__name__} for {gv.name_hint}; "
                               "return a PrimFunc (f.with_body(...)) or None to drop the function")
            functions[gv] = new
        return IRModule(functions, mod.attrs, mod.global_infos)


FunctionPass = PrimFuncPass


class Sequential(Pass):
    """Run ``passes`` in order (``tvm.transform.Sequential``).

    Parameters
    ----------
    passes : list of Pass
        The passes, in order.
    opt_level, name, required, traceable
        As for ``module_pass``: this pass's own info.
    """

    def __init__(self, passes: Sequence[Pass] | None = None, opt_level: int = 0, name: str = "sequential",
                 required: Sequence[str] | None = None, traceable: bool = False):
        super().__init__(PassInfo(opt_level, name, required, traceable))
        self.passes = list(passes or ())
        for p in self.passes:
            if not callable(p):
                raise TVMTypeError(f"Sequential takes passes, got {type(p).__name__}")

    def _run(self, mod, ctx):
        for p in self.passes:
            mod = p(mod)
        return mod


def _wrap(kind: str, pass_func, opt_level, name, required, traceable):
    method = "transform_module" if kind == "module" else "transform_function"
    pass_type = ModulePass if kind == "module" else PrimFuncPass

    def create(target):
        pass_name = name or target.__name__
        if inspect.isclass(target):
            if not hasattr(target, method):
                raise TVMTypeError(f"a class decorated with {kind}_pass needs a {method} method")

            class PyPass(pass_type):
                def __init__(self, *args, **kwargs):
                    instance = target(*args, **kwargs)
                    super().__init__(getattr(instance, method), PassInfo(opt_level, pass_name, required, traceable))
                    self.instance = instance

                def __getattr__(self, attr):
                    return getattr(self.__dict__["instance"], attr)

            functools.update_wrapper(PyPass.__init__, target.__init__)
            PyPass.__name__ = target.__name__
            PyPass.__doc__ = target.__doc__
            return PyPass
        if not callable(target):
            raise TVMTypeError(f"{kind}_pass decorates a function or a class, got {type(target).__name__}")
        return pass_type(target, PassInfo(opt_level, pass_name, required, traceable))

    if opt_level is None:
        raise TVMValueError(f"{kind}_pass needs opt_level, e.g. @{kind}_pass(opt_level=0)")
    return create(pass_func) if pass_func is not None else create


def module_pass(pass_func=None, opt_level: int | None = None, name: str | None = None,
                required: Sequence[str] | None = None, traceable: bool = False):
    """Make a module pass from ``f(mod, ctx) -> mod`` or a class with ``transform_module``; usable as a decorator.

    Parameters
    ----------
    pass_func : callable or class, optional
        The transformation (None: return a decorator).
    opt_level : int, optional
        The lowest ``PassContext.opt_level`` it runs at.
    name : str, optional
        The name (default: the function's).
    required : list of str, optional
        Passes to run before it.
    traceable : bool
        Accepted for TVM compatibility.

    Returns
    -------
    ModulePass or callable
        The pass, or a decorator making one.

    Examples
    --------
    >>> @tvm.transform.module_pass(opt_level=0)
    ... def identity(mod, ctx):
    ...     return mod
    >>> identity(tvm.IRModule({"main": matmul()})).function_names()
    ['main']
    >>> @module_pass(opt_level=1)
    ... def drop_all(mod, ctx):
    ...     return IRModule({})
    >>> drop_all.info.opt_level
    1
    """
    return _wrap("module", pass_func, opt_level, name, required, traceable)


def prim_func_pass(pass_func=None, opt_level: int = 0, name: str | None = None,
                   required: Sequence[str] | None = None, traceable: bool = False):
    """Make a pass applied to each PrimFunc of a module (``tvm.tir.transform.prim_func_pass``).

    Parameters
    ----------
    pass_func : callable or class, optional
        ``f(func, mod, ctx) -> func`` (returning None drops the function), or a class with
        ``transform_function``; without it, the call returns a decorator.
    opt_level : int
        The pass is skipped under a ``PassContext`` with a lower ``opt_level`` (unless required).
    name : str, optional
        The pass name (default: the function's name).
    required : list of str, optional
        Passes to run first, by name.
    traceable : bool
        Accepted for TVM compatibility.

    Returns
    -------
    PrimFuncPass or callable
        The pass, or a decorator making one.

    Examples
    --------
    >>> from tensorize import te
    >>> A = te.placeholder((4,), name="A")
    >>> B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    >>> @prim_func_pass(opt_level=0)
    ... def tag(func, mod, ctx):
    ...     return func.with_attr("tagged", True)
    >>> tag(IRModule({"main": te.create_prim_func([A, B])}))["main"].attrs["tagged"]
    True
    """
    return _wrap("function", pass_func, opt_level, name, required, traceable)


def func_pass(pass_func, name: str) -> PrimFuncPass:
    """The internal shorthand the lowering passes use: a level-0 PrimFuncPass over ``pass_func(func) -> func``.

    Parameters
    ----------
    pass_func : callable
        ``func -> func``.
    name : str
        The pass name.

    Returns
    -------
    PrimFuncPass
        The pass.
    """
    return PrimFuncPass(lambda f, mod, ctx: pass_func(f), PassInfo(0, name))
