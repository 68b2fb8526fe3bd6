"""numpy models of the x86 instructions the intrinsics call, for the TensorIR interpreter: they
check an impl's lane and bit manipulation on hosts that lack the instructions."""
import numpy as np


def pmaddubsw(a, b):
    """vpmaddubsw: unsigned bytes of ``a`` times signed bytes of ``b``, adjacent pairs summed and
    saturated to int16."""
    products = np.asarray(a).view(np.uint8).astype(np.int64) * np.asarray(b).view(np.int8).astype(np.int64)
    return np.clip(products[0::2] + products[1::2], -32768, 32767).astype(np.int16)


def pmaddwd(x, y):
    """vpmaddwd: int16 products, adjacent pairs summed into int32 (wrapping)."""
    products = np.asarray(x).astype(np.int64) * np.asarray(y).astype(np.int64)
    return (products[0::2] + products[1::2]).astype(np.uint32).view(np.int32)


EXTERNS = {
    "llvm.x86.avx512.pmaddubs.w.512": pmaddubsw, "llvm.x86.avx512.pmaddw.d.512": pmaddwd,
    "llvm.x86.avx2.pmadd.ub.sw": pmaddubsw, "llvm.x86.avx2.pmadd.wd": pmaddwd,
}


def saturating_reference(a, b):
    """C = A @ B.T as vpmaddubsw + vpmaddwd compute it: each pair of u8*s8 products along K summed and
    clipped to int16, then the pairs summed."""
    prod = a.astype(np.int64)[:, None, :] * b.astype(np.int64)[None, :, :]  # (M, N, K)
    pairs = np.clip(prod[..., 0::2] + prod[..., 1::2], -32768, 32767)
    return pairs.sum(axis=-1)
