"""Lowered TensorIR to CUDA C: the host/device split, kernels, shared/local/WMMA storage and barriers.

Host/device split: the body of a lowered PrimFunc is a sequence of loop nests; each top-level nest
that binds loops to ``blockIdx.*``/``threadIdx.*`` becomes one ``__global__`` kernel
(``<name>_kernel``, ``<name>_kernel_1``, ...), launched in order by the host function with the grid
and block the binding extents give. A thread-bound loop becomes ``int v = threadIdx.x;`` (guarded when
its extent is smaller than the block's), ``vthread.*`` loops run serially in each thread.

Storage scopes: ``shared`` -> ``__shared__`` arrays, ``local`` -> registers (plain arrays),
``wmma.matrix_a`` / ``wmma.matrix_b`` / ``wmma.accumulator`` -> ``nvcuda::wmma::fragment`` arrays
whose shape and layout come from the ``tvm_load_matrix_sync``/``tvm_fill_fragment`` calls on them,
``warp`` -> one register array per lane (``warp_memory``: the ``mma.sync`` operands).

Barriers: in a statement sequence inside a kernel, a ``__syncthreads()`` goes before and after each
statement that writes shared memory (a cooperative fetch), so that no thread reads a tile before all
have written it and no thread overwrites a tile another still reads (the previous loop iteration).
Inside a software pipeline (``pipeline_explicit_sync``) the pass placed the barriers itself.

Vector stores (a vectorized cooperative fetch) are wide accesses or ``cp.async`` copies (``vector``).
"""
from __future__ import annotations

from ...errors import TVMError
from ...ir import dtype as dt
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.functor import calls_op, post_order_visit, uses_any
from .expr import CudaExprPrinter, c_type
from .tma import install_tma_calls
from .vector import WIDE_TYPES, aligned_ramp, lane
from .warp import FragmentInfo, install_warp_calls
from .warp_memory import WarpMemoryLowering
from .wgmma import barrier_prefix, install_wgmma_calls

# (dtype, lanes) -> (vector type, constructor from the lanes' f32 values) of a store from registers
_REGISTER_VECTOR_STORES = {("float32", 2): ("float2", "make_float2"), ("float32", 4): ("float4", "make_float4"),
                           ("float16", 2): ("half2", "__floats2half2_rn"),
                           ("bfloat16", 2): ("__nv_bfloat162", "__floats2bfloat162_rn")}
SWIZZLE_ALIGN = 1024  # the span of a Tensor Core swizzle pattern: the base of a swizzled tile must be aligned to it

_THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")
# attributes of a software pipeline that hold for the statements under them: attr key -> writer flag
_SCOPED_FLAGS = {"async_scope": "in_async", "pipeline_explicit_sync": "explicit_sync"}
STATIC_SHARED_LIMIT = 48 * 1024  # bytes of static __shared__ per block; beyond it shared memory is dynamic
HEADER = """#include <cuda_fp16.h>
#include <mma.h>
"""


def _tag(loop) -> str:
    return loop.thread_binding.thread_tag if loop.thread_binding is not None else ""


class _Scan:
    """Thread extents and the storage scopes of allocations in a statement."""

    def __init__(self, body):
        self.extents: dict[str, int] = {}
        self.scopes: dict = {}
        post_order_visit(body, self._visit)

    def _visit(self, node):
        if isinstance(node, S.For) and node.kind == S.ForKind.THREAD_BINDING and _tag(node) in _THREAD_TAGS:
            tag = _tag(node)
            if not isinstance(node.extent, E.IntImm):
                raise TVMError(f"the loop bound to {tag} has the symbolic extent {node.extent}; CUDA launches "
                               "need constant thread extents here (split the loop by a constant factor)")
            self.extents[tag] = max(self.extents.get(tag, 1), int(node.extent.value))
        elif isinstance(node, S.Allocate):
            annotation = getattr(node.buffer_var, "type_annotation", None)
            self.scopes[node.buffer_var] = getattr(annotation, "storage_scope", "global")


