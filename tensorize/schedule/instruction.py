"""One applied primitive of a trace (``Instruction``) and its kind (``InstructionKind``).

An instruction records the Schedule method it called (``kind``), its keyword arguments in
signature order (``args``, handles included), the handles it produced (``outputs``) and, for
sampling, its ``decision``. TVM spells an instruction as a registered kind with positional
``inputs`` (handles and values) and ``attrs`` (constants); ``Instruction(kind=InstructionKind.get(
"Split"), inputs=[...], attrs=[...], outputs=[...])`` is accepted and turned into that method call.

>>> from tensorize.schedule.rv import BlockRV
>>> b0 = BlockRV()
>>> inst = Instruction(InstructionKind.get("GetSBlock"), inputs=[], attrs=["B", "main"], outputs=[b0])
>>> inst.kind, inst.args
('get_sblock', {'name': 'B', 'func_name': 'main'})
"""
from __future__ import annotations

from typing import Any

from ..errors import TVMValueError

# Instruction kinds whose outputs depend on a random decision.
SAMPLING_KINDS = {"sample_perfect_tile", "sample_categorical", "sample_compute_location", "sample_partitioned_tile"}

# TVM's kind name -> (method, names of its inputs, names of its attrs). An input named "*x" takes the
# remaining inputs as the list argument ``x``.
_LOOP, _BLOCK, _ANY = ("loop",), ("block",), ("block_or_loop",)
TVM_FORMS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "GetSBlock": ("get_sblock", (), ("name", "func_name")),
    "GetBlock": ("get_block", (), ("name", "func_name")),
    "GetLoops": ("get_loops", _BLOCK, ()),
    "GetChildBlocks": ("get_child_blocks", _ANY, ()),
    "GetChildSBlocks": ("get_child_blocks", _ANY, ()),
    "GetProducers": ("get_producers", _BLOCK, ()),
    "GetConsumers": ("get_consumers", _BLOCK, ()),
    "ComputeInline": ("compute_inline", _BLOCK, ()),
    "ReverseComputeInline": ("reverse_compute_inline", _BLOCK, ()),
    "Split": ("split", ("loop", "*factors"), ("preserve_unit_iters", "disable_predication")),
    "Fuse": ("fuse", ("*loops",), ("preserve_unit_iters",)),
    "Reorder": ("reorder", ("*ordered_loops",), ()),
    "Parallel": ("parallel", _LOOP, ()),
    "Vectorize": ("vectorize", _LOOP, ()),
    "Unroll": ("unroll", _LOOP, ()),
    "Bind": ("bind", _LOOP, ("thread_axis",)),
    "ComputeAt": ("compute_at", ("block", "loop"), ("preserve_unit_loops", "index")),
    "ReverseComputeAt": ("reverse_compute_at", ("block", "loop"), ("preserve_unit_loops", "index")),
    "DecomposeReduction": ("decompose_reduction", ("block", "loop"), ()),
    "RFactor": ("rfactor", _LOOP, ("factor_axis",)),
    "Blockize": ("blockize", ("target",), ("preserve_unit_iters",)),
    "Annotate": ("annotate", ("block_or_loop", "ann_val"), ("ann_key",)),
    "Unannotate": ("unannotate", _ANY, ("ann_key",)),
    "SampleCategorical": ("sample_categorical", (), ("candidates", "probs")),
    "SamplePerfectTile": ("sample_perfect_tile", _LOOP, ("n", "max_innermost_factor")),
    "SampleComputeLocation": ("sample_compute_location", _BLOCK, ()),
    "EnterPostproc": ("enter_postproc", (), ()),
}
# Primitives that are aliases of one method: the recorded method name -> TVM's spelling.
METHOD_ALIASES = {"get_sblock": "get_block", "get_child_sblocks": "get_child_blocks"}


class InstructionKind:
    """The kind of an instruction, by name (``InstructionKind.get("Split")``); ``is_pure``: it only
    reads the schedule (handles, sampling), so a trace may drop it when its outputs go unused."""

    __slots__ = ("name",)
    _PURE = frozenset({"GetBlock", "GetSBlock", "GetLoops", "GetChildBlocks", "GetChildSBlocks", "GetProducers",
                       "GetConsumers", "SamplePerfectTile", "SampleCategorical", "SampleComputeLocation"})

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


_PURE_METHODS = frozenset(TVM_FORMS[k][0] for k in InstructionKind._PURE if k in TVM_FORMS)


class Instruction:
    """One applied primitive: ``kind`` (the Schedule method name), ``args`` (keyword arguments in
    signature order, RVs included), ``outputs`` (RVs it produced) and, for sampling, ``decision``.

    Parameters
    ----------
    kind : str or InstructionKind
        The method name, or TVM's instruction kind (then give ``inputs`` and ``attrs``).
    args : dict, optional
        The keyword arguments (with a method name).
    outputs : list
        The handles the instruction produced.
    decision : any
        The decision of a sampling instruction.
    inputs, attrs : list, optional
        TVM's positional form (with an ``InstructionKind``).
    """

    __slots__ = ("kind", "args", "outputs", "decision", "tvm_form")

    def __init__(self, kind, args: dict[str, Any] | None = None, outputs: list | None = None, decision: Any = None,
                 *, inputs: list | None = None, attrs: list | None = None):
        self.tvm_form = None
        if isinstance(kind, InstructionKind):
            self.tvm_form = (kind.name, list(inputs or []), list(attrs or []))
            kind, args = _from_tvm_form(kind.name, list(inputs or []), list(attrs or []))
        self.kind, self.args = kind, dict(args or {})
        self.outputs, self.decision = list(outputs or []), decision

    @property
    def is_pure(self) -> bool:
        """Whether the instruction only reads the schedule (so it may go when its outputs are unused)."""
        return self.kind in _PURE_METHODS or METHOD_ALIASES.get(self.kind) in _PURE_METHODS

    def same_as(self, other) -> bool:
        """Whether ``other`` is this very instruction (TVM's object identity).

        Parameters
        ----------
        other : object
            Another instruction.

        Returns
        -------
        bool
            ``self is other``.
        """
        return self is other

    def copy(self) -> "Instruction":
        """A copy with its own argument dict (handles shared).

        Returns
        -------
        Instruction
            The copy.
        """
        new = Instruction(self.kind, dict(self.args), list(self.outputs), self.decision)
        new.tvm_form = self.tvm_form
        return new

    def __repr__(self) -> str:
        return f"Instruction({self.kind})"


def _from_tvm_form(name: str, inputs: list, attrs: list) -> tuple[str, dict[str, Any]]:
    form = TVM_FORMS.get(name)
    if form is None:
        raise TVMValueError(f"instruction kind {name!r} is not one this trace knows; known kinds: "
                            f"{', '.join(sorted(TVM_FORMS))}")
    method, input_names, attr_names = form
    args: dict[str, Any] = {}
    rest = list(inputs)
    for pname in input_names:
        if pname.startswith("*"):
            args[pname[1:]] = [_plain(v) for v in rest]
            rest = []
        elif rest:
            args[pname] = _plain(rest.pop(0))
    for pname, value in zip(attr_names, attrs):
        args[pname] = _plain(value)
    return method, args


def _plain(value):
    """TVM's constant nodes as the Python values the primitives take (``T.bool(True)`` -> True)."""
    from ..ir.expr import FloatImm, IntImm

    if isinstance(value, IntImm):
        return bool(value.value) if value.dtype == "bool" else value.value
    if isinstance(value, FloatImm):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
