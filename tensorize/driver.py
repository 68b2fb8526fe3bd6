"""``tvm.lower`` and ``tvm.build``: lower a program through the pass pipeline, then generate code.

>>> import numpy as np
>>> import tensorize as tvm
>>> from tensorize import te
>>> A = te.placeholder((8,), name="A")
>>> B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
>>> func = te.create_prim_func([A, B])
>>> type(tvm.lower(func)).__name__   # an IRModule in the lowered form (see tensorize.transform)
'IRModule'
>>> rt = tvm.build(func, target="llvm")
>>> a, b = tvm.nd.array(np.arange(8, dtype="float32")), tvm.nd.array(np.zeros(8, dtype="float32"))
>>> rt["main"](a, b)
>>> b.numpy().tolist()
[0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]
"""
from __future__ import annotations

import contextlib
import logging
from typing import Any, Mapping

from .errors import BuildError, TVMError, TVMTypeError
from .ir.function import IRModule, PrimFunc
from .transform.pass_infra import PassContext
from .transform.pipeline import run_lowering_phases

logger = logging.getLogger(__name__)


def _is_te_schedule(obj) -> bool:
    return type(obj).__name__ == "Schedule" and type(obj).__module__.startswith("tensorize.te")


def _as_module(inputs, args=None, name: str = "main") -> IRModule:
    if _is_te_schedule(inputs):
        from .te.legacy import lower_te_schedule

        inputs = lower_te_schedule(inputs, args, name)
    if isinstance(inputs, PrimFunc):
        return IRModule({name: inputs})
    if isinstance(inputs, IRModule):
        return inputs
    schedule_mod = getattr(inputs, "mod", None)  # a tir.Schedule
    if isinstance(schedule_mod, IRModule):
        return schedule_mod
    raise TVMTypeError(f"cannot lower {type(inputs).__name__}; pass a PrimFunc, an IRModule, a tir.Schedule "
                    "or a te schedule with its argument tensors")


def _with_global_symbols(mod: IRModule) -> IRModule:
    functions = {}
    for gv, func in mod.functions.items():
        if isinstance(func, PrimFunc) and func.attrs.get("global_symbol") != gv.name_hint:
            func = func.with_attr("global_symbol", gv.name_hint)
        functions[gv] = func
    return IRModule(functions, mod.attrs, mod.global_infos)


def lower(inp, args=None, name: str = "main", binds=None, simple_mode: bool = False) -> IRModule:
    """Lower ``inp`` (PrimFunc, IRModule, or a te schedule with ``args``) to the lowered form.

    Parameters
    ----------
    inp : PrimFunc, IRModule or te.Schedule
        The program.
    args : list of Tensor, optional
        The parameters of a te schedule.
    name : str
        The function's name.
    binds : None
        Not supported (TVM's buffer binds).
    simple_mode : bool
        Accepted for TVM compatibility; no effect.

    Returns
    -------
    IRModule
        The lowered module.

    The phases and the ``tir.add_lower_pass`` hooks of the current ``PassContext`` apply::

        with tvm.transform.PassContext(config={"tir.add_lower_pass": [(1, my_pass)]}):
            mod = tvm.lower(func)

    Examples
    --------
    >>> lowered = tvm.lower(matmul())
    >>> lowered.function_names()
    ['main']
    """
    if binds:
        raise TVMError("lower(binds=...) is not supported; declare the buffers in the PrimFunc instead")
    mod = _as_module(inp, args, name)
    with _compile_errors("lowering"):
        mod = run_lowering_phases(mod, PassContext.current())
    return _with_global_symbols(mod)


@contextlib.contextmanager
def _compile_errors(stage: str):
    """Report an unexpected exception of the compiler on a user's program as a ``BuildError`` (the
    original stays attached as its cause), so callers catch one error family."""
    try:
        yield
    except TVMError:
        raise
    except (ValueError, TypeError, ArithmeticError, LookupError, AttributeError, AssertionError,
            NotImplementedError, RecursionError) as err:
        raise BuildError(f"{stage} failed: {type(err).__name__}: {err}") from err


def _verify(mod: IRModule) -> None:
    try:
        from .analysis.verify import verify_well_formed
    except ImportError:  # the verifier is optional
        return
    for func in mod.functions.values():
        if isinstance(func, PrimFunc):
            verify_well_formed(func)


def _as_target(target):
    from .target import Target

    if target is None:
        target = "llvm"
    return target if isinstance(target, Target) else Target(target)


def build(inputs, args=None, target: Any = None, target_host=None, runtime=None, name: str = "main",
          binds=None):
    """Compile ``inputs`` (PrimFunc, IRModule, te schedule with ``args``, or ``{target: module}``) for
    ``target`` (a string such as ``"llvm -mcpu=native"`` or a ``Target``) and return the runtime module.

    Parameters
    ----------
    inputs : PrimFunc, IRModule, te.Schedule or dict
        The program, or ``{target: program}``.
    args : list of Tensor or str, optional
        The parameters of a te schedule (or the target, TVM's old order).
    target : str, dict or Target, optional
        The target (default: the current one, else ``llvm``).
    target_host : str or Target, optional
        Accepted for TVM compatibility.
    runtime : optional
        Accepted for TVM compatibility.
    name : str
        The function's name.
    binds : None
        Not supported.

    Returns
    -------
    Module
        The runtime module; ``mod[name]`` is the callable function.

    Examples
    --------
    >>> lib = tvm.build(matmul(), target="llvm")
    >>> a = tvm.nd.array(np.ones((16, 16), "float32"))
    >>> b = tvm.nd.array(np.full((16, 16), 2.0, "float32"))
    >>> c = tvm.nd.array(np.zeros((16, 16), "float32"))
    >>> lib["main"](a, b, c)
    >>> float(c.numpy()[0, 0])
    32.0
    """
    if isinstance(inputs, Mapping) and not isinstance(inputs, IRModule):
        if len(inputs) != 1:
            raise TVMError("build({target: mod, ...}) with several targets is not supported yet; build each "
                           "target separately")
        ((target, inputs),) = inputs.items()
    if isinstance(args, str) and target is None:  # tvm.build(mod, "llvm")
        args, target = None, args
    mod = _as_module(inputs, args, name)
    _verify(mod)
    lowered = lower(mod, name=name, binds=binds)
    from .codegen import build_module

    target = _as_target(target)
    with _compile_errors("code generation"):
        return build_module(lowered, target)
