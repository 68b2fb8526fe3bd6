"""The search targets the threads the kernels will get: the target's ``num-cores``, else ``TVM_NUM_THREADS``,
else ``OMP_NUM_THREADS``, else the usable cores."""
import os

from search.context import TuneContext, host_threads
from tensorize import te
from tensorize.target import Target


def _func():
    A = te.placeholder((64,), name="A")
    return te.create_prim_func([A, te.compute((64,), lambda i: A[i] + 1.0, name="B")])


def test_a_run_pinned_to_one_thread_is_tuned_for_one(monkeypatch):
    monkeypatch.delenv("TVM_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert host_threads(Target("llvm")) == 1
    assert TuneContext.create(_func(), "llvm", intrinsics=()).num_threads == 1


def test_the_runtimes_own_setting_wins_over_openmps(monkeypatch):
    monkeypatch.setenv("TVM_NUM_THREADS", "3")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert host_threads(Target("llvm")) == 3


def test_num_cores_of_the_target_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert host_threads(Target("llvm -num-cores=3")) == 3


def test_without_settings_the_usable_cores(monkeypatch):
    monkeypatch.delenv("TVM_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert host_threads(Target("llvm")) == len(os.sched_getaffinity(0))
    monkeypatch.setenv("OMP_NUM_THREADS", "junk")
    assert host_threads(Target("llvm")) == len(os.sched_getaffinity(0))
