"""Schedule primitive: tensorize.

``tensorize(block_or_loop, intrin)`` replaces a computation by a hardware instruction described as a
``TensorIntrin``: the block (blockized first when a loop is given) is matched against the intrinsic's
``desc`` (``tensorize_match``), and its body becomes the intrinsic's ``impl`` body, with
``T.match_buffer`` views binding the impl's buffers to the tiles of the real buffers the match found.
The views keep the real buffers' offsets and strides, so a tile anywhere inside a larger buffer works
once lowering turns the views into index arithmetic.
"""
from __future__ import annotations

from ...ir import expr as E
from ...ir import stmt as S
from ...ir.buffer import Buffer
from ...ir.functor import post_order_visit
from ...ir.tensor_intrin import TensorIntrin
from ..base import ScheduleBase, primitive
from ..surgery import BufferReplacer
from ..rv import BlockRV, LoopRV
from .tensorize_match import BufferMatch, DescMatcher, TensorizeMismatch


class _FreshImpl(BufferReplacer):
    """Copies an impl body with fresh buffers and variables, so each tensorized block owns its own."""

    def __init__(self, buffer_map: dict, var_map: dict):
        super().__init__(buffer_map)
        self.var_map = var_map

    def visit_var_(self, op):
        return self.var_map.get(id(op), op)

    def visit_let_stmt_(self, op):
        fresh = op.var.copy_with_name(op.var.name)
        self.var_map[id(op.var)] = fresh
        return S.LetStmt(fresh, self.visit_expr(op.value), self.visit_stmt(op.body))


def _fresh_buffer(buf: Buffer, var_map: dict) -> Buffer:
    """A copy of ``buf`` with new data/offset/stride variables (recorded in ``var_map``)."""

    def fresh(x):
        if isinstance(x, E.Var):
            new = var_map.get(id(x))
            if new is None:
                new = var_map[id(x)] = x.copy_with_name(x.name)
            return new
        return x

    return buf.replace(data=fresh(buf.data), elem_offset=fresh(buf.elem_offset),
                       strides=tuple(fresh(s) for s in buf.strides))


def _compact_strides(shape) -> list:
    strides, acc = [], 1
    for extent in reversed(shape):
        strides.append(acc)
        acc *= extent
    return strides[::-1]


def _const_shape(buf: Buffer) -> list[int] | None:
    if all(isinstance(s, E.IntImm) for s in buf.shape):
        return [int(s) for s in buf.shape]
    return None


def needs_dense_tile(impl_body: S.Stmt, impl_buf: Buffer) -> bool:
    """Whether the impl uses ``impl_buf`` as memory (its data pointer or offset, ``T.address_of``, or a
    vector index on an axis other than the last) rather than element by element.

    Element accesses ``A_1[i, k]`` are remapped to the real buffer by lowering (``A[base + i, ...]``),
    so a tile anywhere inside a larger buffer is fine; only memory uses need the tile dense.

    Parameters
    ----------
    impl_body : Stmt
        The body of the intrinsic's impl.
    impl_buf : Buffer
        One of the impl's buffers.

    Returns
    -------
    bool
        True when the tile must be one dense block of memory.
    """
    pointer_vars = {id(impl_buf.data)} | ({id(impl_buf.elem_offset)} if isinstance(impl_buf.elem_offset, E.Var)
                                          else set())
    found = []

    def visit(node):
        if found:
            return
        if isinstance(node, E.Var) and id(node) in pointer_vars:
            found.append(node)
        elif isinstance(node, (E.BufferLoad, S.BufferStore)) and node.buffer is impl_buf:
            last = impl_buf.shape[-1] if impl_buf.shape else None
            lanes = [i.lanes for i in list(node.indices)[-1:] if isinstance(i, E.Ramp)]
            spans_rows = bool(lanes) and not (isinstance(last, E.IntImm) and int(lanes[0]) <= last.value)
            if any(isinstance(i, E.Ramp) for i in list(node.indices)[:-1]) or spans_rows:
                found.append(node)
        elif isinstance(node, E.Call) and getattr(node.op, "name", "") == "tir.address_of":
            if any(isinstance(a, E.BufferLoad) and a.buffer is impl_buf for a in node.args):
                found.append(node)

    post_order_visit(impl_body, visit)
    if found and all(isinstance(f, E.Var) for f in found):
        # Tensor Core fragment calls address a fragment by its index (elem_offset // tile size), not memory.
        return _pointer_uses(impl_body, pointer_vars) > _pointer_uses_in_fragment_calls(impl_body, pointer_vars)
    return bool(found)


_FRAGMENT_OPS = ("tir.tvm_mma_sync", "tir.tvm_bmma_sync", "tir.tvm_fill_fragment")


def _pointer_uses(node, pointer_vars) -> int:
    count = [0]

    def visit(n):
        if isinstance(n, E.Var) and id(n) in pointer_vars:
            count[0] += 1

    post_order_visit(node, visit)
    return count[0]


