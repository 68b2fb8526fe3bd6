"""``split_layout_rewrite``: move the marked weight packing out of a scheduled function.

A candidate that packs a weight (a copy block annotated ``layout_rewrite_preproc = 1`` at the root,
made by ``rewrite_layout`` or by a tensorization candidate's layout rewrite) does that work on every
call. Split, the kernel takes the packed weight as its parameter in place of the original one, and a
packing function ``<name>__layout_rewrite_<param index>(weight, packed)`` fills it: the runner calls
it once before timing (the timed region holds only the kernel), a caller once per constant weight
(MetaSchedule's ``RemoveWeightLayoutRewriteBlock`` with the weight pre-packed).

>>> mod, rewrites = split_layout_rewrite(sch.mod)                          # doctest: +SKIP
>>> lib = tensorize.build(mod, target)                                     # doctest: +SKIP
>>> packed = np.empty(rewrites[0].shape, rewrites[0].dtype)                # doctest: +SKIP
>>> lib[rewrites[0].function](b, packed)           # once per weight      # doctest: +SKIP
>>> lib["main"](a, packed, c)                      # every call           # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import expr as E
from ..ir.function import IRModule, PrimFunc
from ..ir.stmt import BlockRealize, SeqStmt
from ..schedule.analysis import block_realizes_under, nest_blocks

__all__ = ["LAYOUT_FREE_BUFFERS", "LAYOUT_REWRITE_PREPROC", "LayoutRewrite", "split_layout_rewrite",
           "packing_function_name", "parse_packing_function_name", "packed_blocks"]

# The block annotation that marks a copy of a weight as packing work to do once, not per call (TVM's key).
LAYOUT_REWRITE_PREPROC = "layout_rewrite_preproc"
# The function attribute listing the layout-free parameters (indices: weights), as ``te`` writes it.
LAYOUT_FREE_BUFFERS = "layout_free_buffers"


@dataclass(frozen=True)
class LayoutRewrite:
    """One weight packed outside the kernel.

    Attributes
    ----------
    param_index : int
        The kernel parameter that takes the packed weight (the original weight's position).
    function : str
        The packing function's name; it takes ``(weight, packed)``.
    shape : tuple of int
        The packed weight's shape.
    dtype : str
        Its dtype.
    """

    param_index: int
    function: str
    shape: tuple
    dtype: str


def packing_function_name(func_name: str, param_index: int) -> str:
    """The name of the function that packs parameter ``param_index`` of ``func_name``.

    Parameters
    ----------
    func_name : str
        The kernel's name.
    param_index : int
        The packed parameter's position.

    Returns
    -------
    str
        ``<func_name>__layout_rewrite_<param_index>``.

    Examples
    --------
    >>> packing_function_name("main", 1)
    'main__layout_rewrite_1'
    """
    return f"{func_name}__layout_rewrite_{param_index}"


def parse_packing_function_name(name: str, func_name: str) -> int | None:
    """The parameter index a packing function of ``func_name`` packs, or None for another function.

    Parameters
    ----------
    name : str
        A function name of the module.
    func_name : str
        The kernel's name.

    Returns
    -------
    int or None
        The packed parameter's position.

    Examples
    --------
    >>> parse_packing_function_name("main__layout_rewrite_1", "main"), parse_packing_function_name("main", "main")
    (1, None)
    """
    prefix = f"{func_name}__layout_rewrite_"
    return int(name[len(prefix):]) if name.startswith(prefix) and name[len(prefix):].isdigit() else None


def split_layout_rewrite(mod, func_name: str = "main") -> tuple[IRModule, list[LayoutRewrite]]:
    """The module with ``func_name``'s root-level weight-packing stages moved into packing functions.

    A stage is moved when it is a loop nest right under the root block holding one block annotated
    ``layout_rewrite_preproc``, which reads only a parameter that nothing else in the function reads
    or writes and writes a buffer the root allocates and nothing else writes. Other stages stay.

    Parameters
    ----------
    mod : IRModule or PrimFunc
        A scheduled program.
    func_name : str
        The function to split.

    Returns
    -------
    tuple of (IRModule, list of LayoutRewrite)
        The module (the kernel under ``func_name`` plus one packing function per weight; ``mod``
        itself when nothing is moved) and what was moved.
    """
    if isinstance(mod, PrimFunc):
        mod = IRModule({func_name: mod})
    func = mod[func_name]
    root = func.body
    if not isinstance(root, BlockRealize):
        return mod, []
    stmts = list(root.block.body.seq) if isinstance(root.block.body, SeqStmt) else [root.block.body]
    param_of = {id(func.buffer_map[p]): i for i, p in enumerate(func.params) if p in func.buffer_map}
    allocated = {id(b) for b in root.block.alloc_buffers}
    moved: dict[int, tuple] = {}  # position of the stage -> (param index, weight, packed)
    for pos, stmt in enumerate(stmts):
        blocks = nest_blocks(stmt)
        if len(blocks) != 1 or LAYOUT_REWRITE_PREPROC not in blocks[0].block.annotations:
            continue
        block = blocks[0].block
        if len(block.reads) != 1 or len(block.writes) != 1:
            continue
        weight, packed = block.reads[0].buffer, block.writes[0].buffer
        if id(weight) not in param_of or id(packed) not in allocated:
            continue
        others = [b for i, s in enumerate(stmts) if i != pos for b in nest_blocks(s)]
        if any(r.buffer is weight for b in others for r in b.block.reads) or \
                any(w.buffer in (weight, packed) for b in others for w in b.block.writes):
            continue
        moved[pos] = (param_of[id(weight)], weight, packed)
    if not moved or len({v[0] for v in moved.values()}) != len(moved):
        return mod, []
    params, buffer_map = list(func.params), dict(func.buffer_map)
    functions = {name: mod[name] for name in mod.function_names()}
    rewrites = []
    packed_ids = set()
    for pos, (index, weight, packed) in sorted(moved.items()):
        new_var = E.Var(packed.name, "handle")
        del buffer_map[params[index]]
        params[index] = new_var
        buffer_map[new_var] = packed
        packed_ids.add(id(packed))
        name = packing_function_name(func_name, index)
        functions[name] = _packing_function(func, stmts[pos], weight, packed, name)
        rewrites.append(LayoutRewrite(index, name, tuple(int(s) for s in packed.shape), str(packed.dtype)))
    rest = [s for i, s in enumerate(stmts) if i not in moved]
    block = root.block.replace(body=rest[0] if len(rest) == 1 else SeqStmt(rest),
                               alloc_buffers=tuple(b for b in root.block.alloc_buffers if id(b) not in packed_ids))
    attrs = dict(func.attrs)
    free = [i for i in attrs.pop(LAYOUT_FREE_BUFFERS, ()) if int(i) not in {r.param_index for r in rewrites}]
    if free:
        attrs[LAYOUT_FREE_BUFFERS] = free
    functions[func_name] = func.replace(params=tuple(params), buffer_map=buffer_map, attrs=attrs,
                                        body=root.replace(block=block))
    return IRModule(functions, attrs=mod.attrs), rewrites


def _packing_function(func: PrimFunc, stmt, weight, packed, name: str) -> PrimFunc:
    """``name(weight, packed)``: the packing stage ``stmt`` under a root block of its own."""
    root = func.body
    w_var, p_var = E.Var(weight.name, "handle"), E.Var(packed.name, "handle")
    block = root.block.replace(body=stmt, alloc_buffers=(), annotations={})
    attrs = {k: v for k, v in func.attrs.items() if k in ("tir.noalias", "target")}
    attrs["global_symbol"] = name
    return PrimFunc([w_var, p_var], root.replace(block=block), buffer_map={w_var: weight, p_var: packed},
                    attrs=attrs)


def packed_blocks(func: PrimFunc) -> list[str]:
    """Names of the blocks of ``func`` annotated ``layout_rewrite_preproc`` (for tests and reports).

    Parameters
    ----------
    func : PrimFunc
        A scheduled function.

    Returns
    -------
    list of str
        The packing blocks at its root level, in program order.
    """
    if not isinstance(func.body, BlockRealize):
        return []
    return [r.block.name_hint for r in block_realizes_under(func.body.block.body)
            if LAYOUT_REWRITE_PREPROC in r.block.annotations]
