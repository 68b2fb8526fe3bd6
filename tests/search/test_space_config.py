"""``tune_tir(space_config=...)``: how fresh samples are drawn reaches the replay workers, and bad keys or values
are refused before anything is measured."""
import pytest

import search
from experiments.tuning import search_settings
from search.context import TuneContext
from search.postproc import default_postprocs
from search.space_generator import PostOrderApply, replay_candidate
from search.space_generator.cpu_tiles import register_tiles
from search.strategy import SearchSpace
from search.strategy.parallel import replay_job
from tensorize import te
from tensorize.schedule.trace import Trace
from tests.search.test_tune import gemm_func


def depthwise():
    """A small depthwise 3x3 convolution (NHWC): a reduction of 9 steps per output, a short one."""
    data = te.placeholder((1, 18, 18, 16), name="data")
    kernel = te.placeholder((3, 3, 16), name="kernel")
    rh, rw = te.reduce_axis((0, 3), name="rh"), te.reduce_axis((0, 3), name="rw")
    out = te.compute((1, 16, 16, 16), lambda n, h, w, c: te.sum(data[n, h + rh, w + rw, c] * kernel[rh, rw, c],
                                                                   axis=[rh, rw]), name="depthwise")
    return te.create_prim_func([data, kernel, out])


def _two_level_draws(share):
    ctx = TuneContext.create(depthwise(), "llvm -mcpu=haswell", seed=0)
    sketches = [s for s in PostOrderApply().generate_design_space(ctx) if register_tiles(s.trace, 256)]
    space = SearchSpace(sketches, default_postprocs(ctx), {}, replay_candidate, sampling={"two_level_share": share})
    flat = total = 0
    for seed in range(24):
        result, _ = replay_job(ctx, space, None, (sketches[seed % len(sketches)].trace, True, 100 + seed))
        if result.reason is not None:
            continue
        tilings = [inst.decision for group, _ in register_tiles(Trace.from_json(result.trace_json), 256)
                   for inst in group]
        total += 1
        flat += all(all(f == 1 for f in t[1:-1]) for t in tilings)
    return flat, total


def test_the_share_reaches_the_replay_of_fresh_samples():
    flat, total = _two_level_draws(1.0)
    assert total >= 12 and flat == total
    flat, total = _two_level_draws(0.0)
    assert total >= 12 and flat < total / 2


@pytest.mark.parametrize("config, message", [({"two_level": 0.5}, "unknown space_config key"),
                                             ({"two_level_share": 2}, r"must be in \[0, 1\]")])
def test_bad_space_config_is_refused(tmp_path, config, message):
    with pytest.raises(ValueError, match=message):
        search.tune_tir(gemm_func(64), "llvm -mcpu=native", str(tmp_path), max_trials_global=4, progress=False,
                        space_config=config)
    assert not search.Database(str(tmp_path / "database.jsonl")).get_all_tuning_records()


def test_the_search_group_carries_the_space_config():
    cfg = {"search": {"name": "evolutionary", "strategy": {"population_size": 8}, "space": {"two_level_share": 0}}}
    assert search_settings(cfg)["space_config"] == {"two_level_share": 0}
    assert search_settings({})["space_config"] == {}
