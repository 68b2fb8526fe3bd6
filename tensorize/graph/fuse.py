"""Operator fusion: elementwise epilogues join their producer's kernel.

Each non-view node starts a group unless it is elementwise and one of its inputs is computed by a
group with the same output shape: then it joins that group (conv + bias + relu, matmul + bias +
gelu, a residual add). A group must end in its only value used outside it; a group where an inner
value escapes (used by another group, a view or as a graph output) is cut after that value, so
every group is one kernel with one output. Views (reshape) are no kernels: they alias memory.

>>> import numpy as np
>>> from tensorize.graph.ir import Graph
>>> g = Graph()
>>> x = g.add_input("x", (4, 8))
>>> w = g.add_constant("w", np.ones((8, 8), "float32"))
>>> b = g.add_constant("b", np.ones((8,), "float32"))
>>> y = g.add_node("relu", [g.add_node("add", [g.add_node("dense", [x, w]), b])])
>>> g.outputs.append(y)
>>> [grp.ops for grp in fuse(g)]
[['dense', 'add', 'relu']]
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import Graph, Node
from .ops import OPS

__all__ = ["FusedGroup", "fuse"]


@dataclass
class FusedGroup:
    """Nodes computed by one kernel; ``output`` is the one value it writes, ``inputs`` what it reads."""

    nodes: list = field(default_factory=list)
    inputs: list = field(default_factory=list)

    @property
    def output(self) -> str:
        """The one value the group writes: the output of its last node."""
        return self.nodes[-1].output

    @property
    def ops(self) -> list:
        """The operator names of the group's nodes, in order."""
        return [n.op for n in self.nodes]

    def _refresh_inputs(self) -> None:
        made = {n.output for n in self.nodes}
        self.inputs = list(dict.fromkeys(v for n in self.nodes for v in n.inputs if v not in made))


def fuse(graph: Graph, enable: bool = True) -> list[FusedGroup]:
    """Group the non-view nodes of ``graph`` into kernels, in an order that runs them correctly.

    Parameters
    ----------
    graph : Graph
    enable : bool
        ``False`` puts every node in its own group (for comparisons).

    Returns
    -------
    list of FusedGroup
        Sorted so that a group comes after the groups computing its inputs.
    """
    order = {n.output: i for i, n in enumerate(graph.nodes)}
    consumers = graph.consumers()
    group_of: dict[str, FusedGroup] = {}
    groups: list[FusedGroup] = []
    for node in graph.nodes:
        pattern = OPS[node.op].pattern
        if pattern == "view":
            continue
        target = _host_group(graph, node, group_of, consumers) if enable and pattern == "elemwise" else None
        if target is None:
            target = FusedGroup()
            groups.append(target)
        target.nodes.append(node)
        group_of[node.output] = target
    work, done = list(groups), []
    while work:
        group = work.pop()
        head, tail = _cut(group, consumers, set(graph.outputs))
        if tail is None:
            done.append(head)
        else:  # the head may now have more escaping values (read by the tail): check both again
            work.extend((head, tail))
    for group in done:
        group._refresh_inputs()
    done.sort(key=lambda g: order[g.output])
    return done


def _host_group(graph: Graph, node: Node, group_of: dict, consumers: dict) -> FusedGroup | None:
    """The group ``node`` (elementwise) may join: one computing an input of the same shape as ``node``,
    first one whose output only ``node`` reads (joining it cuts nothing), else the first. A residual add
    reads its block's last convolution and the block's input, in either order: joining the input's group
    (its output also read by the next block) was cut again, leaving the add a kernel of its own."""
    shape = graph.types[node.output][0]
    hosts = [(value, group_of[value]) for value in node.inputs if value in group_of and graph.types[value][0] == shape
             and graph.types[group_of[value].nodes[0].output][0] == shape]
    for value, group in hosts:
        if group.nodes[-1].output == value and len(consumers[value]) == 1:
            return group
    return hosts[0][1] if hosts else None


def _cut(group: FusedGroup, consumers: dict, outputs: set):
    """``(group, None)`` when only its last value escapes; else the part up to the first escaping
    value and the rest as a new group."""
    inside = {id(n) for n in group.nodes}
    for position, node in enumerate(group.nodes[:-1]):
        escapes = node.output in outputs or any(id(c) not in inside for c in consumers[node.output])
        if escapes:
            return FusedGroup(group.nodes[:position + 1]), FusedGroup(group.nodes[position + 1:])
    return group, None