def _pointer_uses_in_fragment_calls(body, pointer_vars) -> int:
    calls = []
    post_order_visit(body, lambda n: calls.append(n) if isinstance(n, E.Call) and getattr(n.op, "name", "")
                     in _FRAGMENT_OPS else None)
    return sum(_pointer_uses(S.Evaluate(c), pointer_vars) for c in calls)


def check_contiguous(intrin_name: str, match: BufferMatch, impl_buf: Buffer, impl_body: S.Stmt | None = None) -> None:
    """When the impl declares no strides and uses its buffer as memory (``needs_dense_tile``), it reads
    its tile as one dense block: the tile of the real buffer must then be dense too.

    Parameters
    ----------
    intrin_name : str
        The intrinsic's name (for the error message).
    match : BufferMatch
        The match of the intrinsic's buffer to the real buffer.
    impl_buf : Buffer
        The intrinsic implementation's buffer.

    Raises
    ------
    ScheduleError
        When the tile is not dense but the implementation needs it to be.
    """
    if impl_buf.strides:
        return  # the impl takes the real strides through its stride variables
    if impl_body is not None and not needs_dense_tile(impl_body, impl_buf):
        return  # element-by-element accesses: lowering remaps each index into the real buffer
    view = [int(s) for s in match.desc.shape]
    real = match.real
    shape = _const_shape(real)
    lead = real.ndim - len(view)
    first = next((t for t, e in enumerate(view) if e > 1), len(view))
    if shape is None:
        if first < len(view) - 1:
            raise TensorizeMismatch(f"inner access of {real.name} is not contiguous: its shape is symbolic, so the "
                                    f"{'x'.join(map(str, view))} tile of the impl of {intrin_name} cannot be proved "
                                    "dense; use a buffer of constant shape or an intrinsic whose impl declares strides")
        return
    if real.strides:
        strides = [int(s) if isinstance(s, E.IntImm) else None for s in real.strides]
        if strides != _compact_strides(shape):
            raise TensorizeMismatch(f"inner access of {real.name} is not contiguous: it has strides "
                                    f"{[str(s) for s in real.strides]} but the impl of {intrin_name} reads its "
                                    f"{match.desc.name} tile as dense memory")
    for t in range(first + 1, len(view)):
        if view[t] != shape[lead + t]:
            row = _compact_strides(shape)[lead + t - 1]
            raise TensorizeMismatch(
                f"inner access of {real.name} is not contiguous: the impl of {intrin_name} reads its "
                f"{match.desc.name} tile ({'x'.join(map(str, view))}) as one dense block, but in {real.name} "
                f"(shape {shape}) the tile's axis {t} has extent {view[t]} while the buffer's axis has "
                f"{shape[lead + t]}, so tile rows are {row} elements apart; pack the buffer with "
                "sch.transform_layout (e.g. B[j, k] -> B[j // 16, k // 4, j % 16, k % 4]) or use an intrinsic "
                "whose impl declares strides")


