"""A numpy model of Intel AMX (tile registers, ``ldtilecfg``, loads, stores and the dot products), for the
TensorIR interpreter: programs tensorized with ``intrinsics.x86_amx`` run their very instruction calls on
any CPU.

``AMXModel().externs()`` maps the LLVM intrinsic names the impls call to methods of one model (its 8 tile
registers persist between calls, as the hardware's do). Pointers arrive as the interpreter's
``Pointer(array, offset)`` (a flat numpy array and an element offset); strides are in bytes.

>>> import numpy as np
>>> from tensorize.codegen.python.interpreter import run_prim_func
>>> import tensorize as tvm
>>> from intrinsics.x86_amx import AMX_U8S8_INTRIN
>>> impl = tvm.tir.TensorIntrin.get(AMX_U8S8_INTRIN).impl
>>> rng = np.random.default_rng(0)
>>> a = rng.integers(0, 256, (16, 64), dtype=np.uint8)
>>> b = rng.integers(-128, 128, (16, 64), dtype=np.int8)       # B[n, k]
>>> b_packed = b.reshape(1, 16, 16, 4).transpose(0, 2, 1, 3).copy()  # (N/16, K/4, 16, 4)
>>> c = np.ones((16, 16), np.int32)
>>> run_prim_func(impl, a, b_packed, c, externs=AMXModel().externs())
>>> bool((c == 1 + a.astype(np.int32) @ b.astype(np.int32).T).all())
True
"""
from __future__ import annotations

import numpy as np

from .x86_amx import NUM_TILES, TILE_BYTES, TILE_ROWS

_INT8_SIGNS = {"tdpbusd": (np.uint8, np.int8), "tdpbssd": (np.int8, np.int8), "tdpbsud": (np.int8, np.uint8),
               "tdpbuud": (np.uint8, np.uint8)}


class AMXError(RuntimeError):
    """What the hardware would fault on (#UD/#GP): an unconfigured tile, shapes that do not fit."""


def _bytes(ptr) -> tuple[np.ndarray, int]:
    flat = np.ascontiguousarray(ptr.array).reshape(-1)
    if not np.shares_memory(flat, ptr.array):
        raise AMXError("the model needs contiguous buffers (a copy would lose tile stores)")
    return flat.view(np.uint8), ptr.offset * flat.dtype.itemsize


