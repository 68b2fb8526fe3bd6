"""Hypothesis profiles and the example-count helper shared by the property tests.

Hypothesis profiles (select one with the ``HYPOTHESIS_PROFILE`` environment variable):

- ``default`` (nothing set): each property test runs with the modest ``max_examples`` written on it,
  random seeds, so local runs keep exploring a little.
- ``ci``: deterministic (``derandomize=True``, no example database), same example counts as the tests
  declare. ``.ci/run`` selects it so that CI failures reproduce exactly.
- ``thorough``: for local bug hunts; 20x the examples of each test, random, no deadline, e.g.
  ``HYPOTHESIS_PROFILE=thorough python -m pytest tests/schedule/test_properties.py -q -x``;
  combine with ``--hypothesis-seed=N`` to vary or replay a hunt.

Per-test ``@settings(max_examples=...)`` override a profile's ``max_examples``; tests that should
scale with the profile call :func:`examples` instead of writing a number.
"""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

_SCALE = {"thorough": 20}


def examples(n: int) -> int:
    """``n`` examples, scaled by the active hypothesis profile (x20 under ``thorough``)."""
    return n * _SCALE.get(os.environ.get("HYPOTHESIS_PROFILE", "default"), 1)
