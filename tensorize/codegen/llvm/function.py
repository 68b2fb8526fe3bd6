"""One PrimFunc (or one outlined parallel loop body) to one LLVM function: statements and loops.

Loops are emitted with a phi-node induction variable. ``VECTORIZED`` loops that reach codegen
(lowering normally expands them into vector expressions) become serial loops carrying
``llvm.loop.vectorize.enable``; ``UNROLLED`` loops carry ``llvm.loop.unroll.full`` (constant
extent) or ``unroll.enable``.

Parallel loops run on OpenMP through libgomp: the values the loop uses are packed into a struct
on the caller's stack, and ``GOMP_parallel(task, closure, num_threads, 0)`` runs
``void task(ptr closure)`` on the team. ``task`` only unpacks the closure and calls the loop body,
outlined as its own function whose pointer parameters keep the ``noalias`` and ``align``
attributes of the buffers they carry: LLVM inlines it into ``task`` and turns ``noalias`` into
alias scopes, so the body vectorizes without run-time alias checks, as it would unparallelized. Each thread takes one
contiguous chunk of ``ceil(extent / omp_get_num_threads())`` iterations (static schedule, as
TVM's own thread pool does). A parallel loop nested inside another runs serially. The team size is
the module global ``__tensorize_num_threads`` (0 lets libgomp decide), which the runtime sets
from ``TVM_NUM_THREADS``, ``OMP_NUM_THREADS`` or the number of usable cores.

Errors (a failed ``AssertStmt``, a failed heap allocation) store a message pointer in the global
``__tensorize_last_error`` and return -1; the runtime turns that into a ``TVMError``.
"""
from __future__ import annotations

import llvmlite.ir as ir

from ...errors import TVMError
from ...ir import dtype as dt
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.functor import StmtExprVisitor
from .expr import ExprCodegen
from .memory import MemoryCodegen
from .types import I32, I64, PTR, byte_size, element_type, llvm_type

STACK_LIMIT_BYTES = 32 * 1024  # larger or dynamic allocations go to the heap
HEAP_ALIGNMENT = 64


