"""The trace of a schedule: every primitive applied, with its inputs, outputs and sampling decisions.

A trace prints as the Python that reproduces the schedule (``as_python``), serialises to JSON
(``as_json`` / ``Trace.from_json``), and replays on a fresh schedule with decisions changed
(``apply_to_schedule``): what the search mutates.

>>> import tensorize as tvm
>>> from tensorize import te
>>> A = te.placeholder((8,), name="A")
>>> B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
>>> sch = tvm.tir.Schedule(te.create_prim_func([A, B]))
>>> i, = sch.get_loops(sch.get_block("B"))
>>> _ = sch.split(i, factors=[2, 4])
>>> sch.trace.as_python()[0]
'b0 = sch.get_block(name="B", func_name=None)'
>>> replay = tvm.tir.Schedule(te.create_prim_func([A, B]))
>>> sch.trace.apply_to_schedule(replay)
>>> tvm.ir.structural_equal(replay.mod, sch.mod)
True
"""
from __future__ import annotations

from ..errors import TVMTypeError

import functools
import json
from typing import Any, Callable

from .rv import RV_TYPES, BlockRV, ExprRV, LoopRV, rv_prefix

# Instruction kinds whose outputs depend on a random decision.
SAMPLING_KINDS = {"sample_perfect_tile", "sample_categorical", "sample_compute_location", "sample_partitioned_tile"}


class _Resample:
    """``decision_provider`` returns ``RESAMPLE`` to have a sampling instruction draw a fresh decision
    from the schedule's random state instead of reusing the recorded one."""

    def __repr__(self) -> str:
        return "RESAMPLE"


RESAMPLE = _Resample()

# The ``*args`` parameter of each primitive that has one (``reorder(*ordered_loops)``), filled by the
# ``primitive`` decorator: the printed trace passes those arguments positionally, as the call takes them.
VAR_POSITIONAL: dict[str, str] = {}

# Argument types that serialise themselves: name -> (type, to_json, from_json).
_CODECS: dict[str, tuple[type, Callable[[Any], Any], Callable[[Any], Any]]] = {}


def register_codec(name: str, cls: type, to_json: Callable[[Any], Any], from_json: Callable[[Any], Any]) -> None:
    """Teach traces to serialise arguments of type ``cls`` (index maps, ...).

    Parameters
    ----------
    name : str
        The tag of the type in JSON.
    cls : type
        The argument type.
    to_json : callable
        Turns a value into JSON-ready data.
    from_json : callable
        Turns that data back into a value.
    """
    _CODECS[name] = (cls, to_json, from_json)


class InstructionKind:
    """The kind of an instruction, by name (``InstructionKind.get("Split")``); ``is_pure``: it only
    reads the schedule (handles, sampling), so a trace may drop it when its outputs go unused."""

    __slots__ = ("name",)
    _PURE = frozenset({"GetBlock", "GetSBlock", "GetLoops", "GetChildBlocks", "GetProducers", "GetConsumers",
                       "SamplePerfectTile", "SampleCategorical", "SampleComputeLocation"})

    def __init__(self, name: str):
        self.name = name

    @staticmethod
    def get(name: str) -> "InstructionKind":
        """The instruction kind named ``name`` (TVM's registry lookup).

        Parameters
        ----------
        name : str
            The kind, e.g. ``"Split"``.

        Returns
        -------
        InstructionKind
            Equal to every other kind of that name.

        Examples
        --------
        >>> InstructionKind.get("GetLoops").is_pure, InstructionKind.get("Split").is_pure
        (True, False)
        """
        return InstructionKind(name)

    @property
    def is_pure(self) -> bool:
        """Whether the instruction only reads the schedule (handles, sampling), so an unused one may be dropped."""
        return self.name in self._PURE

    def __eq__(self, other) -> bool:
        return isinstance(other, InstructionKind) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"InstructionKind({self.name})"


class Instruction:
    """One applied primitive: ``kind`` (the Schedule method name), ``args`` (keyword arguments in
    signature order, RVs included), ``outputs`` (RVs it produced) and, for sampling, ``decision``."""

    __slots__ = ("kind", "args", "outputs", "decision")

    def __init__(self, kind: str, args: dict[str, Any], outputs: list, decision: Any = None):
        self.kind, self.args, self.outputs, self.decision = kind, args, outputs, decision

    def __repr__(self) -> str:
        return f"Instruction({self.kind})"


