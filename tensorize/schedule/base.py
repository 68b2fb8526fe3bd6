"""The machinery every schedule primitive shares: current module, handle resolution, tracing, and
all-or-nothing application.

Primitives are methods decorated with ``@primitive``. The decorator records the call in the trace
(only the outermost call when primitives use each other) and, if the primitive raises, restores
the module, the random state and the trace exactly as they were.

How a primitive is written::

    @primitive
    def fuse(self, *loops, preserve_unit_iters=True) -> LoopRV:
        func_name, index, fors = ...  # resolve handles with self._loop(rv) / self._block(rv)
        ...                         # build new statements (nodes are immutable)
        self._replace(func_name, old_stmt, new_stmt)   # or self._set_body(func_name, body)
        return LoopRV(new_var, func_name)
"""
from __future__ import annotations

from ..errors import TVMTypeError

import functools
import inspect
import random
from typing import Any

from ..ir.expr import IntImm, PrimExpr
from ..ir.function import IRModule, PrimFunc
from ..ir.stmt import BlockRealize, For, Stmt
from .error import ScheduleError, ScheduleTypeError, ScheduleValueError, render
from .rv import BlockRV, ExprRV, LoopRV
from .trace import VAR_POSITIONAL, Instruction, Trace, _flatten_outputs
from .tree import StmtIndex, replace_stmt


# As TVM, a block may be given by its handle or by its name (resolved in ``ScheduleBase._block``).
_HANDLE_TYPES = {"BlockRV": (BlockRV, str), "LoopRV": (LoopRV,), "BlockRV | str": (BlockRV, str)}


def primitive(fn):
    """Make ``fn`` a traced, all-or-nothing schedule primitive (see the module docstring).

    Parameters
    ----------
    fn : callable
        The primitive's implementation, a method of a ScheduleBase subclass.

    Returns
    -------
    callable
        The wrapped method: checks handle types, records an Instruction, restores the schedule on error.
    """
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]
    var_positional = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    if var_positional is not None:
        VAR_POSITIONAL[fn.__name__] = var_positional
    # How a call's arguments are recorded, worked out once here rather than by ``sig.bind`` per call
    # (replaying a trace calls primitives thousands of times).
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # In a primitive without ``*args``, keyword-only parameters (after a bare ``*``) are this project's
    # extensions of TVM's signature: recorded only when given a value other than their default, so traces
    # of TVM-shaped calls print and serialise as TVM's do.
    extensions = [p.name for p in params if p.kind is p.KEYWORD_ONLY] if var_positional is None else []
    recorded_names = [p.name for p in params
                      if p.name != "decision" and p.kind is not p.VAR_KEYWORD and p.name not in extensions]
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    simple = var_positional is None and all(p.kind is not p.VAR_KEYWORD for p in params)
    # Handle parameters (annotated BlockRV / LoopRV) are type-checked before the primitive runs.
    checked = [(p.name, positional.index(p.name) if p.name in positional else None, p.kind is p.VAR_POSITIONAL,
                _HANDLE_TYPES[p.annotation]) for p in params if isinstance(p.annotation, str)
               and p.annotation in _HANDLE_TYPES]

    def check_handles(args, kwargs) -> None:
        for name, position, star, types in checked:
            if star:
                values = args[len(positional):]
            elif position is not None and position < len(args):
                values = (args[position],)
            elif name in kwargs:
                values = (kwargs[name],)
            else:
                continue
            for value in values:
                if not isinstance(value, types):
                    wanted = " or ".join(t.__name__ for t in types)
                    raise ScheduleTypeError(f"{fn.__name__}: {name} must be a {wanted}, got {type(value).__name__} "
                                            f"({value!r})"[:300])

    def record(self, args, kwargs) -> dict:
        if simple and len(args) <= len(positional):
            given = dict(zip(positional, args))
            given.update(kwargs)
            recorded = {name: given[name] if name in given else defaults[name] for name in recorded_names}
        else:
            bound = sig.bind(self, *args, **kwargs)
            bound.apply_defaults()
            recorded = {}
            for name, value in list(bound.arguments.items())[1:]:
                if name == "decision" or name in extensions:
                    continue
                recorded[name] = list(value) if name == var_positional else value
        for name in extensions:
            if name in kwargs and kwargs[name] != defaults.get(name):
                recorded[name] = kwargs[name]
        return recorded

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        if checked:
            check_handles(args, kwargs)
        outermost = self._depth == 0
        if outermost:
            saved = (self._mod, len(self._trace.insts), self._block_names)
            self._block_names = dict(self._block_names)
            self._rng_saved = None  # the random state is saved on first use (most primitives draw nothing)
            self._last_decision = None
        self._depth += 1
        try:
            result = fn(self, *args, **kwargs)
        except BaseException as err:
            if outermost:
                self._mod, n, self._block_names = saved
                if self._rng_saved is not None:
                    self._rng_obj.setstate(self._rng_saved)
                del self._trace.insts[n:]
                if isinstance(err, (TypeError, ValueError)) and not isinstance(err, ScheduleError):
                    # an argument of the wrong type or value: one error family for callers to catch
                    kind = ScheduleTypeError if isinstance(err, TypeError) else ScheduleValueError
                    raise kind(f"{fn.__name__}: {err}") from err
            raise
        finally:
            self._depth -= 1
        if outermost:
            self._trace.append(Instruction(fn.__name__, record(self, args, kwargs), _flatten_outputs(result),
                                           self._last_decision))
        return result

    wrapper.is_primitive = True
    return wrapper


