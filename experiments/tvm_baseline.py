"""Apache TVM MetaSchedule as a baseline: our workload's TVMScript handed to TVM (0.27's dialect), tuned
with the same trial budget on the same CPU and thread count, checked against the numpy reference and
timed with the same method as our kernels. Skipped with a log line when TVM is not installed. With
TVM installed (a tuning run, minutes)::

    ms = tvm_metaschedule_ms(workload, inputs, expected, trials=64, work_dir="tuning/tvm", mcpu="znver3")
"""
from __future__ import annotations

import logging
import os
import re
import time

import numpy as np

from .baselines import time_callable

log = logging.getLogger(__name__)

__all__ = ["tvm_metaschedule_ms", "to_tvm_dialect"]


def to_tvm_dialect(text: str) -> str:
    """Our TVMScript (older TVM's spelling) in TVM 0.27's: ``T.sblock``, ``s_tir=True``, ``tirx.noalias``."""
    text = re.sub(r"@T\.prim_func\((.*?)\)", r"@T.prim_func(s_tir=True, \1)", text)
    text = re.sub(r"@T\.prim_func\n", "@T.prim_func(s_tir=True)\n", text)
    return (text.replace("T.block(", "T.sblock(").replace("T.block_attr(", "T.sblock_attr(")
            .replace("T.alloc_buffer(", "T.sblock_alloc_buffer(").replace('"tir.noalias"', '"tirx.noalias"'))


def tvm_metaschedule_ms(workload, inputs, expected, trials: int = 64, work_dir: str = "tuning/tvm",
                        mcpu: str = "native", number: int = 10, repeat: int = 5,
                        build_timeout: float = 60.0) -> float | None:
    """Milliseconds per call of TVM MetaSchedule's best program, or None (not installed, or it failed).

    Candidates build in TVM's ``LocalBuilder`` with :func:`experiments.tvm_build.build_candidate` (TVM's
    default build minus an 80-second import per worker that made every build time out).
    """
    try:
        import tvm as apache_tvm  # Apache TVM, not this project
        from tvm.s_tir import meta_schedule as ms
    except ImportError as err:
        log.info("TVM MetaSchedule baseline skipped: %s not installed (pip install -e '.[tvm]')", err.name)
        return None
    from tensorize import te

    from .tvm_build import build_candidate

    try:
        func = te.create_prim_func(workload.args)
        mod = apache_tvm.script.from_source(to_tvm_dialect(func.script()))
        if not isinstance(mod, apache_tvm.IRModule):
            mod = apache_tvm.IRModule({"main": mod.with_attr("global_symbol", "main")})
        target = apache_tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": os.cpu_count() or 2})
        start = time.perf_counter()
        builder = ms.builder.LocalBuilder(f_build=build_candidate, timeout_sec=build_timeout)
        db = ms.tune_tir(mod, target, work_dir, max_trials_global=trials, num_trials_per_iter=16, builder=builder)
        log.info("TVM MetaSchedule tuned %s in %.0f s", workload.name, time.perf_counter() - start)
        sch = ms.tir_integration.compile_tir(db, mod, target)
        lib = apache_tvm.compile(sch.mod, target=target)
        dev = apache_tvm.cpu()
        args = [apache_tvm.runtime.tensor(x, dev) for x in inputs]
        out = apache_tvm.runtime.tensor(np.zeros(workload.output_shape(), workload.output_dtype), dev)
        lib["main"](*args, out)
        if not np.allclose(out.numpy(), expected, rtol=1e-3, atol=1e-3):
            log.warning("TVM MetaSchedule's program disagrees with the numpy reference: baseline dropped")
            return None
        return 1e3 * float(np.median(time_callable(lambda: lib["main"](*args, out), number=number, repeat=repeat)))
    except Exception as err:  # noqa: BLE001 - a peer's failure is reported, not fatal
        log.warning("TVM MetaSchedule baseline failed: %s: %s", type(err).__name__, str(err)[:300])
        return None