def _row_slices(instruction: str, tile: np.ndarray, size: int, off: int, stride):
    """``(row, byte slice)`` of each of ``tile``'s rows at ``off + row * stride`` in a buffer of ``size`` bytes;
    AMXError naming ``instruction`` for a row outside it."""
    width = tile.shape[1]
    for r in range(tile.shape[0]):
        start = off + r * int(stride)
        if start < 0 or start + width > size:
            raise AMXError(f"{instruction}: row {r} at byte {start} is outside the buffer ({size} bytes)")
        yield r, slice(start, start + width)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) -> float32, denormals flushed to zero (AMX reads them as zero).

    Parameters
    ----------
    bits : numpy.ndarray
        bfloat16 values as their uint16 bit patterns.

    Returns
    -------
    numpy.ndarray
        float32 values of the same shape.

    Examples
    --------
    >>> import numpy as np
    >>> bf16_to_f32(np.array([0x3F80, 0xC000], np.uint16)).tolist()
    [1.0, -2.0]
    """
    f = (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)
    return np.where(np.abs(f) < np.finfo(np.float32).tiny, np.float32(0), f).astype(np.float32)


class AMXModel:
    """Tile registers and configuration of one core; methods named after the instructions."""

    def __init__(self):
        self.rows = [0] * NUM_TILES
        self.colsb = [0] * NUM_TILES
        self.tiles = [np.zeros((TILE_ROWS, TILE_BYTES), np.uint8) for _ in range(NUM_TILES)]
        self.configured = False

    # -- configuration, loads, stores --------------------------------------------------------------
    def ldtilecfg(self, ptr) -> int:
        """``ldtilecfg``: load the 64-byte tile configuration at ``ptr`` (palette 1) and zero every tile.

        Parameters
        ----------
        ptr : Pointer
            The interpreter's pointer to the descriptor (see ``tile_config``).

        Returns
        -------
        int
            0, as the intrinsic's call returns.

        Raises
        ------
        AMXError
            For another palette, non-zero reserved bytes or tile sizes beyond palette 1's limits.
        """
        raw, off = _bytes(ptr)
        cfg = raw[off:off + 64]
        if cfg[0] != 1:
            raise AMXError(f"ldtilecfg: palette {cfg[0]} is not supported (only palette 1)")
        if cfg[2:16].any() or cfg[32:48].any() or cfg[56:64].any():
            raise AMXError("ldtilecfg: reserved bytes (2-15, 32-47, 56-63) must be zero (#GP)")
        self.colsb = [int(cfg[16 + 2 * t]) | int(cfg[17 + 2 * t]) << 8 for t in range(NUM_TILES)]
        self.rows = [int(cfg[48 + t]) for t in range(NUM_TILES)]
        if any(r > TILE_ROWS for r in self.rows) or any(c > TILE_BYTES for c in self.colsb) or \
                any((r == 0) != (c == 0) for r, c in zip(self.rows, self.colsb)):
            raise AMXError(f"ldtilecfg: tiles of at most {TILE_ROWS} rows x {TILE_BYTES} bytes, rows and colsb both "
                           f"zero or both set (#GP); got rows {self.rows}, colsb {self.colsb}")
        self.tiles = [np.zeros((r, c), np.uint8) for r, c in zip(self.rows, self.colsb)]
        self.configured = True
        return 0

    def _tile(self, t: int) -> np.ndarray:
        t = int(t)
        if not self.configured or not 0 <= t < NUM_TILES or self.rows[t] == 0:
            raise AMXError(f"tile {t} is not configured (run ldtilecfg first)")
        return self.tiles[t]

    def tileloadd64(self, t, ptr, stride) -> int:
        """``tileloadd``: load tile ``t`` row by row from ``ptr``, rows ``stride`` bytes apart.

        Parameters
        ----------
        t : int
            The tile register (0-7), configured.
        ptr : Pointer
            The first row.
        stride : int
            Bytes between rows.

        Returns
        -------
        int
            0, as the intrinsic's call returns.

        Raises
        ------
        AMXError
            When the tile is not configured or a row lies outside the buffer.
        """
        tile = self._tile(t)
        raw, off = _bytes(ptr)
        for r, row in _row_slices("tileloadd", tile, raw.size, off, stride):
            tile[r] = raw[row]
        return 0

    def tilestored64(self, t, ptr, stride) -> int:
        """``tilestored``: store tile ``t`` row by row to ``ptr``, rows ``stride`` bytes apart.

        Parameters
        ----------
        t : int
            The tile register (0-7), configured.
        ptr : Pointer
            The first row.
        stride : int
            Bytes between rows.

        Returns
        -------
        int
            0, as the intrinsic's call returns.

        Raises
        ------
        AMXError
            When the tile is not configured or a row lies outside the buffer.
        """
        tile = self._tile(t)
        raw, off = _bytes(ptr)
        for r, row in _row_slices("tilestored", tile, raw.size, off, stride):
            raw[row] = tile[r]
        return 0

    def tilezero(self, t) -> int:
        """``tilezero``: set tile ``t`` to zero.

        Parameters
        ----------
        t : int
            The tile register (0-7), configured.

        Returns
        -------
        int
            0, as the intrinsic's call returns.
        """
        self._tile(t)[:] = 0
        return 0

    def tilerelease(self) -> int:
        """``tilerelease``: return the model to its initial, unconfigured state.

        Returns
        -------
        int
            0, as the intrinsic's call returns.
        """
        self.__init__()
        return 0

    # -- dot products ------------------------------------------------------------------------------
    def _shapes(self, c, a, b, group: int):
        C, A, B = self._tile(c), self._tile(a), self._tile(b)
        m, n, k = C.shape[0], C.shape[1] // 4, A.shape[1] // group
        if A.shape[0] != m or B.shape[0] != k or B.shape[1] != C.shape[1]:
            raise AMXError(f"tile shapes do not fit: C {C.shape}, A {A.shape}, B {B.shape} (bytes)")
        return C, A, B, m, n, k

    def int8_dot(self, instruction: str, c, a, b) -> int:
        """``tdpb[su][su]d``: ``C += A . B`` over groups of 4 bytes, int32 accumulators wrapping as the hardware's.

        Parameters
        ----------
        instruction : str
            ``"tdpbusd"``, ``"tdpbssd"``, ``"tdpbsud"`` or ``"tdpbuud"`` (the signs of A and B).
        c : int
            The accumulator tile (M rows of N int32).
        a : int
            The A tile (M rows of K groups of 4 bytes).
        b : int
            The B tile (K rows of N groups of 4 bytes, VNNI-packed).

        Returns
        -------
        int
            0, as the intrinsic's call returns.

        Raises
        ------
        AMXError
            When a tile is not configured or the tile shapes do not fit.
        """
        C, A, B, m, n, k = self._shapes(c, a, b, 4)
        a_type, b_type = _INT8_SIGNS[instruction]
        a_val = A.view(a_type).astype(np.int64)                                  # (m, 4k)
        b_val = B.view(b_type).astype(np.int64).reshape(k, n, 4).transpose(0, 2, 1).reshape(4 * k, n)
        acc = C.view(np.int32).astype(np.int64) + a_val @ b_val
        C[:] = acc.astype(np.uint32).view(np.uint8).reshape(C.shape)            # wraps, as the hardware does
        return 0

    def tdpbf16ps(self, c, a, b) -> int:
        """``tdpbf16ps``: ``C += A . B`` over pairs of bfloat16, in float32, each addition rounded as the hardware does.

        Parameters
        ----------
        c : int
            The accumulator tile (M rows of N float32).
        a : int
            The A tile (M rows of K pairs of bfloat16).
        b : int
            The B tile (K rows of N pairs of bfloat16).

        Returns
        -------
        int
            0, as the intrinsic's call returns.

        Raises
        ------
        AMXError
            When a tile is not configured or the tile shapes do not fit.
        """
        C, A, B, m, n, k = self._shapes(c, a, b, 4)
        a_val = bf16_to_f32(A.view(np.uint16)).reshape(m, k, 2)
        b_val = bf16_to_f32(B.view(np.uint16)).reshape(k, n, 2)
        acc = C.view(np.float32).copy()
        for kk in range(k):  # each product is exact in f32; every addition rounds (to nearest even)
            for q in range(2):
                acc = (acc + np.outer(a_val[:, kk, q], b_val[kk, :, q])).astype(np.float32)
        C[:] = acc.view(np.uint8).reshape(C.shape)
        return 0

    def externs(self) -> dict:
        """The interpreter's ``externs`` for the LLVM AMX intrinsics, all bound to this model.

        Returns
        -------
        dict of str to callable
            LLVM intrinsic name (``"llvm.x86.tdpbusd"``, ...) to the model's method.
        """
        out = {"llvm.x86.ldtilecfg": self.ldtilecfg, "llvm.x86.tileloadd64": self.tileloadd64,
               "llvm.x86.tileloaddt164": self.tileloadd64,  # the no-reuse hint changes no value
               "llvm.x86.tilestored64": self.tilestored64, "llvm.x86.tilezero": self.tilezero,
               "llvm.x86.tilerelease": self.tilerelease, "llvm.x86.tdpbf16ps": self.tdpbf16ps,
               "llvm.prefetch.p0": lambda *args: None}  # a cache hint: nothing to model
        for name in _INT8_SIGNS:
            out[f"llvm.x86.{name}"] = (lambda c, a, b, _n=name: self.int8_dot(_n, c, a, b))
        return out


__all__ = ["AMXModel", "AMXError", "bf16_to_f32"]
