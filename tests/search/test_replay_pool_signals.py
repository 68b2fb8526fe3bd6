"""The forked replay pool's workers take the default SIGTERM/SIGINT handlers back, whatever the parent installed
(Ray's driver installs a Python SIGTERM handler that calls ``sys.exit``): ``Pool.terminate`` then ends them at
once instead of running inherited Python code that can block on the task queue's lock (a hang seen in the test
suite when a Ray test had run earlier in the same process)."""
from __future__ import annotations

import signal
import sys
import threading

import pytest

from search.context import TuneContext
from search.postproc import default_postprocs
from search.space_generator import PostOrderApply, replay_candidate
from search.strategy import SearchSpace
from search.strategy.parallel import ReplayPool
from tensorize.target import Target
from tests.search.test_tune import HOST, gemm_func


def _sigterm_is_default(_=None) -> bool:
    return signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and signal.getsignal(signal.SIGINT) == signal.SIG_DFL


@pytest.mark.skipif(not hasattr(signal, "SIGTERM"), reason="no POSIX signals")
def test_workers_end_on_sigterm_whatever_the_parent_installed():
    ctx = TuneContext.create(gemm_func(64), Target(HOST), seed=0)
    space = SearchSpace(PostOrderApply().generate_design_space(ctx), default_postprocs(ctx), {}, replay_candidate)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))  # as Ray's driver does
    try:
        pool = ReplayPool(ctx, space, None, workers=2)
        assert pool.workers == 2
        assert all(pool._pool.map(_sigterm_is_default, range(4)))
        assert len(pool.run([(space.sketches[0].trace, True, seed) for seed in range(4)])) == 4
        closer = threading.Thread(target=pool.close, daemon=True)
        closer.start()
        closer.join(timeout=60)
        assert not closer.is_alive(), "ReplayPool.close hung"
    finally:
        signal.signal(signal.SIGTERM, previous)
