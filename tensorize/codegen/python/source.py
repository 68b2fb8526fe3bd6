"""Translation of a PrimFunc into Python source over flat numpy arrays (``interpreter.py`` compiles
and runs it; ``support.py`` holds what the source calls)."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ...ir import dtype as dt
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.buffer import Buffer
from .support import _MATH, _RUNTIME, InterpreterError, _make_cast, _unsupported

_PY_BLOCK_LIMIT = 16  # CPython refuses more than 20 statically nested loops; deeper nests go in local functions.
_MAX_EXPR_DEPTH = 40  # deeper expressions are split into temporaries to stay under the parser's nesting limit


class _Layout:
    """How a buffer's indices become a flat offset: strides per axis and an element offset (as source text)."""

    __slots__ = ("storage", "strides", "offset")

    def __init__(self, storage: str, strides: list[str], offset: str):
        self.storage, self.strides, self.offset = storage, strides, offset


class _Codegen:
    def __init__(self, externs: Mapping[str, Callable]):
        self.lines: list[str] = []
        self.indent = 1
        self.names: dict[int, str] = {}
        self.used_names: set[str] = set()
        self.namespace: dict[str, Any] = dict(_RUNTIME)
        self.externs = dict(externs or {})
        self.layouts: dict[tuple[int, str], _Layout] = {}  # (id(buffer), storage name) -> layout
        self.storage: dict[int, str] = {}  # id(data var) -> name of the flat array
        self.py_depth = 0
        self.guarded = 0
        self.counter = 0

    # -- names and constants ------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = "v_" + "".join(c if c.isalnum() else "_" for c in hint)
        name, k = base, 0
        while name in self.used_names:
            k += 1
            name = f"{base}_{k}"
        self.used_names.add(name)
        return name

    def bind_var(self, var: E.Var) -> str:
        name = self.fresh(var.name)
        self.names[id(var)] = name
        return name

    def const(self, value, hint: str = "c") -> str:
        self.counter += 1
        name = f"_{hint}{self.counter}"
        self.namespace[name] = value
        return name

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    # -- buffers ------------------------------------------------------------------------------
    def layout(self, buffer: Buffer) -> _Layout:
        storage = self.storage.get(id(buffer.data))
        layout = self.layouts.get((id(buffer), storage))
        if layout is not None:
            return layout
        if storage is None:
            raise InterpreterError(f"buffer {buffer.name!r} is used but its data {buffer.data.name!r} is neither a "
                                   "parameter nor allocated (Allocate or a block's alloc_buffers)")
        if buffer.strides:
            strides = [self.expr(s) for s in buffer.strides]
        else:
            strides, acc = [], "1"
            for extent in reversed(buffer.shape):
                strides.append(acc)
                acc = f"({acc} * {self.expr(extent)})" if acc != "1" else self.expr(extent)
            strides.reverse()
        offset = self.expr(buffer.elem_offset)
        layout = _Layout(storage, strides, offset)
        self.layouts[(id(buffer), storage)] = layout
        return layout

    def flat_index(self, buffer: Buffer, indices: Sequence[E.PrimExpr]) -> str:
        layout = self.layout(buffer)
        if len(indices) != len(layout.strides):
            raise InterpreterError(f"access to {buffer.name!r} has {len(indices)} indices but the buffer has "
                                   f"{len(layout.strides)} dimensions")
        terms = []
        for index, stride in zip(indices, layout.strides):
            text = self.expr(index)
            terms.append(text if stride == "1" else f"{text} * {stride}")
        if layout.offset != "0":
            terms.append(layout.offset)
        return "(" + " + ".join(terms) + ")" if terms else "0"

    # -- expressions --------------------------------------------------------------------------
    def expr(self, e: E.PrimExpr, depth: int = 0) -> str:
        text = self._expr(e, depth)
        if depth and depth % _MAX_EXPR_DEPTH == 0 and not self.guarded and not isinstance(e, (E.Var, E.IntImm)):
            tmp = self.fresh("t")
            self.emit(f"{tmp} = {text}")
            return tmp
        return text

    def _expr(self, e, depth):
        sub = lambda x: self.expr(x, depth + 1)  # noqa: E731
        vector = dt.lanes_of(e.dtype) > 1
        if isinstance(e, E.Var):
            name = self.names.get(id(e))
            if name is None:
                raise InterpreterError(f"variable {e.name!r} is used outside the scope that defines it")
            return name
        if isinstance(e, E.IntImm):
            if e.dtype == "bool":
                return "True" if e.value else "False"
            if e.dtype in ("int32", "int64"):
                return repr(e.value) if e.value >= 0 else f"({e.value})"
            return self.const(np.dtype(dt.numpy_dtype(e.dtype)).type(e.value))
        if isinstance(e, E.FloatImm):
            return self.const(np.dtype(dt.numpy_dtype(e.dtype)).type(e.value))
        if isinstance(e, E.StringImm):
            return repr(e.value)
        if isinstance(e, E.Cast):
            return f"{self.const(_make_cast(e.dtype), 'cast')}({sub(e.value)})"
        if isinstance(e, E.BinaryOpExpr):
            return self._binary(e, sub(e.a), sub(e.b), vector)
        if isinstance(e, E.Not):
            return f"(~{sub(e.a)})" if vector else f"(not {sub(e.a)})"
        if isinstance(e, E.Select):
            if vector:
                return f"np.where({sub(e.condition)}, {sub(e.true_value)}, {sub(e.false_value)})"
            return f"({sub(e.true_value)} if {sub(e.condition)} else {sub(e.false_value)})"
        if isinstance(e, E.BufferLoad):
            index = self.flat_index(e.buffer, e.indices)
            storage = self.layout(e.buffer).storage
            if e.predicate is not None:
                mask = sub(e.predicate)
                return f"np.where({mask}, {storage}[np.where({mask}, {index}, 0)], 0).astype({storage}.dtype)"
            return f"{storage}[{index}]"
        if isinstance(e, E.Ramp):
            iota = self.const(np.arange(e.lanes, dtype=np.int64), "iota")
            return f"({sub(e.base)} + {iota} * {sub(e.stride)})"
        if isinstance(e, E.Broadcast):
            npdt = self.const(np.dtype(dt.numpy_dtype(e.dtype)), "dt")
            return f"_bc({sub(e.value)}, {e.lanes}, {npdt})"
        if isinstance(e, E.Shuffle):
            picks = self.const(np.array([int(i) for i in e.indices]), "pick")
            parts = ", ".join(f"np.atleast_1d({sub(v)})" for v in e.vectors)
            return f"np.concatenate(({parts},))[{picks}]"
        if isinstance(e, E.Let):
            name = self.bind_var(e.var)
            return f"(({name} := {sub(e.value)}), {sub(e.body)})[1]"
        if isinstance(e, E.Call):
            return self._call(e, sub, vector)
        raise InterpreterError(f"the interpreter does not support {type(e).__name__} expressions")

    def _binary(self, e, a: str, b: str, vector: bool) -> str:
        integer = dt.is_int(e.a.dtype)
        if isinstance(e, E.Add):
            return f"({a} + {b})"
        if isinstance(e, E.Sub):
            return f"({a} - {b})"
        if isinstance(e, E.Mul):
            return f"({a} * {b})"
        if isinstance(e, E.Div):
            return f"_truncdiv({a}, {b})" if integer else f"({a} / {b})"
        if isinstance(e, E.Mod):
            return f"_truncmod({a}, {b})" if integer else f"np.fmod({a}, {b})"
        if isinstance(e, E.FloorDiv):
            return f"({a} // {b})" if integer else f"np.floor({a} / {b})"
        if isinstance(e, E.FloorMod):
            return f"({a} % {b})"
        if isinstance(e, E.Min):
            return f"np.minimum({a}, {b})" if vector else f"min({a}, {b})"
        if isinstance(e, E.Max):
            return f"np.maximum({a}, {b})" if vector else f"max({a}, {b})"
        if isinstance(e, E.And):
            return f"({a} & {b})" if vector else f"({a} and {b})"
        if isinstance(e, E.Or):
            return f"({a} | {b})" if vector else f"({a} or {b})"
        ops = {E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">="}
        for cls, op in ops.items():
            if isinstance(e, cls):
                return f"({a} {op} {b})"
        raise InterpreterError(f"the interpreter does not support {type(e).__name__}")

    def _call(self, e: E.Call, sub, vector: bool) -> str:
        name = e.op.name
        args = e.args
        if name == "tir.if_then_else":
            condition = args[0].value if isinstance(args[0], E.Broadcast) else args[0]
            if vector and dt.lanes_of(condition.dtype) > 1:
                return f"np.where({sub(args[0])}, {sub(args[1])}, {sub(args[2])})"
            cond = sub(condition)  # one condition for all lanes: only the taken side runs (it may guard a load)
            self.guarded += 1
            try:
                return f"({sub(args[1])} if {cond} else {sub(args[2])})"
            finally:
                self.guarded -= 1
        if name in ("tir.likely", "tir.assume"):
            return sub(args[0]) if name == "tir.likely" else "None"
        if name == "tir.reinterpret":
            npdt = self.const(np.dtype(dt.numpy_dtype(dt.element_of(e.dtype))), "dt")
            view = f"np.asarray({sub(args[0])}).view({npdt})"
            return view if vector else f"{view}[()]"
        if name in _MATH:
            fn = self.const(_MATH[name], name.split(".")[-1])
            cast = self.const(_make_cast(e.dtype), "cast")
            return f"{cast}({fn}({', '.join(sub(a) for a in args)}))"
        if name == "tir.type_annotation":
            return "None"
        if name == "tir.tvm_access_ptr":
            data = self.storage.get(id(args[1]))
            if data is None:
                raise InterpreterError(f"tvm_access_ptr of unknown data {args[1]!r}")
            return f"Pointer({data}, {sub(args[2])})"
        if name == "tir.address_of":
            load = args[0]
            if not isinstance(load, E.BufferLoad):
                raise InterpreterError("address_of takes a BufferLoad")
            return f"Pointer({self.layout(load.buffer).storage}, {self.flat_index(load.buffer, load.indices)})"
        if name in ("tir.call_extern", "tir.call_pure_extern", "tir.call_llvm_intrin", "tir.call_llvm_pure_intrin"):
            callee = args[0].value if isinstance(args[0], E.StringImm) else str(args[0])
            fn = self.externs.get(callee) or _unsupported(callee)
            handle = self.const(fn, "ext")
            return f"{handle}({', '.join(sub(a) for a in args[1:])})"
        fn = self.externs.get(name) or _unsupported(name)
        return f"{self.const(fn, 'ext')}({', '.join(sub(a) for a in args)})"

    # -- statements ---------------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise InterpreterError(f"the interpreter does not support {type(s).__name__} statements")
        method(s)

    def stmt_SeqStmt(self, s):
        for x in s.seq:
            self.stmt(x)

    def stmt_BufferStore(self, s):
        layout = self.layout(s.buffer)
        index = self.flat_index(s.buffer, s.indices)
        value = self.expr(s.value)
        if s.predicate is not None:
            mask = self.fresh("mask")
            self.emit(f"{mask} = {self.expr(s.predicate)}")
            self.emit(f"{layout.storage}[({index})[{mask}]] = np.asarray({value})[{mask}]")
        else:
            self.emit(f"{layout.storage}[{index}] = {value}")

    def _loop(self, header: str, body: Callable[[], None]) -> None:
        nested = self.py_depth >= _PY_BLOCK_LIMIT
        if nested:
            fn = self.fresh("nest")
            self.emit(f"def {fn}():")
            self.indent += 1
            saved_depth, self.py_depth = self.py_depth, 0
        self.emit(header)
        self.indent += 1
        self.py_depth += 1
        mark = len(self.lines)
        body()
        if len(self.lines) == mark:
            self.emit("pass")
        self.indent -= 1
        self.py_depth -= 1
        if nested:
            self.indent -= 1
            self.py_depth = saved_depth
            self.emit(f"{fn}()")

    def stmt_For(self, s):
        lo, extent = self.expr(s.min), self.expr(s.extent)
        name = self.bind_var(s.loop_var)
        bound = extent if lo == "0" else f"{lo} + {extent}"
        self._loop(f"for {name} in range({lo + ', ' if lo != '0' else ''}{bound}):", lambda: self.stmt(s.body))

    def stmt_While(self, s):
        self._loop(f"while {self.expr(s.condition)}:", lambda: self.stmt(s.body))

    def stmt_IfThenElse(self, s):
        self.emit(f"if {self.expr(s.condition)}:")
        self._block(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self._block(s.else_case)

    def _block(self, body: S.Stmt) -> None:
        self.indent += 1
        mark = len(self.lines)
        self.stmt(body)
        if len(self.lines) == mark:
            self.emit("pass")
        self.indent -= 1

    def stmt_Evaluate(self, s):
        if isinstance(s.value, (E.IntImm, E.FloatImm)):
            return
        self.emit(self.expr(s.value))

    def stmt_LetStmt(self, s):
        value = self.expr(s.value)
        self.emit(f"{self.bind_var(s.var)} = {value}")
        self.stmt(s.body)

    def stmt_AttrStmt(self, s):
        node = s.node
        if s.attr_key in ("thread_extent", "virtual_thread") and isinstance(node, E.IterVar):
            # GPU lowering form: the thread index runs serially here.
            name = self.bind_var(node.var)
            self._loop(f"for {name} in range({self.expr(s.value)}):", lambda: self.stmt(s.body))
            return
        self.stmt(s.body)

    def stmt_AssertStmt(self, s):
        message = s.message.value if isinstance(s.message, E.StringImm) else str(s.message)
        self.emit(f"if not ({self.expr(s.condition)}):")
        self.emit(f"    raise InterpreterError({('assertion failed: ' + message)!r})")
        self.stmt(s.body)

    def _allocate(self, data: E.Var, dtype: str, size: str) -> None:
        name = self.fresh(data.name)
        npdt = self.const(np.dtype(dt.numpy_dtype(dt.element_of(dtype))), "dt")
        self.emit(f"{name} = np.zeros({size}, dtype={npdt})")
        self.storage[id(data)] = name

    def stmt_Allocate(self, s):
        size = " * ".join(self.expr(x) for x in s.extents) or "1"
        lanes = dt.lanes_of(s.dtype)
        self._allocate(s.buffer_var, s.dtype, size if lanes == 1 else f"({size}) * {lanes}")
        self.stmt(s.body)

    def stmt_DeclBuffer(self, s):
        if id(s.buffer.data) not in self.storage:
            raise InterpreterError(f"DeclBuffer {s.buffer.name!r} refers to data {s.buffer.data.name!r} that is not "
                                   "allocated; wrap it in an Allocate of that variable")
        self.stmt(s.body)

    def stmt_BlockRealize(self, s):
        block = s.block
        for iv, value in zip(block.iter_vars, s.iter_values):
            text = self.expr(value)
            self.emit(f"{self.bind_var(iv.var)} = {text}")
        guarded = not (isinstance(s.predicate, E.IntImm) and s.predicate.value)
        if guarded:
            self.emit(f"if {self.expr(s.predicate)}:")
            self.indent += 1
            mark = len(self.lines)
        self.stmt_Block(block)
        if guarded:
            if len(self.lines) == mark:
                self.emit("pass")
            self.indent -= 1

    def stmt_Block(self, block):
        for iv in block.iter_vars:
            if id(iv.var) not in self.names:  # a block outside any BlockRealize: iterate its domain
                raise InterpreterError(f"block {block.name_hint!r} is not under a BlockRealize")
        for buf in block.alloc_buffers:
            size = " * ".join(self.expr(x) for x in buf.shape) or "1"
            self._allocate(buf.data, buf.dtype, size)
        for match in block.match_buffers:
            self._match_buffer(match)
        if block.init is not None:
            reduce_at_min = [f"{self.names[id(iv.var)]} == {self.expr(iv.dom.min)}" for iv in block.iter_vars
                             if iv.iter_type == E.IterVar.CommReduce]
            if reduce_at_min:
                self.emit(f"if {' and '.join(reduce_at_min)}:")
                self._block(block.init)
            else:
                self.stmt(block.init)
        self.stmt(block.body)

    def _match_buffer(self, match: S.MatchBufferRegion) -> None:
        """Bind a block's ``T.match_buffer`` view: same storage, the source's strides, offset of the region start."""
        buf, source = match.buffer, match.source
        src = self.layout(source.buffer)
        self.storage[id(buf.data)] = src.storage
        if id(buf.data) not in self.names:
            self.names[id(buf.data)] = src.storage
        start = self.flat_index(source.buffer, [r.min for r in source.region])
        offset = self.fresh(buf.name + "_offset")
        self.emit(f"{offset} = {start}")
        # The view keeps the source's layout: its axes are the trailing source axes.
        if buf.ndim > len(src.strides):
            raise InterpreterError(f"match_buffer {buf.name!r} has more dimensions than its source region")
        strides = []
        for k, stride in enumerate(src.strides[len(src.strides) - buf.ndim:]):
            name = self.fresh(f"{buf.name}_stride{k}")
            self.emit(f"{name} = {stride}")
            strides.append(name)
        self._bind_symbols(buf.elem_offset, offset)
        for declared, actual in zip(buf.strides, strides):
            self._bind_symbols(declared, actual)
        for declared, region in zip(buf.shape, source.region[len(source.region) - buf.ndim:]):
            self._bind_symbols(declared, self.expr(region.extent))
        self.layouts[(id(buf), src.storage)] = _Layout(src.storage, strides, offset)

    def _bind_symbols(self, declared: E.PrimExpr, actual: str) -> None:
        if isinstance(declared, E.Var) and id(declared) not in self.names:
            self.emit(f"{self.bind_var(declared)} = {actual}")
