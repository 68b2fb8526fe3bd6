"""Shared pytest setup: the repository root on ``sys.path`` (so ``tests.workloads`` and the packages
import from a plain checkout), quiet MLflow, and the hypothesis profiles of ``tests/hypothesis_setup.py``
(select one with ``HYPOTHESIS_PROFILE``: ``default``, ``ci``, ``thorough``).

Shared workloads live in ``tests/workloads.py``; helpers of one test folder live in that folder
(``tests/codegen/codegen_kernels.py``, ``tests/schedule/_sched_workloads.py``, ...). Every test folder
is a package, so same-named test files in different folders do not collide.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from tests import hypothesis_setup  # noqa: E402,F401  (registers and loads the hypothesis profiles)
