"""``T.xxx(...)`` records used as statements (``T.reads``, ``T.where``, ``T.attr``, ``T.launch_thread``,
``T.alloc_buffer``, ...), with the helpers the other statement mixins share: buffer regions from
subscripts, block allocations and thread axes.

A mixin of ``core.Parser``.
"""
from __future__ import annotations

from ...ir.buffer import Buffer
from ...ir.expr import IterVar, Range, Var, convert, make_const
from ...ir.stmt import AssertStmt, AttrStmt, BufferRegion
from . import specs
from .evaluator import as_index
from .frames import Consumed as _Consumed


class SpecStatements:
    """Records of the ``T`` namespace used as statements, and the helpers they share."""

    def apply_spec(self, node, spec: specs.Spec, rest):
        """A ``T.xxx(...)`` record used as a statement.

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        spec : Spec
            The record.
        rest : list of ast.stmt
            The statements after this one in the same body.

        Returns
        -------
        Stmt or None
            The statement (None when nothing is emitted).
        """
        if isinstance(spec, specs.AttrsSpec):
            if spec.target == "func":
                self.function.attrs.update(spec.attrs)
            else:
                self.require_block(node, "T.block_attr").annotations.update(spec.attrs)
            return None
        if isinstance(spec, specs.RegionsSpec):
            frame = self.require_block(node, "T.writes" if spec.is_write else "T.reads")
            regions = [self.as_region(node, r) for r in spec.regions]
            if spec.is_write:
                frame.writes = regions
            else:
                frame.reads = regions
            return None
        if isinstance(spec, specs.WhereSpec):
            self.require_block(node, "T.where").predicate = convert(spec.predicate)
            return None
        span = self.source.span(node)
        if isinstance(spec, specs.AttrStmtSpec):
            return _Consumed(AttrStmt(spec.node, spec.key, spec.value, self.parse_rest(rest), span=span))
        if isinstance(spec, specs.AssertSpec):
            return _Consumed(AssertStmt(spec.condition, spec.message, self.parse_rest(rest), span=span))
        if isinstance(spec, specs.LaunchThreadSpec):
            iter_var = self.thread_iter_var(node, spec.thread, "", spec.extent)
            return _Consumed(AttrStmt(iter_var, "thread_extent", spec.extent, self.parse_rest(rest), span=span))
        if isinstance(spec, specs.AllocBufferSpec):
            self.add_alloc_buffer(spec.buffer)
            return None
        raise self.error(node, f"{spec.construct}(...) cannot be used as a statement here")

    def as_region(self, node, value) -> BufferRegion:
        """A BufferRegion from a subscript value (a load becomes a one-element region).

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        value : BufferRegion or BufferLoad
            The subscript's value.

        Returns
        -------
        BufferRegion
            The region.
        """
        if isinstance(value, BufferRegion):
            return value
        if isinstance(value, Buffer):
            return BufferRegion.full_region(value)
        from ...ir.expr import BufferLoad

        if isinstance(value, BufferLoad):
            return BufferRegion.from_point(value.buffer, value.indices)
        raise self.error(node, f"expected a buffer region such as A[vi, 0:4], got {type(value).__name__}")

    def add_alloc_buffer(self, buffer: Buffer) -> None:
        """Allocate ``buffer`` in the innermost block (the root block at function level).

        Parameters
        ----------
        buffer : Buffer
            The buffer.
        """
        frame = self.current_block()
        if frame is None:
            self.function.root_alloc_buffers.append(buffer)
        else:
            frame.alloc_buffers.append(buffer)

    def thread_iter_var(self, node, thread, name: str, extent) -> IterVar:
        """The thread axis of ``T.launch_thread``; as in TVM its domain is ``[0, extent)``.

        Parameters
        ----------
        node : ast.AST
            The statement or expression (for error locations).
        thread : str or IterVar
            The thread tag or axis.
        name : str
            The variable's name.
        extent : PrimExpr
            The number of threads.

        Returns
        -------
        IterVar
            The thread axis.
        """
        extent = convert(as_index(extent))
        if isinstance(thread, IterVar):
            return thread.replace(dom=Range.from_min_extent(make_const(extent.dtype, 0), extent))
        if isinstance(thread, str):
            return IterVar(Range.from_min_extent(make_const(extent.dtype, 0), extent), Var(name or thread, extent.dtype),
                           IterVar.ThreadIndex, thread)
        raise self.error(node, "T.launch_thread takes a thread tag such as \"threadIdx.x\" or a T.env_thread(...) axis")
