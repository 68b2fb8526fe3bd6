"""GEMM workloads (GMM): fp32 ``C = A @ B`` and u8 x s8 -> s32 with B given as (N, K) (the layout
int8 dot instructions read), with numpy references."""
from __future__ import annotations

import numpy as np

from tensorize import te

from .registry import Workload, register

GEMM_SHAPES = {"1024": (1024, 1024, 1024), "512": (512, 512, 512), "small": (64, 64, 64),
               "odd": (127, 255, 511), "1000": (1000, 1000, 1000)}


def gemm(M: int, N: int, K: int, dtype: str = "float32"):
    """``C[i, j] = sum_k A[i, k] * B[k, j]``."""
    A = te.placeholder((M, K), dtype, name="A")
    B = te.placeholder((K, N), dtype, name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def gemm_u8s8s32(M: int, N: int, K: int):
    """``C[i, j] = sum_k int32(A[i, k]) * int32(B[j, k])``, A uint8, B int8 stored (N, K)."""
    A = te.placeholder((M, K), "uint8", name="A")
    B = te.placeholder((N, K), "int8", name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype("int32") * B[j, k].astype("int32"), axis=k), name="C")
    return A, B, C


@register("gemm")
def _gemm(shape: str | None = None, dtype: str = "float32") -> Workload:
    shape = shape or "1024"
    M, N, K = GEMM_SHAPES[shape]
    return Workload("gemm", shape, list(gemm(M, N, K, dtype)), lambda a, b: (a @ b).astype(dtype), 2 * M * N * K,
                    {"M": M, "N": N, "K": K})


@register("gemm_int8")
def _gemm_int8(shape: str | None = None, dtype: str = "uint8") -> Workload:
    shape = shape or "1024"
    M, N, K = GEMM_SHAPES[shape]
    ref = lambda a, b: a.astype(np.int32) @ b.astype(np.int32).T  # noqa: E731
    return Workload("gemm_int8", shape, list(gemm_u8s8s32(M, N, K)), ref, 2 * M * N * K, {"M": M, "N": N, "K": K})
