"""An IRModule of lowered PrimFuncs to one LLVM module, compiled into a runtime ``Module``.

Each PrimFunc becomes one external C function named after its ``global_symbol`` (or its name in
the IRModule) with the calling convention of ``tensorize.runtime.signature``: buffer data pointers
(``noalias`` under ``tir.noalias``, ``align`` from the buffer's ``data_alignment``), scalars, then
the symbolic shape variables; it returns 0 or -1 with a message in ``__tensorize_last_error``.

Host targets are compiled in process with MCJIT at O3 (on the first call: a module only exported
is never compiled in process); other targets (``-mtriple=aarch64-...``)
give an object file and assembly only.
"""
from __future__ import annotations

import logging
import re
import time

import llvmlite.ir as ir

from ...errors import TVMError
from ...ir import dtype as dt
from ...ir import expr as E
from ...ir.function import PrimFunc
from ...runtime.library import num_threads
from ...runtime.module import Module
from ...runtime.signature import BufferParam, FunctionSignature, ScalarParam
from ...target import Target
from ...target.llvm import code_features
from . import backend
from .function import FunctionCodegen, scalar_param_type
from .scalable import ScalableBridges, with_vscale_range
from .types import I1, I32, PTR, llvm_type

logger = logging.getLogger(__name__)

ERROR_GLOBAL = "__tensorize_last_error"
THREADS_GLOBAL = "__tensorize_num_threads"
_LOOP_ID = re.compile(r'^(!\d+) = !\{ !"tensorize\.loop\.\d+", ', re.M)


class ModuleContext:
    """Module-wide state of one build: the llvmlite module, declarations, strings, loop metadata."""

    def __init__(self, name: str, target: Target):
        self.target = target
        self.module = ir.Module(name)
        self.module.triple = backend.normalize_triple(target.mtriple)
        self.error_global = ir.GlobalVariable(self.module, PTR, ERROR_GLOBAL)
        self.error_global.initializer = ir.Constant(PTR, None)
        self.num_threads_global = ir.GlobalVariable(self.module, I32, THREADS_GLOBAL)
        self.num_threads_global.initializer = ir.Constant(I32, 0)
        self.uses_openmp = False
        self.scalable_bridges = ScalableBridges()
        self._strings: dict[str, ir.GlobalVariable] = {}
        self._loops = 0

    def declare(self, name: str, ret: ir.Type, args: list, readnone: bool = False) -> ir.Function:
        """The function ``name`` with this type, declared once; a clash with another type is an error.

        Parameters
        ----------
        name : str
            The function's name.
        ret : ir.Type
            The return type.
        args : list of ir.Type
            The argument types.
        readnone : bool
            Mark it ``readnone``.

        Returns
        -------
        ir.Function
            The declaration.
        """
        fn_type = ir.FunctionType(ret, args)
        existing = self.module.globals.get(name)
        if existing is not None:
            if not isinstance(existing, ir.Function) or existing.function_type != fn_type:
                raise TVMError(f"function {name!r} is used with two different types: {existing.type} and {fn_type}; "
                               "make every call pass the same argument and result dtypes")
            return existing
        fn = ir.Function(self.module, fn_type, name)
        if readnone and not name.startswith("llvm."):
            fn.attributes.add("nounwind")
        return fn

    def string_constant(self, text: str) -> ir.GlobalVariable:
        """A private global holding ``text`` as a NUL-terminated string (one per distinct text).

        Parameters
        ----------
        text : str
            The text.

        Returns
        -------
        ir.GlobalVariable
            The global.
        """
        if text not in self._strings:
            data = bytearray(text.encode("utf-8") + b"\0")
            var = ir.GlobalVariable(self.module, ir.ArrayType(ir.IntType(8), len(data)),
                                    f".str.{len(self._strings)}")
            var.initializer = ir.Constant(var.value_type, data)
            var.global_constant = True
            var.linkage = "private"
            self._strings[text] = var
        return self._strings[text]

    def loop_metadata(self, vectorize_width: int = -1, unroll_full: bool | None = None):
        """A distinct ``llvm.loop`` node (made self-referential when the text is finalised).

        Parameters
        ----------
        vectorize_width : int
            A vectorize width hint (-1: none).
        unroll_full : bool, optional
            Ask for (True) or forbid (False) full unrolling.

        Returns
        -------
        ir.MDValue
            The metadata node.
        """
        self._loops += 1
        props = []
        if vectorize_width >= 0:
            props.append(self.module.add_metadata([ir.MetaDataString(self.module, "llvm.loop.vectorize.enable"),
                                                   ir.Constant(I1, 1)]))
            if vectorize_width > 1:
                props.append(self.module.add_metadata([ir.MetaDataString(self.module, "llvm.loop.vectorize.width"),
                                                       ir.Constant(I32, vectorize_width)]))
        if unroll_full is not None:
            key = "llvm.loop.unroll.full" if unroll_full else "llvm.loop.unroll.enable"
            props.append(self.module.add_metadata([ir.MetaDataString(self.module, key)]))
        return self.module.add_metadata([ir.MetaDataString(self.module, f"tensorize.loop.{self._loops}")] + props)

    def text(self) -> str:
        """The module's LLVM IR text, loop metadata made self-referential.

        Returns
        -------
        str
            The IR.
        """
        return _LOOP_ID.sub(lambda m: f"{m.group(1)} = distinct !{{ {m.group(1)}, ", str(self.module))