class ScheduleBase:
    """State shared by all primitive groups: the current IRModule, the trace and the random state."""

    def __init__(self, mod, *, seed: int | None = None, debug_mask: str | int = "all",
                 error_render_level: str = "detail", enable_check: bool = True):
        if isinstance(mod, PrimFunc):
            mod = IRModule({"main": mod})  # as TVM: a PrimFunc is scheduled as the module's "main"
        if not isinstance(mod, IRModule):
            raise TVMTypeError(f"Schedule takes an IRModule or a PrimFunc, got {type(mod).__name__}")
        self._mod = mod
        self._trace = Trace()
        self._rng_obj = random.Random(seed if seed is not None and seed != -1 else random.randrange(1 << 31))
        self._rng_saved = None
        self._depth = 0
        self._last_decision = None
        self._indices: dict[int, StmtIndex] = {}
        self._srefs: dict = {}  # id(stmt) -> StmtSRef (sch.get_sref)
        # Block handles renamed by a primitive (decompose_reduction names the update "C_update"): the
        # new name per handle, kept per schedule so copies of a schedule do not see each other's renames.
        self._block_names: dict[int, str] = {}
        self._func_working_on = mod.function_names()[0] if len(mod) == 1 else None
        self.debug_mask = debug_mask
        self.error_render_level = error_render_level
        self.enable_check = enable_check

    # -- public state -----------------------------------------------------------------------
    @property
    def mod(self) -> IRModule:
        """The module as transformed so far."""
        return self._mod

    @property
    def trace(self) -> Trace:
        """The trace of every primitive applied so far."""
        return self._trace

    @property
    def func_working_on(self):
        """The GlobalVar of the function ``get_block`` looks in by default (set by ``work_on``), or None."""
        if self._func_working_on is None:
            return None
        return self._mod.get_global_var(self._func_working_on)

    def work_on(self, func_name: str) -> None:
        """Make ``func_name`` the function that ``get_block`` looks in by default.

        Parameters
        ----------
        func_name : str
            A function of the module.
        """
        if func_name not in self._mod:
            raise ScheduleError(f"no function named {func_name!r}; the module has {self._mod.function_names()}")
        self._func_working_on = func_name

    def copy(self) -> "ScheduleBase":
        """An independent schedule with the same module, trace and random state; handles stay valid in both.

        Returns
        -------
        ScheduleBase
            The copy.

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> other = sch.copy()
        >>> _ = other.split(other.get_loops(other.get_block("C"))[0], [4, 4])
        >>> len(sch.trace), len(other.trace)
        (0, 3)
        """
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._trace = self._trace.copy()
        new._rng_obj = random.Random()
        new._rng_obj.setstate(self._rng_obj.getstate())
        new._indices = dict(self._indices)
        new._srefs = {}  # a copy's srefs are its own, as TVM's
        new._block_names = dict(self._block_names)
        new._removed_rvs = dict(getattr(self, "_removed_rvs", {}))
        return new

    @property
    def _rng(self) -> random.Random:
        """The random state for sampling; inside a primitive, its state is saved on first use so
        that a failing primitive can restore it."""
        if self._depth and self._rng_saved is None:
            self._rng_saved = self._rng_obj.getstate()
        return self._rng_obj

    def seed(self, seed: int) -> None:
        """Reseed the schedule's random state (the sampling primitives draw from it).

        Parameters
        ----------
        seed : int
            The new seed.
        """
        self._rng.seed(seed)

    def fork_seed(self) -> int:
        """A new seed drawn from this schedule's random state (to seed another schedule).

        Returns
        -------
        int
            A seed in ``[0, 2**31)``.
        """
        return self._rng.randrange(1 << 31)

    def get(self, rv):
        """The value behind a handle: the Block of a BlockRV, the For of a LoopRV, the int of an ExprRV.

        Parameters
        ----------
        rv : BlockRV, LoopRV, ExprRV or str
            The handle (a block may be named by a string).

        Returns
        -------
        Block, For or int
            The value behind it.

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> sch.get(sch.get_loops(sch.get_block("C"))[2]).extent
        16
        """
        if id(rv) in getattr(self, "_removed_rvs", ()):
            raise IndexError(f"{rv!r} was removed from this schedule by remove_rv")
        if isinstance(rv, (BlockRV, str)):
            return self._block(rv)[2].block
        if isinstance(rv, LoopRV):
            return self._loop(rv)[2]
        if isinstance(rv, ExprRV):
            return rv.value
        raise TVMTypeError(f"Schedule.get takes a BlockRV, LoopRV or ExprRV, got {type(rv).__name__}")

    @property
    def state(self):
        """The schedule's state (``ScheduleState``: its module and the srefs of its statements)."""
        from .sref import ScheduleState

        return ScheduleState(self)

    def get_sref(self, rv_or_stmt):
        """The ``StmtSRef`` of a block/loop handle or of a Block/For statement.

        Parameters
        ----------
        rv_or_stmt : BlockRV, LoopRV, str, Block or For
            A handle (or a block's name), or a statement of the current module.

        Returns
        -------
        StmtSRef
            The same object on every call for the same statement.
        """
        from .sref import get_sref

        if isinstance(rv_or_stmt, (BlockRV, LoopRV, str)):
            return get_sref(self, rv_or_stmt)
        return self.state.get_sref(rv_or_stmt)

    def remove_rv(self, rv) -> None:
        """Forget a handle: ``get`` of it raises ``IndexError`` afterwards, as in TVM.

        Parameters
        ----------
        rv : BlockRV, LoopRV or ExprRV
            The handle.
        """
        removed = self.__dict__.setdefault("_removed_rvs", {})
        removed[id(rv)] = rv  # the handle is kept alive so its id is not reused

    def show(self, *args, **kwargs) -> None:
        """Print the module and the trace.

        Parameters
        ----------
        *args
            Ignored (TVM's printing options).
        **kwargs
            Ignored.
        """
        self._mod.show()
        self._trace.show()

    def __repr__(self) -> str:
        return f"<tensorize Schedule with {len(self._trace)} instructions>"

    # -- helpers for primitive implementations ----------------------------------------------
    def _func_name(self, func_name: str | None) -> str:
        name = func_name or self._func_working_on
        if name is None:
            raise ScheduleValueError("the schedule does not know which function to be working on: the module has "
                                     "several functions; pass func_name=... or call sch.work_on(name) first")
        if name not in self._mod:
            raise ScheduleError(f"no function named {name!r}; the module has {self._mod.function_names()}")
        return name

    def _func(self, func_name: str) -> PrimFunc:
        return self._mod[func_name]

    def _index(self, func_name: str) -> StmtIndex:
        body = self._mod[func_name].body
        index = self._indices.get(id(body))
        if index is None or index.root is not body:
            index = StmtIndex(body)
            self._indices = {id(body): index} if len(self._indices) > 8 else {**self._indices, id(body): index}
        return index

    def _block(self, rv: BlockRV) -> tuple[str, StmtIndex, BlockRealize]:
        """Resolve a block handle or a block name to (function name, index, its BlockRealize)."""
        if isinstance(rv, str):
            rv = BlockRV(rv, self._func_name(None))
        if not isinstance(rv, BlockRV):
            raise TVMTypeError(f"expected a BlockRV, got {type(rv).__name__}")
        index = self._index(rv.func_name)
        name = self._block_name(rv)
        realize = index.block(name)
        if realize is None:
            raise ScheduleError(f"block {name!r} no longer exists in function {rv.func_name!r}: a primitive "
                                "removed it (e.g. compute_inline or blockize); get a new handle with get_block")
        return rv.func_name, index, realize

    def _block_name(self, rv: BlockRV) -> str:
        """The current name of the block behind ``rv`` (handles follow renames made by primitives)."""
        return self._block_names.get(id(rv), rv.name)

    def _rename_block_rv(self, rv: BlockRV, new_name: str) -> None:
        """Make ``rv`` follow its block, which a primitive renamed to ``new_name``."""
        self._block_names[id(rv)] = new_name

    def _loop(self, rv: LoopRV) -> tuple[str, StmtIndex, For]:
        """Resolve a loop handle to (function name, index, its For)."""
        if not isinstance(rv, LoopRV):
            raise TVMTypeError(f"expected a LoopRV, got {type(rv).__name__}")
        index = self._index(rv.func_name)
        loop = index.loop(rv.var)
        if loop is None:
            raise ScheduleError(f"loop {rv.var.name if rv.var is not None else '?'!s} no longer exists: a primitive "
                                "replaced or removed it (e.g. split, fuse or compute_at); use the loops it returned")
        return rv.func_name, index, loop

    def _set_body(self, func_name: str, body: Stmt) -> None:
        func = self._mod[func_name]
        functions = dict(self._mod.functions)
        functions[self._mod.get_global_var(func_name)] = func.with_body(body)
        self._mod = IRModule(functions, self._mod.attrs, self._mod.global_infos)

    def _replace(self, func_name: str, old: Stmt, new: Stmt | None) -> None:
        """Replace statement ``old`` (found in the function's current body) by ``new``."""
        self._set_body(func_name, replace_stmt(self._index(func_name), old, new))

    def _error(self, message: str, node=None) -> ScheduleError:
        """A ScheduleError with the IR around ``node`` rendered (per ``error_render_level``)."""
        if node is None or self.error_render_level == "none":
            return ScheduleError(message)
        return ScheduleError(message, render(node))

    @staticmethod
    def _int(value, what: str = "value") -> int:
        """An integer from an int, IntImm or ExprRV."""
        if isinstance(value, ExprRV):
            return value.value
        if isinstance(value, IntImm):
            return value.value
        if isinstance(value, int):
            return value
        if isinstance(value, PrimExpr):
            raise ScheduleError(f"{what} must be a constant integer, got the expression {value}")
        raise TVMTypeError(f"{what} must be an integer, got {type(value).__name__}")

    def _record_decision(self, decision: Any) -> None:
        """Sampling primitives call this with the decision they took."""
        self._last_decision = decision
