"""Task extraction: each fused group lowered to a PrimFunc; identical ones are one task.

A task is what gets compiled (and tuned) once: its ``mod`` takes the group's inputs then its
output as buffers (``p0, p1, ..., out``); one-element constants are folded into the code as
immediates, so layers that differ only in their weights share a task. ``weight`` counts the
groups that run it. Parameters bound to graph constants in every call (weights) are listed in the
function attribute ``layout_free_buffers``, as ``te`` marks layout-free placeholders: a schedule may
pack them, and the graph does that packing once, at load.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import te
from ..ir.function import IRModule
from ..ir.op import const
from ..ir.structural import structural_equal, structural_hash
from ..transform.split_layout_rewrite import LAYOUT_FREE_BUFFERS
from .fuse import FusedGroup, fuse
from .ir import Graph
from .ops import OPS, lower_node

__all__ = ["Task", "GroupCall", "extract_tasks", "lower_group"]

_SCALAR_USERS = ("elemwise", "gather")


@dataclass
class GroupCall:
    """One run of a task: which values it reads (kernel argument order) and writes."""

    group: FusedGroup
    args: list
    output: str


@dataclass
class Task:
    """A distinct kernel of a graph: its program, a readable name, how many times the graph runs it."""

    name: str
    mod: IRModule
    weight: int = 1
    calls: list = field(default_factory=list)


def _is_scalar(graph: Graph, value: str, group: FusedGroup) -> bool:
    array = graph.constants.get(value)
    if array is None or array.size != 1:
        return False
    users = [n for n in group.nodes if value in n.inputs]
    return all(OPS[n.op].pattern == "elemwise" or n.op == "gather" for n in users)


def lower_group(graph: Graph, group: FusedGroup) -> tuple[IRModule, list]:
    """The PrimFunc of ``group`` and the graph values its buffers bind, in order.

    One-element constants read only by elementwise operators or gathers are folded into the code
    as immediates; every other input becomes a buffer parameter.

    Parameters
    ----------
    graph : Graph
        The graph the group belongs to.
    group : FusedGroup
        A kernel's nodes, from ``fuse``.

    Returns
    -------
    tuple
        ``(mod, values)``: an IRModule with the PrimFunc as ``main``, and the value names bound to its
        buffer parameters (inputs first, the group's output last).
    """
    env, args, placeholders = {}, [], []
    for value in group.inputs:
        if _is_scalar(graph, value, group):
            array = graph.constants[value]
            env[value] = const(array.reshape(()).item(), str(array.dtype))
            continue
        shape, dtype = graph.types[value]
        tensor = te.placeholder(shape, dtype, name=f"p{len(placeholders)}")
        env[value] = tensor
        placeholders.append(tensor)
        args.append(value)
    for node in group.nodes:
        shapes = [graph.types[v][0] for v in node.inputs]
        env[node.output] = lower_node(node.op, [env[v] for v in node.inputs], shapes, node.attrs)
    func = te.create_prim_func(placeholders + [env[group.output]])
    return IRModule({"main": func}), args + [group.output]


def _task_name(group: FusedGroup) -> str:
    ops = [op for op in group.ops if op != "cast"]
    return "_".join(ops[:4]) + ("_etc" if len(ops) > 4 else "")


def extract_tasks(graph: Graph, fusion: bool = True) -> list[Task]:
    """The distinct kernels of ``graph``, each with the calls (groups) that run it, in first-run order.

    Parameters
    ----------
    graph : Graph
    fusion : bool
        Fuse elementwise epilogues (``tensorize.graph.fuse``).

    Returns
    -------
    list of Task
        Structurally equal programs are one task; ``task.weight`` is how often the graph runs it.
    """
    tasks: list[Task] = []
    by_hash: dict[int, list[Task]] = {}
    for group in fuse(graph, enable=fusion):
        mod, args = lower_group(graph, group)
        key = structural_hash(mod)
        task = next((t for t in by_hash.get(key, []) if structural_equal(t.mod, mod)), None)
        if task is None:
            task = Task(f"{_task_name(group)}_{len(tasks)}", mod, 0)
            tasks.append(task)
            by_hash.setdefault(key, []).append(task)
        task.weight += 1
        task.calls.append(GroupCall(group, args[:-1], args[-1]))
    for task in tasks:
        _mark_weights(graph, task)
    return tasks


def _mark_weights(graph: Graph, task: Task) -> None:
    """List the parameters every call of ``task`` binds to a constant in ``layout_free_buffers``."""
    func = task.mod["main"]
    weights = [i for i in range(len(task.calls[0].args))
               if all(call.args[i] in graph.constants for call in task.calls)]
    if weights:
        task.mod = IRModule({"main": func.with_attr(LAYOUT_FREE_BUFFERS, weights)}, attrs=task.mod.attrs)
