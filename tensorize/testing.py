"""``tvm.testing``: the pytest helpers TVM's own tests use (``parameter``, ``main``)."""
from __future__ import annotations

import sys

import numpy as np


def parameter(*values, ids=None, by_dict=None):
    """A pytest fixture that takes each of ``values`` in turn (assign it to a module-level name);
    ``by_dict={id: value}`` names each value.

    Parameters
    ----------
    *values : object
        The values the fixture takes.
    ids : list of str, optional
        The test ids of the values.
    by_dict : dict, optional
        ``{id: value}``, instead of ``values`` and ``ids``.

    Returns
    -------
    callable
        The pytest fixture.
    """
    import pytest

    if by_dict is not None:
        ids, values = list(by_dict), list(by_dict.values())

    @pytest.fixture(params=list(values), ids=ids)
    def _parameter(request):
        return request.param

    return _parameter


def main() -> None:
    """Run the calling test file with pytest."""
    import pytest

    sys.exit(pytest.main([sys.argv[0], *sys.argv[1:]]))


def assert_allclose(actual, desired, rtol=1e-7, atol=1e-7) -> None:
    """numpy's ``assert_allclose`` on arrays or runtime tensors.

    Parameters
    ----------
    actual, desired : array_like or NDArray
        The values to compare (runtime tensors are read with ``.numpy()``).
    rtol, atol : float
        The relative and absolute tolerances.

    Raises
    ------
    AssertionError
        When they differ beyond the tolerances.

    Examples
    --------
    >>> assert_allclose([1.0, 2.0], [1.0, 2.0 + 1e-9])
    """
    as_np = lambda x: x.numpy() if hasattr(x, "numpy") else np.asarray(x)  # noqa: E731
    np.testing.assert_allclose(as_np(actual), as_np(desired), rtol=rtol, atol=atol, verbose=True)
