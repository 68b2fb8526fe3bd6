"""The sampler remembers replays of kept-decision traces: a trace met again is not replayed, and gives the
candidate (key, features, validity) its first replay gave."""
import numpy as np

from search.context import TuneContext
from search.feature import FEATURES
from search.postproc import default_postprocs
from search.space_generator import PostOrderApply, replay_candidate
from search.strategy import SearchSpace
from search.strategy.base import Sampler
from tensorize.schedule.trace import Trace
from tensorize.target import Target
from tests.search.test_tune import HOST, gemm_func


class _CountingPool:
    """Wraps a pool and counts the jobs it runs."""

    def __init__(self, pool):
        self.pool, self.jobs = pool, 0

    def run(self, jobs):
        self.jobs += len(jobs)
        return self.pool.run(jobs)

    def close(self):
        self.pool.close()


def _sampler(memo_size=8192):
    ctx = TuneContext.create(gemm_func(64), Target(HOST), seed=0)
    space = SearchSpace(PostOrderApply().generate_design_space(ctx), default_postprocs(ctx), {}, replay_candidate)
    sampler = Sampler(ctx, space, FEATURES.create("per_store"), workers=1, memo_size=memo_size)
    sampler.pool = _CountingPool(sampler.pool)
    return sampler


def _fresh(sampler, n=6):
    sketch = sampler.space.sketches[0].trace
    return [c for c in sampler.replay_batch([sketch] * n, resample=True) if c is not None]


def test_a_trace_met_again_is_not_replayed():
    sampler = _sampler()
    fresh = _fresh(sampler)
    assert fresh and sampler.pool.jobs == 6
    traces = [c.trace for c in fresh]
    first = sampler.replay_batch(traces, resample=False)
    assert sampler.pool.jobs == 6 + len(traces) and sampler.memo_hits == 0
    # the same traces again, as Trace objects and as JSON (the database's form)
    again = sampler.replay_batch(traces + [Trace.from_json(t.as_json()) for t in traces], resample=False)
    assert sampler.pool.jobs == 6 + len(traces), "remembered traces were replayed again"
    assert sampler.memo_hits == 2 * len(traces)
    for a, b in zip(first + first, again):
        assert a.key == b.key
        np.testing.assert_array_equal(a.features, b.features)
    # a remembered candidate still replays to its program when asked for it
    assert again[0].sch.trace.as_json() == first[0].trace.as_json()


def test_fresh_samples_are_never_remembered():
    sampler = _sampler()
    _fresh(sampler)
    _fresh(sampler)
    assert sampler.pool.jobs == 12 and sampler.memo_hits == 0


def test_invalid_traces_are_remembered_as_invalid():
    sampler = _sampler()
    sketch = sampler.space.sketches[0].trace
    inst = next(i for i in sketch.insts if i.kind == "sample_perfect_tile")
    bad = sketch.with_decision(inst, [3] * len(inst.decision))  # not a factorisation of the loop: invalid
    assert sampler.replay_batch([bad], resample=False) == [None]
    invalid = sum(sampler.invalid.values())
    assert sampler.replay_batch([bad], resample=False) == [None]
    assert sampler.memo_hits == 1 and sum(sampler.invalid.values()) == invalid + 1


def test_memo_size_bounds_what_is_remembered():
    sampler = _sampler(memo_size=2)
    traces = [c.trace for c in _fresh(sampler)]
    distinct = list({Sampler._memo_key(t): t for t in traces}.values())
    assert len(distinct) >= 3
    sampler.replay_batch(distinct, resample=False)
    assert len(sampler._memo) == 2
    off = _sampler(memo_size=0)
    off.replay_batch(distinct[:1], resample=False)
    off.replay_batch(distinct[:1], resample=False)
    assert off.memo_hits == 0 and off.pool.jobs == 2