def _flatten_outputs(result) -> list:
    if result is None:
        return []
    if isinstance(result, RV_TYPES):
        return [result]
    if isinstance(result, (list, tuple)):
        out = []
        for r in result:
            out.extend(_flatten_outputs(r))
        return out
    return []


class Trace:
    """The instructions applied so far, in order."""

    def __init__(self, insts: list[Instruction] | None = None):
        self.insts: list[Instruction] = list(insts or [])

    def append(self, inst: Instruction) -> None:
        """Add an instruction at the end.

        Parameters
        ----------
        inst : Instruction
            The instruction.
        """
        self.insts.append(inst)

    @property
    def decisions(self) -> dict[Instruction, Any]:
        """The decision of every sampling instruction, by instruction."""
        return {inst: inst.decision for inst in self.insts if inst.kind in SAMPLING_KINDS}

    def __len__(self) -> int:
        return len(self.insts)

    def copy(self) -> "Trace":
        """A deep copy: instructions and their argument dicts are new, RVs shared.

        Returns
        -------
        Trace
            The copy.
        """
        return Trace([Instruction(i.kind, dict(i.args), list(i.outputs), i.decision) for i in self.insts])

    def with_decision(self, inst: Instruction, decision: Any, remove_postproc: bool = False) -> "Trace":
        """A copy where ``inst`` (by position) takes ``decision``.

        Parameters
        ----------
        inst : Instruction
            An instruction of this trace.
        decision : any
            Its new decision.
        remove_postproc : bool
            Also drop the post-processing instructions.

        Returns
        -------
        Trace
            The new trace.
        """
        pos = self.insts.index(inst)
        new = self.copy()
        new.insts[pos].decision = decision
        if remove_postproc:
            new = new.without_postproc()
        return new

    def without_postproc(self) -> "Trace":
        """The instructions before ``enter_postproc`` (the schedule rules' part).

        Returns
        -------
        Trace
            The shorter trace.
        """
        insts = []
        for inst in self.insts:
            if inst.kind == "enter_postproc":
                break
            insts.append(inst)
        return Trace(insts)

    # -- naming of RVs --------------------------------------------------------------------
    def _names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        for inst in self.insts:
            for rv in inst.outputs:
                if id(rv) not in names:
                    names[id(rv)] = f"{rv_prefix(rv)}{len(names)}"
        return names

    # -- Python -----------------------------------------------------------------------------
    def as_python(self, remove_postproc: bool = False) -> list[str]:
        """The Python statements that reproduce the schedule, one per instruction.

        Parameters
        ----------
        remove_postproc : bool
            Leave out the post-processing instructions.

        Returns
        -------
        list of str
            The statements, e.g. ``l0, l1 = sch.split(...)``.
        """
        names = self._names()
        lines = []
        for inst in (self.without_postproc() if remove_postproc else self).insts:
            star = VAR_POSITIONAL.get(inst.kind)
            args = ", ".join([_py(v, names) for v in inst.args.get(star, [])] if star in inst.args else []) \
                + ("" if star not in inst.args or len(inst.args) == 1 or not inst.args[star] else ", ")
            args += ", ".join(f"{k}={_py(v, names)}" for k, v in inst.args.items() if k != star)
            if inst.kind in SAMPLING_KINDS:
                args += (", " if args else "") + f"decision={_py(inst.decision, names)}"
            call = f"sch.{inst.kind}({args})"
            outs = [names[id(o)] for o in inst.outputs]
            if not outs:
                lines.append(call)
            elif len(outs) == 1 and not _returns_list(inst):
                lines.append(f"{outs[0]} = {call}")
            else:
                lines.append(f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = {call}")
        return lines

    def __str__(self) -> str:
        return "# from tensorize import tir\ndef apply_trace(sch: tir.Schedule) -> None:\n" + "".join(
            f"  {line}\n" for line in self.as_python()) if self.insts else "def apply_trace(sch):\n  pass\n"

    def show(self) -> None:
        """Print the trace as a Python function ``apply_trace(sch)``."""
        print(str(self))  # noqa: T201 - user-facing display

    # -- JSON -------------------------------------------------------------------------------
    def as_json(self, remove_postproc: bool = False) -> list:
        """``[instructions, decisions]`` as JSON-ready lists, TVM's shape: each instruction is
        ``[kind, args, [], output_names]`` and each decision ``[instruction_index, value]``.

        Parameters
        ----------
        remove_postproc : bool
            Leave out the post-processing instructions.

        Returns
        -------
        list
            ``[instructions, decisions]``.
        """
        names = self._names()
        trace = self.without_postproc() if remove_postproc else self
        insts, decisions = [], []
        for i, inst in enumerate(trace.insts):
            insts.append([inst.kind, {k: _to_json(v, names) for k, v in inst.args.items()}, [],
                          [names[id(o)] for o in inst.outputs]])
            if inst.kind in SAMPLING_KINDS:
                decisions.append([i, _to_json(inst.decision, names)])
        return [insts, decisions]

    def as_json_str(self) -> str:
        """``as_json()`` as JSON text.

        Returns
        -------
        str
            The JSON text.
        """
        return json.dumps(self.as_json())

    @staticmethod
    def from_json(data) -> "Trace":
        """Rebuild a trace from ``as_json()`` output (or its JSON text). Output RVs are fresh
        placeholders; ``apply_to_schedule`` binds them to real handles.

        Parameters
        ----------
        data : list, str or bytes
            ``as_json()`` output or its JSON text.

        Returns
        -------
        Trace
            The trace.

        Raises
        ------
        TraceError
            When ``data`` is not a trace in that form.

        Examples
        --------
        >>> sch = tvm.tir.Schedule(matmul())
        >>> _ = sch.split(sch.get_loops(sch.get_block("C"))[0], [4, 4])
        >>> trace = tvm.tir.schedule.Trace.from_json(sch.trace.as_json_str())
        >>> replay = tvm.tir.Schedule(matmul())
        >>> trace.apply_to_schedule(replay)
        >>> tvm.ir.structural_equal(replay.mod, sch.mod)
        True
        """
        from .error import TraceError

        try:
            if isinstance(data, (str, bytes)):
                data = json.loads(data)
            insts_json, decisions_json = data
            decisions = {int(i): d for i, d in decisions_json}
            rvs: dict[str, Any] = {}
            insts = []
            for i, (kind, args, _attrs, outputs) in enumerate(insts_json):
                if not isinstance(kind, str) or not kind.isidentifier() or kind.startswith("_") \
                        or not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
                    raise TraceError(f"instruction {i} is not [kind, {{argument: value}}, [], [outputs]]")
                outs = []
                for name in outputs:
                    rv = {"b": BlockRV("", ""), "l": LoopRV(None, ""), "v": ExprRV(0)}[name[0]]
                    rvs[name] = rv
                    outs.append(rv)
                decision = _from_json(decisions[i], rvs) if i in decisions else None
                insts.append(Instruction(kind, {k: _from_json(v, rvs) for k, v in args.items()}, outs, decision))
        except TraceError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as err:
            raise TraceError(f"not a trace in Trace.as_json() form ({type(err).__name__}: {err})") from None
        return Trace(insts)

    # -- replay -----------------------------------------------------------------------------
    def apply_to_schedule(self, sch, remove_postproc: bool = False,
                          decision_provider: Callable[[Instruction, Any], Any] | None = None) -> None:
        """Replay the instructions on ``sch`` (a Schedule of the original program).

        ``decision_provider(inst, old_decision)`` may return a new decision for a sampling
        instruction (``None`` keeps the old one, ``RESAMPLE`` draws a fresh one from ``sch``'s random
        state: replaying a sketch this way samples a new program from it).

        Parameters
        ----------
        sch : Schedule
            A schedule of the program the trace was recorded on.
        remove_postproc : bool
            Stop at ``enter_postproc``.
        decision_provider : callable, optional
            ``(inst, old_decision) -> decision``: new decisions for sampling instructions.
        """
        rv_map: dict[int, Any] = {}
        for inst in self.insts:
            if remove_postproc and inst.kind == "enter_postproc":
                break
            args = {k: _map_rvs(v, rv_map) for k, v in inst.args.items()}
            if inst.kind in SAMPLING_KINDS:
                decision = inst.decision
                if decision_provider is not None:
                    new = decision_provider(inst, decision)
                    if new is RESAMPLE:
                        decision = None
                    elif new is not None:
                        decision = new
                args["decision"] = decision
            method = _primitive(sch, inst.kind)
            var_positional = _var_positional_name(type(sch), inst.kind)
            try:
                if var_positional is not None and var_positional in args:
                    # ``*loops`` arguments are recorded as a list under their name; pass them back positionally
                    result = method(*args.pop(var_positional), **args)
                else:
                    result = method(**args)
            except TypeError as err:  # arguments the primitive does not take (a hand-edited or hostile trace)
                from .error import TraceError

                raise TraceError(f"trace instruction {inst.kind} cannot be replayed: {err}") from None
            for old, new in zip(inst.outputs, _flatten_outputs(result)):
                rv_map[id(old)] = new


@functools.lru_cache(maxsize=None)
def _instruction_kinds(cls: type) -> frozenset:
    """The instruction kinds schedules of ``cls`` record: the names of their primitives."""
    kinds = {"enter_postproc"}
    for klass in cls.__mro__:
        for value in vars(klass).values():
            if getattr(value, "is_primitive", False):
                kinds.add(value.__name__)
    return frozenset(kinds)


def _primitive(sch, kind: str):
    """The schedule method of a trace instruction: only primitives (and ``enter_postproc``) replay."""
    if not isinstance(kind, str) or kind.startswith("_") or kind not in _instruction_kinds(type(sch)) \
            or not callable(getattr(sch, kind, None)):
        from .error import TraceError

        raise TraceError(f"{kind!r} is not a schedule primitive; a trace replays primitives only")
    return getattr(sch, kind)


@functools.lru_cache(maxsize=None)
def _var_positional_name(cls: type, kind: str) -> str | None:
    """The name of the ``*args`` parameter of method ``kind`` of schedule class ``cls``, if any."""
    import inspect

    try:
        params = inspect.signature(getattr(cls, kind)).parameters.values()
    except (TypeError, ValueError):
        return None
    return next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)


