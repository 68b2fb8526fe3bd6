"""``build(graph, target, database=None)``: a graph compiled into a ``GraphLibrary``.

Each task (distinct fused kernel) is compiled once: with the database's schedule when it has one
for the task and target (``database.query_schedule(mod, target)``, any object with that method),
else with the generic CPU schedule of ``default_schedule``. Weight packing a schedule marks
(``layout_rewrite_preproc``) is split out of the kernel (``split_layout_rewrite``) and run once per
constant weight when the library is made; the kernels then take the packed weights.

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

import numpy as np

from ..driver import build as build_module
from ..errors import TVMError, TVMValueError
from ..runtime.ndarray import aligned_empty, array as nd_array
from ..schedule import Schedule
from ..target import Target
from ..transform.split_layout_rewrite import split_layout_rewrite
from .default_schedule import default_schedules, schedule_variants
from .executor import GraphExecutor
from .tasks import Task, extract_tasks
from .winograd import use_winograd

logger = logging.getLogger(__name__)

__all__ = ["build", "GraphLibrary", "compile_task", "default_schedule", "default_schedule_variants", "graph_tasks"]


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


def default_schedule_variants(mod, target) -> list:
    """The default schedule and its streaming variant where it differs (``schedule_variants``) for a CPU
    ``target`` (none for another: the default schedules are CPU schedules): what a tuner measures first
    (``search.tune_graph``, the operator experiments) and evolves from, their register rows a decision
    (``sample_rows=True``: the same programs as ``build``'s, with a ``sample_categorical`` in the trace).

    Parameters
    ----------
    mod : IRModule or PrimFunc
        A task's program.
    target : str or Target
        The target (its vector width picks the tiles).

    Returns
    -------
    list of Schedule

    Examples
    --------
    >>> from tensorize import te
    >>> A = te.placeholder((1, 18, 18, 3), name="A")
    >>> W = te.placeholder((3, 3, 3, 16), name="W")
    >>> ry, rx, rc = te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx"), te.reduce_axis((0, 3), "rc")
    >>> C = te.compute((1, 16, 16, 16), lambda n, y, x, k: te.sum(A[n, y + ry, x + rx, rc] * W[ry, rx, rc, k],
    ...                axis=[ry, rx, rc]), name="C")
    >>> len(default_schedule_variants(te.create_prim_func([A, W, C]), "llvm -mcpu=skylake-avx512"))
    1
    """
    target = target if isinstance(target, Target) else Target(target)
    return schedule_variants(mod, _lanes(target), sample_rows=True) if target.kind.name == "llvm" else []


def graph_tasks(graph, target, fusion: bool = True, winograd: bool | None = None) -> list[Task]:
    """The tasks ``build`` compiles (and ``search.tune_graph`` tunes) for ``graph`` on ``target``.

    ``graph`` is pruned and, with ``winograd`` (by default on a CPU target), its eligible 3x3
    convolutions are rewritten into Winograd stages (``tensorize.graph.winograd``), in place.

    Parameters
    ----------
    graph : Graph
    target : str or Target
    fusion : bool
        Fuse elementwise epilogues into their producers.
    winograd : bool, optional
        Rewrite eligible convolutions; None: on for CPU targets.

    Returns
    -------
    list of Task

    Examples
    --------
    >>> import numpy as np
    >>> from tensorize.graph.ir import Graph
    >>> g = Graph()
    >>> x = g.add_input("x", (1, 56, 56, 64))
    >>> g.outputs.append(g.add_node("conv2d", [x, g.add_constant("w", np.ones((3, 3, 64, 64), "float32"))],
    ...                             {"pads": (1, 1, 1, 1)}))
    >>> [t.name.rsplit("_", 1)[0] for t in graph_tasks(g, "llvm")]
    ['winograd_input_rows', 'winograd_input', 'winograd_gemm', 'winograd_output_rows', 'winograd_output']
    """
    target = target if isinstance(target, Target) else Target(target)
    graph.prune()
    if winograd or (winograd is None and target.kind.name == "llvm"):
        use_winograd(graph)
    return extract_tasks(graph, fusion=fusion)


def _build_split(mod, target: Target):
    """The module built with its weight packing split out, and the ``LayoutRewrite``s (possibly none)."""
    mod, rewrites = split_layout_rewrite(mod)
    return build_module(mod, target=target), rewrites


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
        ``(module, how, rewrites)``: the runtime module; ``"tuned"``, ``"default"``, ``"simple"`` or
        ``"unscheduled"``, the schedule it was built with; the weights it takes packed (``LayoutRewrite``:
        the module's function ``rewrite.function(weight, packed)`` packs one).

    Raises
    ------
    TVMError
        When no schedule of the task compiles.
    """
    if database is not None:
        sch = database.query_schedule(task.mod, target)
        if sch is not None:
            try:
                module, rewrites = _build_split(sch.mod, target)
                return module, "tuned", rewrites
            except TVMError as err:
                logger.warning("task %s: the database's schedule does not build (%s); using the default", task.name, err)
    last = None
    for i, sch in enumerate(default_schedules(task.mod, _lanes(target))):
        try:
            module, rewrites = _build_split(sch.mod, target)
            return module, ("default", "simple", "unscheduled")[min(i, 2)], rewrites
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

    def __init__(self, graph, tasks, modules, how, build_seconds, rewrites=None):
        self.graph, self.tasks, self.modules, self.how = graph, tasks, modules, how
        self.build_seconds = build_seconds
        packed: dict[str, object] = {}  # packed weights, made once here, by name
        calls = []
        for t in tasks:
            for call in t.calls:
                args = list(call.args)
                for rewrite in (rewrites or {}).get(t.name, ()):
                    weight = args[rewrite.param_index]
                    name = f"{weight}@{rewrite.function}@{t.name}"
                    if name not in packed:
                        packed[name] = aligned_empty(rewrite.shape, np.dtype(rewrite.dtype), 64)
                        # (the constant through an aligned, writable copy: the call binds it without copies)
                        modules[t.name][rewrite.function](nd_array(graph.constants[weight]), packed[name])
                    args[rewrite.param_index] = name
                calls.append((modules[t.name]["main"], args, call.output))
        order = {n.output: i for i, n in enumerate(graph.nodes)}
        calls.sort(key=lambda c: order[c[2]])
        self._executor = GraphExecutor(graph, calls, packed)

    @property
    def packed_weights(self) -> int:
        """How many weights the library packed at load (for its kernels' layouts)."""
        return self._executor.num_packed

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


def build(graph, target="llvm", database=None, fusion: bool = True, winograd: bool | None = None) -> GraphLibrary:
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
    winograd : bool, optional
        Compute eligible 3x3 convolutions by Winograd (``graph_tasks``); None: on for CPU targets.

    Returns
    -------
    GraphLibrary
    """
    target = target if isinstance(target, Target) else Target(target)
    start = time.perf_counter()
    tasks = graph_tasks(graph, target, fusion=fusion, winograd=winograd)
    modules, how, rewrites = {}, {}, {}
    for task in tasks:
        modules[task.name], how[task.name], rewrites[task.name] = compile_task(task, target, database)
    lib = GraphLibrary(graph, tasks, modules, how, time.perf_counter() - start, rewrites)
    lib.build_seconds = time.perf_counter() - start
    logger.info("built %d tasks (%d calls, %d weights packed) in %.1f s", len(tasks), sum(t.weight for t in tasks),
                lib.packed_weights, lib.build_seconds)
    return lib
