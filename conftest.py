"""Names every doctest of the packages starts with (``pytest --doctest-modules tensorize ...``).

The examples in docstrings use these without importing them:

* ``tvm``: the ``tensorize`` package (spelled as in TVM's own examples);
* ``te``, ``T`` (``tensorize.script.tir``) and ``np`` (numpy);
* ``matmul()``: a fresh 16x16x16 float32 matmul ``C[i, j] += A[i, k] * B[k, j]`` as a
  ``PrimFunc`` built with ``te``, whose one block is named ``"C"`` and whose loops are ``i, j, k``.
  ``tvm.tir.Schedule(matmul())`` is the usual start of a schedule primitive's example.
"""
import numpy as np
import pytest


def _matmul(n: int = 16):
    from tensorize import te

    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    import tensorize
    from tensorize import te
    from tensorize.script import tir as T

    doctest_namespace.update(tvm=tensorize, te=te, T=T, np=np, matmul=_matmul)
