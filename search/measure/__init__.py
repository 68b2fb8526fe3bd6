"""Building and measuring candidates in isolation (MetaSchedule's builder and runner).

``BUILDERS`` and ``RUNNERS`` hold the executors by name: ``"local"`` (child processes on this machine),
``"ray"`` (Ray tasks placed by resources; ``ray_executor`` is the only module importing ``ray``,
and only when used) and ``"cuda"`` (CUDA C checked by nvcc, timed with cupy on a GPU).

>>> sorted(BUILDERS.names()), sorted(RUNNERS.names())
(['cuda', 'local', 'ray', 'replay'], ['cuda', 'local', 'ray', 'replay'])
>>> RUNNERS.create("local", timeout_s=5).timeout_s                                  # doctest: +SKIP
5
"""
from search.registry import Registry

from .builder import LocalBuilder
from .candidate import ERROR_KINDS, Builder, BuildResult, MeasureCandidate, Runner, RunResult
from .runner import LocalRunner
from .tasks import TimingConfig

from .ray_executor import RayBuilder, RayRunner
from .replay import ReplayBuilder, ReplayRunner
from .gpu import GPUBuilder, GPURunner

BUILDERS = Registry("builder")
RUNNERS = Registry("runner")
BUILDERS.register("local")(LocalBuilder)
RUNNERS.register("local")(LocalRunner)
BUILDERS.register("ray")(RayBuilder)
RUNNERS.register("ray")(RayRunner)
BUILDERS.register("replay")(ReplayBuilder)
RUNNERS.register("replay")(ReplayRunner)
BUILDERS.register("cuda")(GPUBuilder)
RUNNERS.register("cuda")(GPURunner)

__all__ = ["MeasureCandidate", "BuildResult", "RunResult", "Builder", "Runner", "ERROR_KINDS", "LocalBuilder",
           "LocalRunner", "RayBuilder", "RayRunner", "GPUBuilder", "GPURunner", "TimingConfig", "BUILDERS", "RUNNERS"]
