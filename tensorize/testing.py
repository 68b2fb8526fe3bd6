"""``tvm.testing``: the pytest helpers TVM's own tests use (``parameter``, ``main``)."""
from __future__ import annotations

import sys

import numpy as np


def parameter(*values, ids=None, by_dict=None):
    """A pytest fixture that takes each of ``values`` in turn (assign it to a module-level name);
    ``by_dict={id: value}`` names each value."""
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
    """numpy's ``assert_allclose`` on arrays or runtime tensors."""
    as_np = lambda x: x.numpy() if hasattr(x, "numpy") else np.asarray(x)  # noqa: E731
    np.testing.assert_allclose(as_np(actual), as_np(desired), rtol=rtol, atol=atol, verbose=True)