class Tensorize(ScheduleBase):
    """tensorize."""

    @primitive
    def tensorize(self, block_or_loop, tensor_intrin, preserve_unit_iters: bool = True) -> None:
        """Replace the computation of ``block_or_loop`` by the tensor intrinsic ``tensor_intrin``.

        Given a loop, the subtree under it is blockized first (``sch.blockize``); given a block, the
        block's body is used as is (blockize it first). The block must compute what the intrinsic's
        ``desc`` computes: the same loop extents, iterator kinds and extents, the same expression up
        to renaming, and buffer accesses that are the desc's accesses shifted by a tile origin that is
        fixed inside the block. Its body then becomes the intrinsic's ``impl`` body; the impl's buffers
        become ``T.match_buffer`` views of the matched tiles (offsets and strides preserved). The
        block keeps its iterators, regions and ``init``.

        Parameters
        ----------
        block_or_loop : LoopRV | BlockRV
            The loop whose subtree is the tile, or a block made by ``blockize``.
        tensor_intrin : str | TensorIntrin
            A registered intrinsic name (``"dot_16x4_vnni"``) or the intrinsic itself.
        preserve_unit_iters : bool
            Passed to ``blockize``.

        Raises ``ScheduleError`` naming what does not match (e.g. "dtype mismatch: desc reads A as
        uint8, the block reads A as int8") and leaves the schedule unchanged.

        Parameters
        ----------
        block_or_loop : BlockRV or LoopRV
            The block (typically from ``blockize``) or the loop whose subtree is replaced.
        tensor_intrin : str
            The name of a registered ``TensorIntrin``.
        preserve_unit_iters : bool
            Keep unit iterators in the block bindings.

        Example
        -------
        Before (B packed as ``(N // 16, K // 4, 16, 4)``, the j and k loops split by 16 and 4)::

            for i, j_0, k_0, j_1, k_1 in T.grid(64, 4, 16, 16, 4):
                with T.block("C"):
                    vi = T.axis.spatial(64, i)
                    vj = T.axis.spatial(64, j_0 * 16 + j_1)
                    vk = T.axis.reduce(64, k_0 * 4 + k_1)
                    with T.init():
                        C[vi, vj] = 0
                    C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", B[vj // 16, vk // 4, vj % 16, vk % 4])

        ``sch.tensorize(j_1, "dot_16x4_vnni")``::

            for i, j_0, k_0 in T.grid(64, 4, 16):
                with T.block("C_o"):
                    vi, vj_o, vk_o = T.axis.remap("SSR", [i, j_0, k_0])
                    A_1 = T.match_buffer(A[vi, vk_o * 4:vk_o * 4 + 4], (4,), "uint8", offset_factor=1)
                    B_1 = T.match_buffer(B[vj_o, vk_o, 0:16, 0:4], (16, 4), "int8", offset_factor=1)
                    C_1 = T.match_buffer(C[vi, vj_o * 16:vj_o * 16 + 16], (16,), "int32", offset_factor=1)
                    with T.init():
                        for j_1 in range(16):
                            with T.block("C_init"):
                                ...
                    A_u8x4: T.uint8x4 = A_1[0:4]
                    ...
                    C_1[0:16] = T.call_llvm_pure_intrin("int32x16", "llvm.x86.avx512.vpdpbusd.512", ...)
        """
        intrin = tensor_intrin if isinstance(tensor_intrin, TensorIntrin) else TensorIntrin.get(str(tensor_intrin))
        name = intrin.name or "<unnamed>"
        if isinstance(block_or_loop, LoopRV):
            block_rv = self.blockize(block_or_loop, preserve_unit_iters)
        elif isinstance(block_or_loop, BlockRV):
            block_rv = block_or_loop
        else:
            raise TypeError(f"tensorize takes a LoopRV or a BlockRV, got {type(block_or_loop).__name__}")
        func_name, _, realize = self._block(block_rv)
        block = realize.block
        try:
            matches = self._match_desc(intrin, block)
            for param_d, param_i in zip(intrin.desc.params, intrin.impl.params):
                desc_buf, impl_buf = intrin.desc.buffer_map[param_d], intrin.impl.buffer_map[param_i]
                if id(desc_buf) not in matches:
                    raise TensorizeMismatch(f"the block never accesses the desc's buffer {desc_buf.name}")
                check_contiguous(name, matches[id(desc_buf)], impl_buf, intrin.impl.body)
        except TensorizeMismatch as err:
            raise self._error(f"tensorize: block {block.name_hint!r} does not match intrinsic {name!r}: {err}",
                              realize) from None
        new_block = self._impl_block(intrin, block, matches)
        self._replace(func_name, realize, S.BlockRealize(realize.iter_values, realize.predicate, new_block))

    @staticmethod
    def _match_desc(intrin: TensorIntrin, block: S.Block) -> dict[int, BufferMatch]:
        desc_root = intrin.desc.body
        if not (isinstance(desc_root, S.BlockRealize) and not desc_root.block.iter_vars):
            raise TensorizeMismatch(f"the desc of {intrin.name!r} must be a root block (`with T.block(\"root\")`) "
                                    "around the computation")
        outer = {iv.var: iv.dom for iv in block.iter_vars}
        matcher = DescMatcher(intrin.name, outer)
        matcher.match_stmt(desc_root.block.body, block.body)
        return matcher.buffers

    @staticmethod
    def _impl_block(intrin: TensorIntrin, block: S.Block, matches: dict[int, BufferMatch]) -> S.Block:
        impl_root = intrin.impl.body
        if not (isinstance(impl_root, S.BlockRealize) and not impl_root.block.iter_vars):
            raise ValueError(f"the impl of {intrin.name!r} must be a root block (`with T.block(\"root\")`) around "
                             "the instruction")
        var_map: dict = {}
        buffer_map: dict = {}
        match_buffers = []
        for param_d, param_i in zip(intrin.desc.params, intrin.impl.params):
            desc_buf, impl_buf = intrin.desc.buffer_map[param_d], intrin.impl.buffer_map[param_i]
            m = matches[id(desc_buf)]
            view = _fresh_buffer(impl_buf, var_map)
            buffer_map[id(impl_buf)] = view
            lead = m.real.ndim - desc_buf.ndim
            region = [E.Range.from_min_extent(b, 1) for b in m.base[:lead]]
            region += [E.Range.from_min_extent(b, s) for b, s in zip(m.base[lead:], desc_buf.shape)]
            match_buffers.append(S.MatchBufferRegion(view, S.BufferRegion(m.real, region)))
        body = _FreshImpl(buffer_map, var_map).visit(impl_root.block.body)
        allocs = tuple(_fresh_buffer(b, var_map) for b in impl_root.block.alloc_buffers)
        if allocs:
            body = _FreshImpl({id(a): b for a, b in zip(impl_root.block.alloc_buffers, allocs)}, var_map).visit(body)
        annotations = {**dict(block.annotations or {}), **dict(impl_root.block.annotations or {})}  # as TVM
        return block.replace(body=body, match_buffers=tuple(block.match_buffers) + tuple(match_buffers),
                             alloc_buffers=tuple(block.alloc_buffers) + allocs, annotations=annotations)


__all__ = ["Tensorize", "TensorizeMismatch", "check_contiguous", "needs_dense_tile"]
