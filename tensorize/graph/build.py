"""``build(graph, target, database=None)``: a graph compiled into a ``GraphLibrary``.

Each task (distinct fused kernel) is compiled once: with the database's schedule when it has one
for the task and target (``database.query_schedule(mod, target)``, any object with that method),
else with the generic CPU schedule of ``default_schedule``.

>>> import numpy as np
>>> from tensorize.graph.ir import Graph
>>> g = Graph()
>>> x = g.add_input("x", (4, 8))
>>> w = g.add_constant("w", np.eye(8, dtype="float32"))
>>> g.outputs.append(g.add_node("relu", [g.add_node("dense", [x, w])]))
>>> lib = build(g, "llvm")
>>> float(lib.run(np.full((4, 8), -1.0, "float32"))[0].max()), float(lib.run(x=np.ones((4, 8), "float32"))[0].sum())
(0.0, 32.0)
"""
from __future__ import annotations

import logging
import time

from ..driver import build as build_module
from ..errors import TVMError, TVMValueError
from ..schedule import Schedule
from ..target import Target
from .default_schedule import default_schedules
from .executor import GraphExecutor
from .tasks import Task, extract_tasks

logger = logging.getLogger(__name__)

__all__ = ["build", "GraphLibrary", "compile_task", "default_schedule"]


def _lanes(target: Target) -> int:
    """float32 lanes of the target's widest vector register."""
    has = target.has_feature
    return 16 if has("avx512f") else 8 if (has("avx2") or has("avx")) else 4


def default_schedule(mod, target) -> Schedule | None:
    """The first of the task's default schedules (``default_schedules``) for ``target``: what an
    untuned graph runs, and the baseline a tuner measures first.

    Parameters
    ----------
    mod : IRModule or PrimFunc
        A task's program.
    target : str or Target
        The target (its vector width picks the tiles).

    Returns
    -------
    Schedule or None
        The schedule; None when only the unscheduled program remains.

    Examples
    --------
    >>> from tensorize import te
    >>> A = te.placeholder((64, 64), name="A")
    >>> B = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    >>> default_schedule(te.create_prim_func([A, B]), "llvm -mcpu=skylake-avx512") is not None
    True
    """
    target = target if isinstance(target, Target) else Target(target)
    first = next(default_schedules(mod, _lanes(target)))
    return first if first.trace.insts else None


def compile_task(task: Task, target: Target, database=None):
    """Compile one task: the database's schedule if it has one that builds, else the first default that builds.

    Parameters
    ----------
    task : Task
        A distinct fused kernel of the graph (``task.mod`` is its IRModule).
    target : Target
        The target to compile for.
    database : object, optional
        Anything with ``query_schedule(mod, target) -> Schedule | None``.

    Returns
    -------
    tuple
        ``(module, how)``: the runtime module and ``"tuned"``, ``"default"``, ``"simple"`` or
        ``"unscheduled"``, the schedule it was built with.

    Raises
    ------
    TVMError
        When no schedule of the task compiles.
    """
    if database is not None:
        sch = database.query_schedule(task.mod, target)
        if sch is not None:
            try:
                return build_module(sch.mod, target=target), "tuned"
            except TVMError as err:
                logger.warning("task %s: the database's schedule does not build (%s); using the default", task.name, err)
    last = None
    for i, sch in enumerate(default_schedules(task.mod, _lanes(target))):
        try:
            return build_module(sch.mod, target=target), ("default", "simple", "unscheduled")[min(i, 2)]
        except TVMError as err:
            last = err
            logger.debug("task %s: schedule %d does not build: %s", task.name, i, err)
    raise TVMError(f"task {task.name} does not compile: {last}")


class GraphLibrary:
    """A compiled graph: ``run(*inputs)`` or ``run(**named_inputs)`` returns the outputs as numpy arrays.

    Attributes
    ----------
    tasks : list of Task
    how : dict of str to str
        Per task name: ``"tuned"`` (the database's schedule), ``"default"``, ``"simple"`` or ``"unscheduled"``.
    build_seconds : float
    """

    def __init__(self, graph, tasks, modules, how, build_seconds):
        self.graph, self.tasks, self.modules, self.how = graph, tasks, modules, how
        self.build_seconds = build_seconds
        calls = [(modules[t.name]["main"], call.args, call.output) for t in tasks for call in t.calls]
        order = {n.output: i for i, n in enumerate(graph.nodes)}
        calls.sort(key=lambda c: order[c[2]])
        self._executor = GraphExecutor(graph, calls)

    @property
    def input_names(self) -> list:
        """The names of the graph's inputs, in the order ``run`` takes them by position."""
        return list(self.graph.inputs)

    def run(self, *inputs, **named_inputs) -> list:
        """Run the graph on inputs given by position (graph order) or by name.

        Parameters
        ----------
        *inputs : numpy.ndarray
            One array per graph input, in ``input_names`` order.
        **named_inputs : numpy.ndarray
            Or the inputs by name (not both).

        Returns
        -------
        list of numpy.ndarray
            The graph's outputs, in order.

        Raises
        ------
        TVMValueError
            When inputs are missing, unknown, or passed both ways.
        """
        if inputs and named_inputs:
            raise TVMValueError("pass the inputs either by position or by name, not both")
        if inputs:
            if len(inputs) != len(self.graph.inputs):
                raise TVMValueError(f"the graph takes {len(self.graph.inputs)} inputs {self.graph.inputs}, got {len(inputs)}")
            named_inputs = dict(zip(self.graph.inputs, inputs))
        missing = [n for n in self.graph.inputs if n not in named_inputs]
        unknown = [n for n in named_inputs if n not in self.graph.inputs]
        if missing or unknown:
            raise TVMValueError(f"inputs missing: {missing}, unknown: {unknown}; the graph takes {self.graph.inputs}")
        for name, value in named_inputs.items():
            self._executor.set_input(name, value)
        return self._executor.run()

    def __repr__(self) -> str:
        return f"GraphLibrary({len(self.tasks)} tasks, {sum(t.weight for t in self.tasks)} kernel calls)"


def build(graph, target="llvm", database=None, fusion: bool = True) -> GraphLibrary:
    """Compile ``graph`` for ``target``.

    Parameters
    ----------
    graph : Graph
        From ``tensorize.frontend.from_onnx`` or built by hand.
    target : str or Target
    database : object, optional
        Anything with ``query_schedule(mod, target) -> Schedule | None`` (``search.Database`` has it).
    fusion : bool
        Fuse elementwise epilogues into their producers.

    Returns
    -------
    GraphLibrary
    """
    target = target if isinstance(target, Target) else Target(target)
    start = time.perf_counter()
    graph.prune()
    tasks = extract_tasks(graph, fusion=fusion)
    modules, how = {}, {}
    for task in tasks:
        modules[task.name], how[task.name] = compile_task(task, target, database)
    seconds = time.perf_counter() - start
    logger.info("built %d tasks (%d calls) in %.1f s", len(tasks), sum(t.weight for t in tasks), seconds)
    return GraphLibrary(graph, tasks, modules, how, seconds)