class FunctionCodegen(ExprCodegen, MemoryCodegen):
    """Emits the body of one LLVM function. ``returns_status``: the function returns i32 (0 on
    success); outlined parallel bodies return void."""

    def __init__(self, ctx, function: ir.Function, name: str, returns_status: bool = True,
                 parallel_depth: int = 0, data_alignment: dict | None = None, noalias: set | None = None):
        self.ctx, self.function, self.name = ctx, function, name
        self.returns_status = returns_status
        self.parallel_depth = parallel_depth
        self.vars: dict = {}
        self.data_alignment: dict = dict(data_alignment or {})
        # Pointer variables known to address distinct objects (noalias params, allocations).
        self.noalias: set = set(noalias or ())
        entry = function.append_basic_block("entry")
        self.entry_builder = ir.IRBuilder(entry)  # allocas go here, before the first branch
        body = function.append_basic_block("body")
        self.builder = ir.IRBuilder(body)
        self._outlined = 0

    def finish(self) -> None:
        """Close the function: the entry block falls through to the code."""
        self.entry_builder.branch(self.function.basic_blocks[1])
        if not self.builder.block.is_terminated:
            if self.returns_status:
                self.builder.ret(ir.Constant(I32, 0))
            else:
                self.builder.ret_void()

    # -- statements -------------------------------------------------------------------------
    def stmt(self, s) -> None:
        """Emit LLVM code for a statement (through its ``visit``-style method).

        Parameters
        ----------
        s : Stmt
            The statement.
        """
        method = getattr(self, "emit_" + type(s).__name__, None)
        if method is None:
            if isinstance(s, (S.Block, S.BlockRealize)):
                raise TVMError(f"{self.name} still contains blocks: codegen takes lowered TensorIR; "
                               "build with tvm.build (which lowers) or run tvm.lower first")
            raise TVMError(f"LLVM codegen does not support the statement {type(s).__name__}")
        method(s)

    def emit_SeqStmt(self, s):
        for item in s.seq:
            self.stmt(item)

    def emit_Evaluate(self, s):
        if not isinstance(s.value, (E.IntImm, E.FloatImm)):
            self.expr(s.value)

    def emit_BufferStore(self, s):
        self.store(s.buffer, s.value, s.indices, s.predicate)

    def emit_LetStmt(self, s):
        self.vars[s.var] = self.expr(s.value)
        self.stmt(s.body)

    def emit_AttrStmt(self, s):
        self.stmt(s.body)

    def emit_DeclBuffer(self, s):
        self.stmt(s.body)

    def emit_IfThenElse(self, s):
        b = self.builder
        cond = self.expr(s.condition)
        then_block = b.append_basic_block("then")
        end_block = b.append_basic_block("endif")
        else_block = b.append_basic_block("else") if s.else_case is not None else end_block
        b.cbranch(cond, then_block, else_block)
        b.position_at_end(then_block)
        self.stmt(s.then_case)
        b.branch(end_block)
        if s.else_case is not None:
            b.position_at_end(else_block)
            self.stmt(s.else_case)
            b.branch(end_block)
        b.position_at_end(end_block)

    def emit_While(self, s):
        b = self.builder
        header = b.append_basic_block("while_cond")
        body = b.append_basic_block("while_body")
        end = b.append_basic_block("while_end")
        b.branch(header)
        b.position_at_end(header)
        b.cbranch(self.expr(s.condition), body, end)
        b.position_at_end(body)
        self.stmt(s.body)
        b.branch(header)
        b.position_at_end(end)

    def emit_AssertStmt(self, s):
        message = s.message.value if isinstance(s.message, E.StringImm) else "assertion failed"
        self.fail_unless(self.expr(s.condition), message)
        self.stmt(s.body)

    def fail_unless(self, cond: ir.Value, message: str) -> None:
        """Branch to an error exit (message stored in ``__tensorize_last_error``) when ``cond`` is false.

        Parameters
        ----------
        cond : ir.Value
            The i1 condition.
        message : str
            The error message.
        """
        b = self.builder
        ok = b.append_basic_block("assert_ok")
        fail = b.append_basic_block("assert_fail")
        b.cbranch(cond, ok, fail)
        b.position_at_end(fail)
        b.store(self.ctx.string_constant(message), self.ctx.error_global)
        if self.returns_status:
            b.ret(ir.Constant(I32, -1))
        else:
            b.ret_void()
        b.position_at_end(ok)

    def emit_Allocate(self, s):
        element = element_type(s.dtype, True)
        count = 1
        for extent in s.extents:
            if isinstance(extent, E.IntImm) and count is not None:
                count *= extent.value
            else:
                count = None
        total_bytes = None if count is None else count * byte_size(s.dtype)
        self.data_alignment[s.buffer_var] = HEAP_ALIGNMENT
        self.noalias.add(s.buffer_var)
        if total_bytes is not None and total_bytes <= STACK_LIMIT_BYTES:
            storage = self.entry_builder.alloca(ir.ArrayType(element, max(count, 1)))
            storage.align = HEAP_ALIGNMENT
            storage.type = PTR  # llvmlite types allocas as typed pointers; accesses use opaque ptr GEPs
            self.vars[s.buffer_var] = storage
            self.stmt(s.body)
            return
        b = self.builder
        size = ir.Constant(I64, 1)
        for extent in s.extents:
            size = b.mul(size, self.cast(self.expr(extent), extent.dtype, "int64"))
        size = b.mul(size, ir.Constant(I64, byte_size(s.dtype)))
        rounded = b.and_(b.add(size, ir.Constant(I64, HEAP_ALIGNMENT - 1)), ir.Constant(I64, -HEAP_ALIGNMENT))
        aligned_alloc = self.ctx.declare("aligned_alloc", PTR, [I64, I64])
        pointer = b.call(aligned_alloc, [ir.Constant(I64, HEAP_ALIGNMENT), rounded])
        self.fail_unless(b.icmp_unsigned("!=", pointer, ir.Constant(PTR, None)),
                         f"out of memory allocating {s.buffer_var.name}")
        self.vars[s.buffer_var] = pointer
        self.stmt(s.body)
        self.builder.call(self.ctx.declare("free", ir.VoidType(), [PTR]), [pointer])

    # -- loops ------------------------------------------------------------------------------
    def emit_For(self, s):
        kind = s.kind
        if kind == S.ForKind.THREAD_BINDING:
            raise TVMError(f"loop {s.loop_var.name} is bound to a GPU thread ({s.thread_binding}); "
                           "build it for a cuda target, not llvm")
        if kind == S.ForKind.PARALLEL and self.parallel_depth == 0:
            self.parallel_for(s)
            return
        metadata = None
        if kind == S.ForKind.VECTORIZED:
            metadata = self.ctx.loop_metadata(vectorize_width=s.extent.value if isinstance(s.extent, E.IntImm) else 0)
        elif kind == S.ForKind.UNROLLED:
            metadata = self.ctx.loop_metadata(unroll_full=isinstance(s.extent, E.IntImm))
        begin = self.expr(s.min)
        end = self.builder.add(begin, self.expr(s.extent))
        self.loop(s.loop_var, begin, end, lambda: self.stmt(s.body), metadata)

    def loop(self, var: E.Var, begin: ir.Value, end: ir.Value, emit_body, metadata=None) -> None:
        """Emit a counted loop ``for var in [begin, end)`` whose body ``emit_body()`` emits.

        Parameters
        ----------
        var : Var
            The loop variable.
        begin : ir.Value
            The first value.
        end : ir.Value
            One past the last value.
        emit_body : callable
            Emits the body.
        metadata : optional
            An ``llvm.loop`` node (vectorize/unroll hints).
        """
        b = self.builder
        preheader = b.block
        header = b.append_basic_block(f"for_{var.name}")
        body = b.append_basic_block(f"for_{var.name}_body")
        exit_block = b.append_basic_block(f"for_{var.name}_end")
        b.branch(header)
        b.position_at_end(header)
        index = b.phi(begin.type, name=var.name)
        index.add_incoming(begin, preheader)
        signed = dt.parse(var.dtype).code == "int"
        cond = b.icmp_signed("<", index, end) if signed else b.icmp_unsigned("<", index, end)
        b.cbranch(cond, body, exit_block)
        b.position_at_end(body)
        self.vars[var] = index
        emit_body()
        step = b.add(index, ir.Constant(index.type, 1), flags=("nsw",) if signed else ())
        latch = b.branch(header)
        index.add_incoming(step, b.block)
        if metadata is not None:
            latch.set_metadata("llvm.loop", metadata)
        b.position_at_end(exit_block)
        del self.vars[var]

    def parallel_for(self, s) -> None:
        """Run the loop with ``GOMP_parallel`` (see the module docstring).

        Parameters
        ----------
        s : For
            A parallel loop.
        """
        ctx, b = self.ctx, self.builder
        captured = [v for v in free_vars(s.body) if v in self.vars and v is not s.loop_var]
        # One closure slot per distinct LLVM value: two variables bound to the same pointer must not
        # become two noalias parameters.
        values, slot_of = [self.expr(s.min), self.expr(s.extent)], {}
        for var in captured:
            value = self.vars[var]
            slot_of[var] = next((k for k, v in enumerate(values) if v is value and k >= 2), None)
            if slot_of[var] is None:
                slot_of[var] = len(values)
                values.append(value)
        closure_type = ir.LiteralStructType([v.type for v in values])
        closure = self.entry_builder.alloca(closure_type)
        closure.type = PTR
        for position, value in enumerate(values):
            b.store(value, b.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, position)], source_etype=closure_type))

        self._outlined += 1
        base_name = f"{self.function.name}_parallel_{self._outlined}"
        body = self._parallel_body(s, base_name, values, captured, slot_of)
        task = ir.Function(ctx.module, ir.FunctionType(ir.VoidType(), [PTR]), name=base_name)
        task.linkage = "internal"
        task.attributes.add("nounwind")
        tb = ir.IRBuilder(task.append_basic_block("entry"))
        fields = [tb.load(tb.gep(task.args[0], [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=closure_type),
                          typ=v.type) for k, v in enumerate(values)]
        tb.call(body, fields)
        tb.ret_void()

        num_threads = b.load(ctx.num_threads_global, typ=I32)
        gomp_parallel = ctx.declare("GOMP_parallel", ir.VoidType(), [PTR, PTR, I32, I32])
        b.call(gomp_parallel, [task, closure, num_threads, ir.Constant(I32, 0)])
        ctx.uses_openmp = True
        if self.returns_status:
            error = b.load(ctx.error_global, typ=PTR)
            self.fail_unless_error_clear(error)

    def _parallel_body(self, s, name: str, values: list, captured: list, slot_of: dict) -> ir.Function:
        """``void body(begin, extent, captured...)``: this thread's chunk of the loop ``s``."""
        ctx = self.ctx
        body = ir.Function(ctx.module, ir.FunctionType(ir.VoidType(), [v.type for v in values]), name=f"{name}_body")
        body.linkage = "internal"
        body.attributes.add("nounwind")
        body.attributes.add("alwaysinline")
        for var in captured:
            arg = body.args[slot_of[var]]
            arg.name = var.name
            if isinstance(arg.type, ir.PointerType) and var in self.noalias:
                arg.add_attribute("noalias")
                if self.data_alignment.get(var, 1) > 1:
                    arg.attributes.align = self.data_alignment[var]
        inner = FunctionCodegen(ctx, body, self.name, returns_status=False, parallel_depth=self.parallel_depth + 1,
                                data_alignment=self.data_alignment, noalias=self.noalias)
        ib = inner.builder
        inner.vars.update((var, body.args[slot_of[var]]) for var in captured)
        inner_begin, inner_extent = body.args[0], body.args[1]
        index_type = inner_begin.type
        threads = ib.call(ctx.declare("omp_get_num_threads", I32, []), [])
        thread = ib.call(ctx.declare("omp_get_thread_num", I32, []), [])
        threads = inner.cast(threads, "int32", s.loop_var.dtype)
        thread = inner.cast(thread, "int32", s.loop_var.dtype)
        one = ir.Constant(index_type, 1)
        chunk = ib.sdiv(ib.sub(ib.add(inner_extent, threads), one), threads)
        lo = ib.add(inner_begin, ib.mul(thread, chunk))
        stop = ib.add(inner_begin, inner_extent)
        hi_candidate = ib.add(lo, chunk)
        hi = ib.select(ib.icmp_signed("<", hi_candidate, stop), hi_candidate, stop)
        inner.loop(s.loop_var, lo, hi, lambda: inner.stmt(s.body))
        inner.finish()
        return body

    def fail_unless_error_clear(self, error: ir.Value) -> None:
        """Return -1 from the function when ``error`` (the error message a parallel body left) is not null.

        Parameters
        ----------
        error : ir.Value
            The error message pointer.
        """
        b = self.builder
        ok = b.append_basic_block("parallel_ok")
        fail = b.append_basic_block("parallel_fail")
        b.cbranch(b.icmp_unsigned("==", error, ir.Constant(PTR, None)), ok, fail)
        b.position_at_end(fail)
        b.ret(ir.Constant(I32, -1))
        b.position_at_end(ok)

    # -- calls helper -----------------------------------------------------------------------
    def call_overloaded(self, base: str, ret: ir.Type, arg_types: list, args: list, arg_types_for_name=()) -> ir.Value:
        """Call the overloaded LLVM intrinsic ``base`` mangled with ``arg_types_for_name``.

        Parameters
        ----------
        base : str
            The intrinsic's name without type suffixes.
        ret : ir.Type
            The return type.
        arg_types : list of ir.Type
            The argument types.
        args : list of ir.Value
            The arguments.
        arg_types_for_name : list of ir.Type
            The types that mangle the name (default: return then arguments).

        Returns
        -------
        ir.Value
            The result.
        """
        from .types import type_suffix

        name = ".".join([base] + [type_suffix(t) for t in arg_types_for_name])
        callee = self.ctx.declare(name, ret, [a.type for a in args])
        return self.builder.call(callee, args)


class _FreeVars(StmtExprVisitor):
    """Variables a statement reads, including buffer data pointers and offsets (in first-use order)."""

    def __init__(self):
        self.found: dict = {}

    def visit_var_(self, op):
        self.found.setdefault(op, None)

    visit_size_var_ = visit_var_

    def _buffer(self, buffer):
        self.found.setdefault(buffer.data, None)
        if not isinstance(buffer.elem_offset, E.IntImm):
            self.visit_expr(buffer.elem_offset)
        for stride in buffer.strides:
            self.visit_expr(stride)

    def visit_buffer_load_(self, op):
        self._buffer(op.buffer)
        super().visit_buffer_load_(op)

    def visit_buffer_store_(self, op):
        self._buffer(op.buffer)
        super().visit_buffer_store_(op)

    def visit_decl_buffer_(self, op):
        self._buffer(op.buffer)
        super().visit_decl_buffer_(op)


def free_vars(stmt) -> list:
    """The variables ``stmt`` uses but does not define (the captures of a parallel body).

    Parameters
    ----------
    stmt : Stmt
        The statement.

    Returns
    -------
    list of Var
        The variables.
    """
    visitor = _FreeVars()
    visitor.visit_stmt(stmt)
    return list(visitor.found)


def scalar_param_type(dtype: str) -> ir.Type:
    """How a scalar parameter crosses the C boundary (see runtime.signature).

    Parameters
    ----------
    dtype : str
        The dtype.

    Returns
    -------
    ir.Type
        The LLVM type.
    """
    t = dt.parse(dtype)
    if t.code == "bool":
        return element_type("int8")
    if t.code == "bfloat" or (t.code == "float" and t.bits == 16):
        return element_type("float32")
    return llvm_type(dtype)
