"""The graph layer: models as graphs of operators, fused, split into tasks and compiled.

``tensorize.frontend.from_onnx`` makes a ``Graph``; ``build(graph, target, database=None)``
fuses elementwise epilogues into their producers, extracts the distinct kernels (tasks), compiles
each once (with the database's schedule when it has one, a generic CPU schedule otherwise) and
returns a ``GraphLibrary`` whose ``run(*inputs)`` returns numpy outputs.
"""
from .build import GraphLibrary, build
from .fuse import FusedGroup, fuse
from .ir import Graph, Node
from .ops import OPS
from .tasks import Task, extract_tasks

__all__ = ["Graph", "Node", "OPS", "fuse", "FusedGroup", "extract_tasks", "Task", "build", "GraphLibrary"]
