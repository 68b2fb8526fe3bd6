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

import functools
import json
from typing import Any, Callable

from .instruction import METHOD_ALIASES, SAMPLING_KINDS, Instruction, InstructionKind
from .rv import RV_TYPES, BlockRV, ExprRV, LoopRV, rv_prefix
from .trace_args import (  # noqa: F401  (register_codec: the public way to teach traces a type)
    _flatten_outputs, _from_json, _map_rvs, _py, _to_json, register_codec,
)


class _Resample:
    """``decision_provider`` returns ``RESAMPLE`` to have a sampling instruction draw a fresh decision
    from the schedule's random state instead of reusing the recorded one."""

    def __repr__(self) -> str:
        return "RESAMPLE"


RESAMPLE = _Resample()

# The ``*args`` parameter of each primitive that has one (``reorder(*ordered_loops)``), filled by the
# ``primitive`` decorator: the printed trace passes those arguments positionally, as the call takes them.
VAR_POSITIONAL: dict[str, str] = {}


class Trace:
    """The instructions applied so far, in order, with the decisions of the sampling ones.

    Parameters
    ----------
    insts : list of Instruction, optional
        The instructions.
    decisions : dict of Instruction to any, optional
        Decisions of sampling instructions (TVM's ``Trace(insts, decisions)``).
    """

    def __init__(self, insts: list[Instruction] | None = None, decisions: dict | None = None):
        self.insts: list[Instruction] = list(insts or [])
        for inst, decision in (decisions or {}).items():
            inst.decision = decision

    def append(self, inst: Instruction, decision: Any = None) -> None:
        """Add an instruction at the end.

        Parameters
        ----------
        inst : Instruction
            The instruction.
        decision : any, optional
            Its decision (sampling instructions).
        """
        if decision is not None:
            inst.decision = decision
        self.insts.append(inst)

    def pop(self) -> Instruction | None:
        """Remove and return the last instruction (None when the trace is empty).

        Returns
        -------
        Instruction or None
            The removed instruction.
        """
        return self.insts.pop() if self.insts else None

    def get_decision(self, inst: Instruction) -> Any:
        """The decision of ``inst`` (None for an instruction that samples nothing).

        Parameters
        ----------
        inst : Instruction
            An instruction of this trace.

        Returns
        -------
        any
            Its decision.
        """
        return inst.decision

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
        return Trace([i.copy() for i in self.insts])

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
        pos = next(i for i, x in enumerate(self.insts) if x is inst)
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

    def simplified(self, remove_postproc: bool) -> "Trace":
        """A copy without the pure instructions (handle lookups, sampling) whose outputs nothing uses,
        and without post-processing when ``remove_postproc``.

        Parameters
        ----------
        remove_postproc : bool
            Drop ``enter_postproc`` and what follows it.

        Returns
        -------
        Trace
            The simplified trace.
        """
        insts = (self.without_postproc() if remove_postproc else self).insts
        used: set[int] = set()
        kept: list[Instruction] = []
        for inst in reversed(insts):
            if inst.is_pure and inst.kind != "enter_postproc" and not any(id(o) in used for o in inst.outputs):
                continue
            kept.append(inst)
            _collect_rvs(list(inst.args.values()), used)
        return Trace([i.copy() for i in reversed(kept)])

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
        lines = self.as_python() or ["pass"]
        return "\n".join(["# from tvm import s_tir", "def apply_trace(sch: s_tir.Schedule) -> None:"]
                         + [f"  {line}" for line in lines])

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
            outputs = [names[id(o)] for o in inst.outputs]
            if inst.tvm_form is not None:  # built TVM's way: TVM's [kind, inputs, attrs, outputs]
                kind, inputs, attrs = inst.tvm_form
                insts.append([kind, [_tvm_input_json(v, names) for v in inputs], list(attrs), outputs])
            else:
                insts.append([inst.kind, {k: _to_json(v, names) for k, v in inst.args.items()}, [], outputs])
            if inst.kind in SAMPLING_KINDS and inst.decision is not None:
                decisions.append([i, _to_json(inst.decision, names)])
        return [insts, decisions]

    def as_json_str(self) -> str:
        """``as_json()`` as JSON text.

        Returns
        -------
        str
            The JSON text.
        """
        return json.dumps(self.as_json(), default=lambda v: getattr(v, "value", str(v)))

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
            for i, (kind, args, attrs, outputs) in enumerate(insts_json):
                if isinstance(args, list):  # TVM's form: [kind, inputs, attrs, outputs]
                    outs = [_placeholder(name, rvs) for name in outputs]
                    inputs = [_tvm_input_from_json(v, rvs) for v in args]
                    inst = Instruction(InstructionKind.get(kind), inputs=inputs, attrs=attrs, outputs=outs)
                    inst.decision = _from_json(decisions[i], rvs) if i in decisions else None
                    insts.append(inst)
                    continue
                if not isinstance(kind, str) or not kind.isidentifier() or kind.startswith("_") \
                        or not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
                    raise TraceError(f"instruction {i} is not [kind, {{argument: value}}, [], [outputs]]")
                outs = [_placeholder(name, rvs) for name in outputs]
                decision = _from_json(decisions[i], rvs) if i in decisions else None
                insts.append(Instruction(kind, {k: _from_json(v, rvs) for k, v in args.items()}, outs, decision))
        except TraceError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as err:
            raise TraceError(f"not a trace in Trace.as_json() form ({type(err).__name__}: {err})") from None
        return Trace(insts)

    @staticmethod
    def apply_json_to_schedule(json_obj, sch) -> None:
        """Replay a trace given as ``as_json()`` output (or its JSON text) on ``sch``.

        Parameters
        ----------
        json_obj : list or str
            The trace in JSON form.
        sch : Schedule
            A schedule of the program the trace was recorded on.
        """
        Trace.from_json(json_obj).apply_to_schedule(sch)

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
    kind = METHOD_ALIASES.get(kind, kind)
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


def _collect_rvs(values, out: set[int]) -> None:
    for v in values:
        if isinstance(v, RV_TYPES):
            out.add(id(v))
        elif isinstance(v, (list, tuple)):
            _collect_rvs(v, out)
        elif isinstance(v, dict):
            _collect_rvs(list(v.values()), out)


def _placeholder(name: str, rvs: dict):
    """A fresh handle for output ``name`` of a trace read from JSON (bound when the trace replays)."""
    rv = {"b": BlockRV, "l": LoopRV, "v": lambda: ExprRV(0)}[name[0]]()
    rvs[name] = rv
    return rv


def _tvm_input_json(value, names):
    """An input of a TVM-form instruction as TVM writes it: handles by name, strings quoted."""
    if isinstance(value, RV_TYPES):
        return names[id(value)]
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return [_tvm_input_json(v, names) for v in value]
    return getattr(value, "value", value)


def _tvm_input_from_json(value, rvs):
    if isinstance(value, str):
        return rvs[value] if value in rvs else json.loads(value)
    if isinstance(value, list):
        return [_tvm_input_from_json(v, rvs) for v in value]
    return value
