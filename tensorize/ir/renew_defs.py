"""Fresh copies of the variables a statement defines (loops, lets, thread variables, allocations), so that a
copied statement does not define one variable twice in a function (TVM's ``tir.stmt_functor.renew_defs``, on
statements).

>>> from tensorize.ir import expr as E, stmt as S
>>> i = E.Var("i", "int32")
>>> loop = S.For(i, E.IntImm("int32", 0), E.IntImm("int32", 4), S.ForKind.SERIAL, S.Evaluate(i))
>>> copy = renew_defs(loop)
>>> copy.loop_var is not i and copy.loop_var.name == "i" and copy.body.value is copy.loop_var
True
"""
from __future__ import annotations

from . import expr as E
from . import stmt as S
from .mutator import StmtExprMutator


class _FreshDefinitions(StmtExprMutator):
    """The copier: each definition gets a new variable of the same name, its uses follow."""

    def __init__(self):
        self.renamed: dict = {}  # old variable -> new
        self.buffers: dict = {}  # id(old buffer) -> the buffer over the new data variable

    def visit_var_(self, op):
        return self.renamed.get(op, op)

    def visit_for_(self, op):
        var = E.Var(op.loop_var.name, op.loop_var.dtype)
        self.renamed[op.loop_var] = var
        binding = op.thread_binding
        if binding is not None:  # as the parser gives each thread-bound loop its own thread variable
            binding = binding.replace(var=E.Var(binding.var.name, binding.var.dtype))
        return S.For(var, self.visit_expr(op.min), self.visit_expr(op.extent), op.kind, self.visit_stmt(op.body),
                     binding, op.annotations)

    def _buffer(self, buffer):
        if buffer.data not in self.renamed:
            return buffer
        key = id(buffer)
        if key not in self.buffers:
            self.buffers[key] = buffer.replace(data=self.renamed[buffer.data])
        return self.buffers[key]

    def visit_allocate_(self, op):
        var = E.Var(op.buffer_var.name, op.buffer_var.type_annotation)
        self.renamed[op.buffer_var] = var
        return S.Allocate(var, op.dtype, tuple(self.visit_expr(e) for e in op.extents), self.visit_expr(op.condition),
                          self.visit_stmt(op.body), op.annotations)

    def visit_decl_buffer_(self, op):
        return S.DeclBuffer(self._buffer(op.buffer), self.visit_stmt(op.body))

    def visit_buffer_load_(self, op):
        op = super().visit_buffer_load_(op)
        buffer = self._buffer(op.buffer)
        return op if buffer is op.buffer else E.BufferLoad(buffer, op.indices, op.predicate)

    def visit_buffer_store_(self, op):
        op = super().visit_buffer_store_(op)
        buffer = self._buffer(op.buffer)
        return op if buffer is op.buffer else S.BufferStore(buffer, op.value, op.indices, op.predicate)

    def visit_let_stmt_(self, op):
        value = self.visit_expr(op.value)
        var = E.Var(op.var.name, op.var.dtype, op.var.type_annotation)
        self.renamed[op.var] = var
        return S.LetStmt(var, value, self.visit_stmt(op.body))



def renew_defs(stmt):
    """``stmt`` with every loop, let, thread and allocated variable it defines replaced by a new variable of the same
    name (the buffers over a renamed allocation follow it).

    Parameters
    ----------
    stmt : Stmt
        The statement (variables it uses but does not define are kept).

    Returns
    -------
    Stmt
        The copy.
    """
    return _FreshDefinitions().visit_stmt(stmt)
