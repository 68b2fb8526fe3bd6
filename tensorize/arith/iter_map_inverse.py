"""Inverting a bijective affine iterator map (``tvm.arith.inverse_affine_iter_map``): the input
iterators as expressions of the map's outputs."""
from __future__ import annotations

from typing import Sequence

from ..ir import expr as E
from .iter_map import IterMapError, IterSumExpr


def inverse_affine_iter_map(iter_map: Sequence[IterSumExpr], outputs: Sequence) -> dict:
    """The input iterators as expressions of the outputs of a bijective ``iter_map``
    (``tvm.arith.inverse_affine_iter_map``): ``[i // 16, i % 16]`` at ``(a, b)`` gives
    ``{i: a * 16 + b}``.

    The value of each output flows back through the splits to their sources; a fused source splits
    its value into its pieces (``floordiv``/``floormod`` by the piece scales).

    Parameters
    ----------
    iter_map : list of IterSumExpr
        The map, from a bijective ``detect_iter_map``.
    outputs : list of PrimExpr
        One value per index of the map.

    Returns
    -------
    dict of Var to PrimExpr
        The value of each input iterator.

    Raises
    ------
    IterMapError
        When an index is a single split of scale other than 1 or -1 (not invertible by this walk).

    Examples
    --------
    >>> from tensorize.ir.expr import Var, Range
    >>> from tensorize.arith.iter_map import detect_iter_map
    >>> i, a, b = Var("i"), Var("a"), Var("b")
    >>> res = detect_iter_map([i // 16, i % 16], {i: Range(0, 64)}, check_level="bijective")
    >>> str(inverse_affine_iter_map(res.indices, [a, b])[i])
    'b + a * 16'
    """
    if len(iter_map) != len(outputs):
        raise ValueError(f"inverse_affine_iter_map: {len(iter_map)} indices but {len(outputs)} outputs")
    order = _reverse_topology(iter_map)
    acc: dict[int, object] = {id(node): None for node in order}
    for index, value in zip(iter_map, outputs):
        acc[id(index)] = E.convert(value)
    inverse: dict = {}
    for node in order:
        value = acc[id(node)]
        if value is None:
            continue
        if isinstance(node, IterSumExpr):
            _back_sum(node, value, acc)
            continue
        value = value if int(node.lower_factor) == 1 else E.mul(value, node.lower_factor)
        source = node.source.source
        target = inverse if isinstance(source, E.Var) else acc
        key = source if isinstance(source, E.Var) else id(source)
        target[key] = value if target.get(key) is None else E.add(target[key], value)
    return inverse


def _accumulate(acc: dict, node, value) -> None:
    acc[id(node)] = value if acc.get(id(node)) is None else E.add(acc[id(node)], value)


def _back_sum(node: IterSumExpr, value, acc: dict) -> None:
    """Send the value of a sum to its splits."""
    if not (isinstance(node.base, E.IntImm) and node.base.value == 0):
        value = E.sub(value, node.base)
    if len(node.args) == 1:
        split = node.args[0]
        scale = int(split.scale)
        if abs(scale) != 1:
            raise IterMapError(f"an index of scale {scale} cannot be inverted")
        _accumulate(acc, split, value if scale == 1 else E.mul(value, scale))
        return
    expected = int(node.args[-1].scale) if node.args else 1
    for split in reversed(node.args):
        if int(split.scale) != expected:
            raise IterMapError("the pieces of a fused iterator do not have consecutive scales")
        expected *= int(split.extent)
    for n, split in enumerate(node.args):
        piece = value if int(split.scale) == 1 else E.floordiv(value, split.scale)
        if n > 0:  # the outermost piece needs no modulo
            piece = E.floormod(piece, split.extent)
        _accumulate(acc, split, piece)


def _reverse_topology(iter_map: Sequence[IterSumExpr]) -> list:
    """The sums and splits of ``iter_map``, each after every node that feeds it a value."""
    order, seen = [], set()

    def visit(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, IterSumExpr):
            for child in node.args:
                visit(child)
        elif isinstance(node.source.source, IterSumExpr):
            visit(node.source.source)
        order.append(node)

    for index in iter_map:
        visit(index)
    order.reverse()
    return order