def _touches_shared(stmt, shared_vars, writes: bool) -> bool:
    """Whether ``stmt`` writes (or reads) a buffer of ``shared_vars``."""
    found = []

    def visit(node):
        if writes and isinstance(node, S.BufferStore) and node.buffer.data in shared_vars:
            found.append(node)
        elif not writes and isinstance(node, E.BufferLoad) and node.buffer.data in shared_vars:
            found.append(node)
        elif isinstance(node, E.Call) and node.op.name == "tir.tvm_access_ptr" and node.args[1] in shared_vars:
            if int(node.args[4].value) & (2 if writes else 1):
                found.append(node)

    post_order_visit(stmt, visit)
    return bool(found)


class KernelWriter(CudaExprPrinter):
    """Writes one kernel: ``write(name, params, body) -> (source, grid, block)``."""

    def __init__(self, buffer_map, scan: _Scan):
        super().__init__()
        self.buffer_map, self.scan = buffer_map, scan
        self.lines: list[str] = []
        self.indent = 1
        self.fragments = FragmentInfo()
        self.shared_vars = {v for v, scope in scan.scopes.items() if scope.startswith("shared")}
        self.loop_depth = 0
        self.dynamic_offsets: dict = {}  # shared buffer var -> byte offset in the dynamic shared array
        self.dynamic_bytes = 0
        self.lets: dict = {}  # let-bound variables in scope (for alignment proofs of vector accesses)
        self.in_async = False  # inside a software pipeline's producer stage (``async_scope``)
        self.explicit_sync = False  # inside a software pipeline: its barriers are in the IR already
        install_warp_calls(self)
        install_wgmma_calls(self)
        install_tma_calls(self)
        self.tensor_maps: list = []  # (src data var, dtype, ld, rows, cols, swizzle) of each descriptor parameter
        self.cluster = 1  # CTAs per thread block cluster along x (the ``cluster_dims`` attribute)
        self.uses_wgmma = False  # set by ``write``: barriers then wait for the pending wgmma groups
        self.compute_lag = 0  # inside a software pipeline whose compute may lag its barrier (extra versions)

    def _plan_shared(self, body) -> None:
        """Use one dynamic shared array when the kernel's shared buffers exceed the static limit (or one
        is ``shared.dyn``)."""
        allocs = []
        post_order_visit(body, lambda n: allocs.append(n) if isinstance(n, S.Allocate)
                         and self.scan.scopes.get(n.buffer_var, "").startswith("shared") else None)
        sizes = []
        for a in allocs:
            n = 1
            for extent in a.extents:
                n *= int(extent.value) if isinstance(extent, E.IntImm) else 0
            sizes.append(n * max(1, dt.bits_of(a.dtype) * dt.lanes_of(a.dtype) // 8))
        dynamic = any(self.scan.scopes[a.buffer_var] == "shared.dyn" for a in allocs)
        if not dynamic and sum(sizes) <= STATIC_SHARED_LIMIT:
            return
        offset = 0
        for a, size in reversed(list(zip(allocs, sizes))):  # post-order lists inner allocations first
            align = self._shared_align(size)
            offset = (offset + align - 1) // align * align
            self.dynamic_offsets[a.buffer_var] = offset
            offset += (size + 127) // 128 * 128
        self.dynamic_bytes = offset

    def _shared_align(self, nbytes: int) -> int:
        """The alignment of a shared buffer of ``nbytes``: 128 (WMMA fragment pointers need 32), 1024 in a wgmma
        kernel for whole 1024-byte blocks (a swizzled tile's base must be aligned to its pattern's span)."""
        return SWIZZLE_ALIGN if self.uses_wgmma and nbytes % SWIZZLE_ALIGN == 0 else 128

    def tensor_map_param(self, spec) -> str:
        """The name of the TMA descriptor parameter for ``spec`` (added to the kernel's parameters once).

        Parameters
        ----------
        spec : tuple
            ``(src data var, dtype, ld, rows, cols, swizzle)``.

        Returns
        -------
        str
            The parameter's name.
        """
        key = (id(spec[0]), *spec[1:])
        for i, known in enumerate(self.tensor_maps):
            if (id(known[0]), *known[1:]) == key:
                return f"tz_tmap_{i}"
        self.tensor_maps.append(spec)
        return f"tz_tmap_{len(self.tensor_maps) - 1}"

    def emit(self, line: str) -> None:
        """Append a line at the current indentation (a repeated ``__syncthreads();`` is dropped).

        Parameters
        ----------
        line : str
            A line of CUDA C.
        """
        if line == "__syncthreads();" and self.lines and self.lines[-1].strip() == line:
            return
        if line == "__syncthreads();" and self.uses_wgmma:
            for before in barrier_prefix(self.compute_lag):
                if not (self.lines and self.lines[-1].strip() == before):
                    self.lines.append("  " * self.indent + before)
        self.lines.append("  " * self.indent + line)

    def write(self, name: str, params, body, workspaces=()):
        """Write the kernel ``name`` of ``body``.

        Parameters
        ----------
        name : str
            The kernel's name.
        params : list of Var
            The function's parameters (buffers become ``__restrict__`` pointers).
        body : Stmt
            The kernel's statement (thread-bound loops become thread indices).
        workspaces : sequence of tuple
            ``(data var, dtype)`` of the global buffers the host allocates, passed after ``params``.

        Returns
        -------
        tuple
            ``(source, grid, block)``: the ``__global__`` function's C text and the launch's (x, y, z) extents.
        """
        body = WarpMemoryLowering(self.scan.scopes, self.scan.extents.get("threadIdx.x", 1)).lower(body)
        self.uses_wgmma = calls_op(body, "tir.ptx_wgmma")
        self.fragments.scan(body)
        self._plan_shared(body)
        args = []
        for p in params:
            buf = self.buffer_map.get(p)
            if buf is not None:
                args.append(f"{c_type(buf.dtype)}* __restrict__ {self.name_of(buf.data)}")
            elif p.dtype == "handle":
                args.append(f"void* __restrict__ {self.name_of(p)}")
            else:
                args.append(f"{c_type(p.dtype)} {self.name_of(p)}")
        for var, dtype in workspaces:
            args.append(f"{c_type(dtype)}* __restrict__ {self.name_of(var)}")
        self.stmt(body)
        args += [f"const __grid_constant__ TmaDesc tz_tmap_{i}" for i in range(len(self.tensor_maps))]
        ext = self.scan.extents
        grid = tuple(ext.get(f"blockIdx.{a}", 1) for a in "xyz")
        block = tuple(ext.get(f"threadIdx.{a}", 1) for a in "xyz")
        threads = block[0] * block[1] * block[2]
        cluster = f"__cluster_dims__({self.cluster}, 1, 1) " if self.cluster > 1 else ""
        head = f'extern "C" __global__ void {cluster}__launch_bounds__({threads}) {name}({", ".join(args)}) {{'
        if self.dynamic_bytes:
            align = SWIZZLE_ALIGN if self.uses_wgmma else 128
            head += f"\n  extern __shared__ __align__({align}) unsigned char dyn_shared[];"
        return "\n".join([head, *self.lines, "}"]) + "\n", grid, block

    # -- statements -----------------------------------------------------------------------------
    def stmt(self, s) -> None:
        """Write statement ``s`` (dispatched on its type to ``emit_<Type>``).

        Parameters
        ----------
        s : Stmt
            The statement.

        Raises
        ------
        TVMError
            For a statement kind the CUDA codegen does not support.
        """
        method = getattr(self, "emit_" + type(s).__name__, None)
        if method is None:
            raise TVMError(f"CUDA codegen does not support the statement {type(s).__name__}; build lowered TensorIR")
        method(s)

    def emit_SeqStmt(self, s):
        items = list(s.seq)
        for item in items:
            writes = (_touches_shared(item, self.shared_vars, writes=True)
                      if self.shared_vars and not self.explicit_sync else False)
            if writes:
                self.emit("__syncthreads();")
            self.stmt(item)
            if writes:
                self.emit("__syncthreads();")

    def emit_For(self, s):
        tag = _tag(s)
        var = self.name_of(s.loop_var)
        if s.kind == S.ForKind.THREAD_BINDING and tag in _THREAD_TAGS:
            self.emit("{")
            self.indent += 1
            guarded = int(s.extent.value) < self.scan.extents[tag]
            if guarded or uses_any(s.body, {id(s.loop_var)}):
                self.emit(f"int {var} = {tag};")
            if guarded:
                self.emit(f"if ({var} < {s.extent.value}) {{")
                self.indent += 1
            self.stmt(s.body)
            if guarded:
                self.indent -= 1
                self.emit("}")
            self.indent -= 1
            self.emit("}")
            return
        if s.kind == S.ForKind.UNROLLED:
            self.emit("#pragma unroll")
        lo = self.expr(s.min)
        hi = self.expr(s.extent) if isinstance(s.min, E.IntImm) and s.min.value == 0 else f"{lo} + {self.expr(s.extent)}"
        ty = c_type(s.loop_var.dtype)
        self.emit(f"for ({ty} {var} = {lo}; {var} < {hi}; ++{var}) {{")
        self.indent += 1
        self.loop_depth += 1
        self.stmt(s.body)
        self.loop_depth -= 1
        self.indent -= 1
        self.emit("}")

    def emit_Allocate(self, s):
        scope = self.scan.scopes.get(s.buffer_var, "global")
        name = self.name_of(s.buffer_var)
        size = 1
        for extent in s.extents:
            if not isinstance(extent, E.IntImm):
                raise TVMError(f"the {scope} buffer {name} has the symbolic size {extent}; GPU buffers need constant sizes")
            size *= int(extent.value)
        if scope.startswith("wmma."):
            self.emit(self.fragments.declaration(s.buffer_var, name, scope, s.dtype, size))
        elif s.buffer_var in self.dynamic_offsets:
            ctype = c_type(s.dtype)
            self.emit(f"{ctype}* {name} = ({ctype}*)(dyn_shared + {self.dynamic_offsets[s.buffer_var]});")
        elif scope in ("shared", "shared.dyn"):
            align = self._shared_align(size * max(1, dt.bits_of(s.dtype) // 8))
            self.emit(f"__shared__ alignas({align}) {c_type(s.dtype)} {name}[{size}];")
        elif scope in ("local", "warp", "warp.group", "global"):
            if scope == "global":
                raise TVMError(f"kernel allocates the global buffer {name}; give it a 'shared' or 'local' scope "
                               "(cache_read/cache_write with a GPU scope)")
            self.emit(f"{c_type(s.dtype)} {name}[{size}];")
        else:
            raise TVMError(f"CUDA codegen does not know the storage scope {scope!r} of {name}")
        self.stmt(s.body)

    def emit_DeclBuffer(self, s):
        self.stmt(s.body)

    def emit_AttrStmt(self, s):
        if s.attr_key == "cluster_dims":
            self.cluster = int(s.value.value)
            self.stmt(s.body)
            return
        if s.attr_key == "pipeline_compute_lag":
            outer, self.compute_lag = self.compute_lag, int(s.value.value)
            self.stmt(s.body)
            self.compute_lag = outer
            return
        flag = _SCOPED_FLAGS.get(s.attr_key)
        if flag is None:
            self.stmt(s.body)
            return
        outer = getattr(self, flag)
        setattr(self, flag, True)
        self.stmt(s.body)
        setattr(self, flag, outer)

    def emit_BufferStore(self, s):
        if len(s.indices) != 1:
            raise TVMError(f"CUDA codegen takes flattened buffers; {s.buffer.name} has {len(s.indices)} indices")
        if dt.lanes_of(s.value.dtype) > 1 or dt.lanes_of(s.indices[0].dtype) > 1:
            self._vector_store(s)
            return
        self.emit(f"{self.name_of(s.buffer.data)}[{self.expr(s.indices[0])}] = {self.expr(s.value)};")

    def _scope(self, buffer) -> str:
        return self.scan.scopes.get(buffer.data, "global")

    def _vector_store(self, s):
        """A vector store: one wide access (or ``cp.async``) for an aligned global/shared copy, one
        ``float2``/``float4`` store of f32 lanes from registers to an aligned address, lanes one by one
        otherwise."""
        value, index = s.value, s.indices[0]
        elem = max(1, dt.bits_of(s.buffer.dtype) // 8)
        scopes = ("global", "shared", "shared.dyn")
        if (s.predicate is None and isinstance(value, E.BufferLoad) and len(value.indices) == 1
                and value.predicate is None and value.buffer.dtype == s.buffer.dtype
                and self._scope(s.buffer) in scopes and self._scope(value.buffer) in scopes):
            dst = aligned_ramp(index, elem, self.lets)
            src = aligned_ramp(value.indices[0], elem, self.lets)
            if dst is not None and src is not None:
                width = index.lanes * elem
                dst_ptr = f"({self.name_of(s.buffer.data)} + {self.expr(dst)})"
                src_ptr = f"({self.name_of(value.buffer.data)} + {self.expr(src)})"
                if (self.in_async and width in (4, 8, 16) and self._scope(s.buffer).startswith("shared")
                        and self._scope(value.buffer) == "global"):
                    self.emit(f"tz_cp_async{width}({dst_ptr}, {src_ptr});")
                else:
                    wide = WIDE_TYPES[width]
                    self.emit(f"*({wide}*){dst_ptr} = *(const {wide}*){src_ptr};")
                return
        if s.predicate is None and self._scope(s.buffer) in scopes and (s.buffer.dtype, dt.lanes_of(value.dtype)) in \
                _REGISTER_VECTOR_STORES:
            # lanes from registers (an accumulator tile) to memory: one float2 / float4 store, or a pair of f32
            # rounded to one half2 / bfloat162 store
            dst = aligned_ramp(index, elem, self.lets)
            if dst is not None:
                n = dt.lanes_of(value.dtype)
                vector, make = _REGISTER_VECTOR_STORES[(s.buffer.dtype, n)]
                rounded = isinstance(value, E.Cast) and s.buffer.dtype != "float32"
                parts = ", ".join(self.expr(lane(value.value if rounded else value, i)) for i in range(n))
                self.emit(f"*({vector}*)({self.name_of(s.buffer.data)} + {self.expr(dst)}) = {make}({parts});")
                return
        lanes = dt.lanes_of(value.dtype) if dt.lanes_of(value.dtype) > 1 else dt.lanes_of(index.dtype)
        name = self.name_of(s.buffer.data)
        for i in range(lanes):
            line = f"{name}[{self.expr(lane(index, i))}] = {self.expr(lane(value, i))};"
            if s.predicate is not None:
                line = f"if ({self.expr(lane(s.predicate, i))}) {line}"
            self.emit(line)

    def emit_LetStmt(self, s):
        if not uses_any(s.body, {id(s.var)}):  # e.g. a lane offset the warp-memory lowering removed
            self.stmt(s.body)
            return
        self.emit(f"{c_type(s.var.dtype) if s.var.dtype != 'handle' else 'void*'} {self.name_of(s.var)} = {self.expr(s.value)};")
        self.lets[s.var] = s.value
        self.stmt(s.body)
        self.lets.pop(s.var, None)

    def emit_IfThenElse(self, s):
        self.emit(f"if ({self.expr(s.condition)}) {{")
        self.indent += 1
        self.stmt(s.then_case)
        self.indent -= 1
        if s.else_case is not None:
            self.emit("} else {")
            self.indent += 1
            self.stmt(s.else_case)
            self.indent -= 1
        self.emit("}")

    def emit_Evaluate(self, s):
        if not isinstance(s.value, (E.IntImm, E.FloatImm)):
            self.emit(self.expr(s.value) + ";")

    def emit_AssertStmt(self, s):
        self.stmt(s.body)

    def emit_While(self, s):
        self.emit(f"while ({self.expr(s.condition)}) {{")
        self.indent += 1
        self.stmt(s.body)
        self.indent -= 1
        self.emit("}")
