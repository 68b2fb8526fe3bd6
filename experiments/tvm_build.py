"""The build function handed to TVM MetaSchedule's ``LocalBuilder`` workers (a module of its own, so a
worker that unpickles it imports nothing heavier than TVM).

TVM's default build imports ``tvm.s_tir.tensor_intrin`` in every fresh worker, which parses several
hundred TVMScript intrinsics: about 80 s of CPU on a Zen 3 core, far past the builder's 30 s timeout, so
every candidate failed with "LocalBuilder: Timeout". A candidate reaches the builder already tensorized,
so the registry is not needed there; everything else is what TVM's default build does.
"""
from __future__ import annotations

__all__ = ["build_candidate"]


def build_candidate(mod, target, params):
    """Compile one MetaSchedule candidate like TVM's ``default_build``, without the intrinsic registry."""
    if params:
        raise ValueError("this builder takes no bound parameters; MetaSchedule passes none for tune_tir")
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return tvm_build(RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod), target=target)