def function_name(gv, func: PrimFunc) -> str:
    """The C symbol of a PrimFunc: its ``global_symbol``, else the GlobalVar's name.

    Parameters
    ----------
    gv : GlobalVar
        The function's GlobalVar.
    func : PrimFunc
        The function.

    Returns
    -------
    str
        The symbol.
    """
    return str(func.attrs.get("global_symbol") or gv.name_hint)


def emit_prim_func(ctx: ModuleContext, name: str, func: PrimFunc) -> FunctionSignature:
    """Emit ``func`` as the C function ``name``; returns its signature.

    Parameters
    ----------
    ctx : ModuleContext
        The module being built.
    name : str
        The C symbol.
    func : PrimFunc
        The lowered function.

    Returns
    -------
    FunctionSignature
        The signature.
    """
    signature = FunctionSignature(name)
    arg_types, binders = [], []
    noalias = bool(func.attrs.get("tir.noalias") or func.attrs.get("tirx.noalias"))
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is not None:
            signature.params.append(BufferParam(buffer.name, buffer.dtype, tuple(buffer.shape), tuple(buffer.strides),
                                                buffer.elem_offset, buffer.data_alignment))
            arg_types.append(PTR)
            binders.append(("buffer", param, buffer))
        else:
            signature.params.append(ScalarParam(param.name, param.dtype))
            arg_types.append(scalar_param_type(param.dtype))
            binders.append(("scalar", param, None))
    bound = set(func.params)
    for buffer in func.buffers:
        for item in tuple(buffer.shape) + tuple(buffer.strides) + (buffer.elem_offset,):
            for var in _vars_of(item):
                if var not in bound:
                    bound.add(var)
                    signature.implicit.append(var)
                    arg_types.append(llvm_type(var.dtype))
    function = ir.Function(ctx.module, ir.FunctionType(I32, arg_types), name)
    function.attributes.add("nounwind")
    cg = FunctionCodegen(ctx, function, name)
    cg.builder.store(ir.Constant(PTR, None), ctx.error_global)
    for (kind, param, buffer), arg in zip(binders, function.args):
        arg.name = param.name
        if kind == "buffer":
            if noalias:
                arg.add_attribute("noalias")
            if buffer.data_alignment > 1:
                arg.attributes.align = buffer.data_alignment
            cg.vars[param] = arg
            cg.vars[buffer.data] = arg
            cg.data_alignment[buffer.data] = buffer.data_alignment
            if noalias:
                cg.noalias.add(buffer.data)
        else:
            cg.vars[param] = _from_c_scalar(cg, arg, param.dtype)
    for var, arg in zip(signature.implicit, function.args[len(binders):]):
        arg.name = var.name
        cg.vars[var] = arg
    cg.stmt(func.body)
    cg.finish()
    return signature


def _from_c_scalar(cg: FunctionCodegen, arg: ir.Value, dtype: str) -> ir.Value:
    t = dt.parse(dtype)
    if t.code == "bool":
        return cg.builder.icmp_unsigned("!=", arg, ir.Constant(arg.type, 0))
    if t.code == "bfloat" or (t.code == "float" and t.bits == 16):
        return cg.cast(arg, "float32", dtype)
    return arg