def _returns_list(inst: Instruction) -> bool:
    return inst.kind in ("get_loops", "get_child_blocks", "get_producers", "get_consumers", "split",
                         "sample_perfect_tile", "sample_partitioned_tile", "get_output_blocks")


def _map_rvs(value, rv_map):
    if isinstance(value, RV_TYPES):
        mapped = rv_map.get(id(value))
        if mapped is None:
            from .error import TraceError

            raise TraceError(f"trace uses {value!r} before any instruction produced it")
        return mapped
    if isinstance(value, list):
        return [_map_rvs(v, rv_map) for v in value]
    if isinstance(value, tuple):
        return tuple(_map_rvs(v, rv_map) for v in value)
    return value


def _py(value, names) -> str:
    if isinstance(value, RV_TYPES):
        return names.get(id(value), repr(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_py(v, names) for v in value)
        return f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(k, names)}: {_py(v, names)}" for k, v in value.items()) + "}"
    for _name, (cls, to_json, _from) in _CODECS.items():
        if isinstance(value, cls):
            return str(value)
    return repr(value)


def _to_json(value, names):
    if isinstance(value, RV_TYPES):
        return {"rv": names[id(value)]}
    if isinstance(value, (list, tuple)):
        return [_to_json(v, names) for v in value]
    if isinstance(value, dict):
        return {"dict": [[_to_json(k, names), _to_json(v, names)] for k, v in value.items()]}
    for name, (cls, to_json, _from) in _CODECS.items():
        if isinstance(value, cls):
            return {"codec": name, "value": to_json(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    from ..ir.expr import FloatImm, IntImm

    if isinstance(value, (IntImm, FloatImm)):
        return {"imm": value.dtype, "value": value.value}
    raise TVMTypeError(f"cannot serialise a trace argument of type {type(value).__name__}; register a codec")


def _from_json(value, rvs):
    if isinstance(value, dict):
        if "rv" in value:
            return rvs[value["rv"]]
        if "dict" in value:
            return {_from_json(k, rvs): _from_json(v, rvs) for k, v in value["dict"]}
        if "codec" in value:
            return _CODECS[value["codec"]][2](value["value"])
        if "imm" in value:
            from ..ir.expr import make_const

            return make_const(value["imm"], value["value"])
    if isinstance(value, list):
        return [_from_json(v, rvs) for v in value]
    return value
