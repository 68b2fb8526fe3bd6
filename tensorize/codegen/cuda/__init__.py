"""CUDA C source generation for ``target="cuda -arch=sm_80"`` (also ``sm_86``, ``sm_90``).

``build(lowered_mod, target)`` splits each PrimFunc into ``__global__`` kernels (one per top-level
thread-bound loop nest) and a host function that launches them in order, and returns a host
``CUDAHostModule`` whose ``imported_modules[0].get_source()`` is the CUDA C, as TVM's does.
Launching needs cupy and a GPU (see ``tensorize.runtime.cuda_module``).

>>> import tensorize as tvm
>>> from tensorize import te, tir
>>> A = te.placeholder((256,), name="A")
>>> B = te.compute((256,), lambda i: A[i] * 2.0, name="B")
>>> sch = tir.Schedule(te.create_prim_func([A, B]))
>>> bx, tx = sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 64])
>>> sch.bind(bx, "blockIdx.x"); sch.bind(tx, "threadIdx.x")
>>> rt = tvm.build(sch.mod, target="cuda -arch=sm_80")
>>> "__global__ void __launch_bounds__(64) main_kernel(" in rt.imported_modules[0].get_source()
True
"""
from __future__ import annotations

from ...errors import TVMError
from ...ir import expr as E
from ...ir import stmt as S
from ...ir.function import PrimFunc
from ...ir.functor import post_order_visit
from ...runtime.cuda_module import CUDAHostModule, CUDASourceModule, KernelLaunch
from ...transform.warp_specialize import inject_warp_specialization
from .source import HEADER, KernelWriter, _Scan
from .tma import TMA_HELPERS, tensor_map_specs
from .vector import ASYNC_HELPERS
from .wgmma import WGMMA_HELPERS


def _has_thread_binding(stmt) -> bool:
    found = []
    post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, S.For) and n.kind == S.ForKind.THREAD_BINDING
                     and n.thread_binding is not None and n.thread_binding.thread_tag.startswith(("blockIdx", "threadIdx"))
                     else None)
    return bool(found)


def _is_global_allocate(node) -> bool:
    annotation = getattr(node.buffer_var, "type_annotation", None)
    return getattr(annotation, "storage_scope", "global") == "global"


def workspaces(body) -> list:
    """The global buffers a function allocates outside its kernels (intermediate results of one kernel
    that a later one reads): ``[(data var, dtype, elements), ...]``; the host allocates them.

    Parameters
    ----------
    body : Stmt
        A lowered PrimFunc's body.

    Returns
    -------
    list of tuple
        One entry per workspace buffer, outermost first.
    """
    out = []
    while isinstance(body, (S.DeclBuffer, S.AttrStmt, S.Allocate)):
        if isinstance(body, S.Allocate):
            if not _is_global_allocate(body):
                break
            size = 1
            for extent in body.extents:
                if not isinstance(extent, E.IntImm):
                    raise TVMError(f"the global buffer {body.buffer_var.name} has the symbolic size {extent}; "
                                   "workspaces between kernels need constant sizes")
                size *= int(extent.value)
            out.append((body.buffer_var, body.dtype, size))
        body = body.body
    return out


def _top_level(body):
    while isinstance(body, (S.DeclBuffer, S.AttrStmt)) or (isinstance(body, S.Allocate) and _is_global_allocate(body)):
        body = body.body
    return list(body.seq) if isinstance(body, S.SeqStmt) else [body]


def split_kernels(name: str, func: PrimFunc):
    """The kernels of ``func``: ``[(kernel_name, source, grid, block), ...]`` in launch order.

    Each top-level thread-bound statement of the body becomes one kernel; global buffers allocated
    around them (``workspaces``) become extra kernel parameters, after the function's.

    Parameters
    ----------
    name : str
        The function's name; kernels are ``{name}_kernel``, ``{name}_kernel_1``, ...
    func : PrimFunc
        A lowered PrimFunc whose statements run inside loops bound to ``blockIdx``/``threadIdx``.

    Loops annotated for warp specialisation get their TMA producer warpgroup first
    (``InjectWarpSpecialization``).

    Returns
    -------
    list of tuple
        ``(kernel_name, source, grid, block, dynamic_shared_bytes, tensor_maps)``: the CUDA C source, the
        launch's (x, y, z) extents, its dynamic shared memory (0: static ``__shared__`` arrays only) and the
        ``TensorMapSpec`` s of its TMA descriptor parameters.

    Raises
    ------
    TVMError
        When a statement runs outside any thread-bound loop.
    """
    kernels = []
    func = inject_warp_specialization(func)
    spaces = workspaces(func.body)
    # the host passes every parameter, then the workspaces: a TMA source's descriptor is made from its argument
    argument_index = {func.buffer_map[p].data: i for i, p in enumerate(func.params) if p in func.buffer_map}
    argument_index.update({v: len(func.params) + i for i, (v, _, _) in enumerate(spaces)})
    for item in _top_level(func.body):
        if isinstance(item, S.Evaluate) and not hasattr(item.value, "op"):
            continue
        if not _has_thread_binding(item):
            raise TVMError(f"{name}: a statement runs outside any thread-bound loop; a CUDA kernel needs its "
                           "outer loops bound with sch.bind(loop, 'blockIdx.x') and sch.bind(loop, 'threadIdx.x')")
        kname = f"{name}_kernel" + (f"_{len(kernels)}" if kernels else "")
        writer = KernelWriter(dict(func.buffer_map), _Scan(item))
        source, grid, block = writer.write(kname, func.params, item, [(v, d) for v, d, _ in spaces])
        kernels.append((kname, source, grid, block, writer.dynamic_bytes,
                        tensor_map_specs(writer.tensor_maps, argument_index)))
    return kernels


def build(mod, target):
    """Lowered IRModule to a ``CUDAHostModule`` for ``target`` (a cuda Target).

    Parameters
    ----------
    mod : IRModule
        The lowered module; every PrimFunc becomes a host function launching its kernels.
    target : Target
        A cuda target (its ``arch`` picks the NVRTC architecture).

    Returns
    -------
    CUDAHostModule
        The host module over one ``CUDASourceModule`` (compiled by NVRTC at the first launch).
    """
    sources, functions = [HEADER], {}
    for gv, func in mod.functions.items():
        if not isinstance(func, PrimFunc):
            continue
        name = func.attrs.get("global_symbol", gv.name_hint)
        launches = []
        for kname, source, grid, block, shared, maps in split_kernels(name, func):
            sources.append(source)
            launches.append(KernelLaunch(kname, grid, block, shared, maps))
        params = [(func.buffer_map[p].dtype, tuple(func.buffer_map[p].shape)) if p in func.buffer_map else (p.dtype, None)
                  for p in func.params]
        functions[name] = (launches, params, [(d, n) for _, d, n in workspaces(func.body)])
    if any("tz_cp_async" in src for src in sources[1:]):
        sources.insert(1, ASYNC_HELPERS)
    if any("tz_wgmma" in src for src in sources[1:]):
        arch = getattr(target, "arch", "") or "sm_80"
        if arch != "sm_90a":
            raise TVMError(f"the program uses Hopper's wgmma.mma_async, which only sm_90a has; the target asks "
                           f"for {arch}: build for 'cuda -arch=sm_90a'")
        sources.insert(1, WGMMA_HELPERS)
    if any("tz_tma_load_2d" in src or "tz_mbar_" in src for src in sources[1:]):
        sources.insert(1, TMA_HELPERS)
    device = CUDASourceModule("\n".join(sources), target)
    return CUDAHostModule(functions, device, target)