def _vars_of(expr) -> list:
    if isinstance(expr, E.Var):
        return [expr]
    out = []
    for field in getattr(type(expr), "_fields", ()):
        child = getattr(expr, field, None)
        if isinstance(child, E.PrimExpr):
            out += _vars_of(child)
    return out


def llvm_ir_text(mod, target: Target) -> str:
    """The LLVM IR (before optimisation) of the lowered PrimFuncs of ``mod`` for ``target``.

    Pure Python (llvmlite's IR builder): nothing reaches LLVM's backend, so no input can abort the
    process here. Callers that compile in a child process use it to keep the source beside the result.

    Parameters
    ----------
    mod : IRModule
        The lowered module.
    target : Target
        The target.

    Returns
    -------
    str
        The IR.
    """
    ctx = ModuleContext("tensorize", target)
    for gv, func in mod.functions.items():
        if isinstance(func, PrimFunc):
            emit_prim_func(ctx, function_name(gv, func), func)
    return with_vscale_range(ctx.text(), target)


def build(mod, target: Target) -> Module:
    """Compile the lowered PrimFuncs of ``mod`` for an llvm ``target``.

    Parameters
    ----------
    mod : IRModule
        The lowered module.
    target : Target
        The target.

    Returns
    -------
    Module
        The runtime module.
    """
    start = time.perf_counter()
    ctx = ModuleContext("tensorize", target)
    signatures = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, PrimFunc):
            continue
        name = function_name(gv, func)
        if name in signatures:
            raise TVMError(f"two functions are named {name!r}; give them distinct global_symbol attributes")
        signatures[name] = emit_prim_func(ctx, name, func)
    if not signatures:
        raise TVMError("the module has no PrimFunc to build")
    text = with_vscale_range(ctx.text(), target)
    from .features import check_intrinsic_features  # raises where LLVM would abort the process

    check_intrinsic_features(text, target)
    from ...runtime.amx import uses_amx

    requires_amx = uses_amx(text)
    features = code_features(target.features)  # checked against the CPU before a call (Module.features)
    if ctx.uses_openmp and target.is_host:
        backend.load_openmp()
    llvm_module = backend.parse(text)
    if ctx.scalable_bridges:
        llvm_module.link_in(backend.parse(ctx.scalable_bridges.text(target, llvm_module.triple)))
    machine = backend.create_target_machine(target, jit=target.is_host)
    llvm_module.triple = machine.triple
    llvm_module.data_layout = str(machine.target_data)
    backend.optimize(llvm_module, machine)
    optimized = str(llvm_module)

    def assembly() -> str:
        return backend.create_target_machine(target, jit=False).emit_assembly(backend.parse(optimized))

    def object_code() -> bytes:
        return backend.create_target_machine(target, jit=False).emit_object(backend.parse(optimized))

    sources = {"ll": optimized, "asm": assembly}
    if not target.is_host:
        runtime_module = Module("llvm", signatures, target, sources=sources, object_code=object_code)
        runtime_module.requires_amx = requires_amx
        runtime_module.features = features
        logger.debug("cross-compiled %s for %s in %.1f ms", list(signatures), target, (time.perf_counter() - start) * 1e3)
        return runtime_module

    def set_thread_count(engine) -> None:
        threads_address = engine.global_address(THREADS_GLOBAL)
        if threads_address:
            import ctypes

            ctypes.c_int32.from_address(threads_address).value = num_threads()

    # Machine code is generated on the first call (an exported-only module never needs it in process).
    engine = backend.LazyJit(llvm_module, machine, on_create=set_thread_count)

    def error_message(code: int) -> str:
        import ctypes

        error_address = engine.global_address(ERROR_GLOBAL)
        pointer = ctypes.c_void_p.from_address(error_address).value if error_address else None
        return ctypes.string_at(pointer).decode("utf-8", "replace") if pointer else ""

    runtime_module = Module("llvm", signatures, target, resolve=engine.function_address, sources=sources,
                            object_code=object_code, error_message=error_message, keep_alive=engine)
    runtime_module.requires_amx = requires_amx
    runtime_module.features = features
    logger.debug("compiled %s in %.1f ms", list(signatures), (time.perf_counter() - start) * 1e3)
    return runtime_module
