"""A numpy model of the warp-collective PTX instructions ``ldmatrix`` and ``mma.sync``, lane by lane, and of
the warpgroup's ``wgmma.mma_async`` (128 threads, operands in shared memory through descriptors). ``wgmma`` is
asynchronous here as on the GPU: an instruction runs when a ``wgmma.wait_group`` reaches its commit group, and
reads the shared tiles then, so a program that overwrites a tile before waiting computes wrong numbers.

The model follows the PTX ISA's fragment layouts (the register each lane holds for each element of
the A, B and C/D matrices), written independently of the intrinsics' lane mappings, so running an
intrinsic's ``impl`` through it checks the ``desc`` that the search and the CPU emulation rely on.

A serial emulation of a warp calls an instruction once per lane (``tx`` = 0..31); ``WarpModel``
collects the 32 lanes' operands of one instruction and executes it when the last lane arrives.
Operands are ``Pointer`` s (an array and an element offset) into each lane's registers or into
shared memory.

>>> import numpy as np
>>> from tensorize.codegen.python import Pointer
>>> model, shared = WarpModel(), np.arange(256, dtype="float16")
>>> regs = np.zeros(32 * 8, "float16")
>>> for lane in range(32):
...     model.ldmatrix(False, 4, ".b16", Pointer(regs, 8 * lane), Pointer(shared, (lane % 16) * 16 + 8 * (lane // 16)))
>>> [float(x) for x in regs[8 * 5: 8 * 5 + 2]]  # lane 5: row 1, columns 2 and 3 of the first 8x8 matrix
[18.0, 19.0]
"""
from __future__ import annotations

import numpy as np

from ..errors import TVMError

WARP = 32
WARPGROUP = 4 * WARP


def _fragment_positions(shape: str):
    """Per lane, per fragment element: ``(row, col)`` in A, ``(k, n)`` in B, ``(row, col)`` in C (PTX ISA)."""
    a, b, c = [], [], []
    for lane in range(WARP):
        g, t = lane >> 2, lane % 4
        if shape == "m16n8k16":
            a.append([(g + 8 * ((i // 2) % 2), 2 * t + (i & 1) + 8 * (i // 4)) for i in range(8)])
            b.append([(2 * t + (i & 1) + 8 * (i // 2), g) for i in range(4)])
        elif shape == "m16n8k32":
            a.append([(g + 8 * ((i // 4) % 2), 4 * t + (i & 3) + 16 * (i // 8)) for i in range(16)])
            b.append([(4 * t + (i & 3) + 16 * (i // 4), g) for i in range(8)])
        else:
            raise TVMError(f"the PTX model has no mma shape {shape}; it knows m16n8k16 and m16n8k32")
        c.append([(g + 8 * (i // 2), 2 * t + (i & 1)) for i in range(4)])
    return a, b, c


class WarpModel:
    """Executes warp-collective instructions once all 32 lanes have called them."""

    def __init__(self):
        self.pending: dict[str, list] = {}
        self.executed = 0
        self.open_group: list = []  # wgmma issued since the last commit
        self.groups: list = []  # committed wgmma groups not yet waited for, oldest first

    def _collect(self, name: str, operands, threads: int = WARP):
        lanes = self.pending.setdefault(name, [])
        lanes.append(operands)
        if len(lanes) < threads:
            return None
        del self.pending[name]
        return lanes

    def ldmatrix(self, trans, num, kind, local, smem) -> None:
        """``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``: lane ``8m + r`` gives row ``r`` of matrix ``m``.

        Parameters
        ----------
        trans : bool
            Transpose each 8x8 matrix of 16-bit elements.
        num : int
            Matrices (1, 2 or 4): the registers each lane receives.
        kind : str
            ``".b16"``.
        local : Pointer
            This lane's destination registers.
        smem : Pointer
            The shared-memory row this lane supplies.
        """
        lanes = self._collect("ldmatrix", (local, smem))
        if lanes is None:
            return
        self.executed += 1
        per = 2 // local.array.itemsize  # array elements per 16-bit element
        if trans and per != 1:
            raise TVMError("ldmatrix .trans moves 16-bit elements; an 8-bit tile cannot be transposed by it")
        for m in range(int(num)):
            rows = [lanes[8 * m + r][1].view(8 * per) for r in range(8)]
            for lane, (dst, _) in enumerate(lanes):
                for q in range(2):  # two 16-bit elements per 32-bit register
                    if trans:
                        value = rows[2 * (lane % 4) + q][(lane // 4) * per:(lane // 4 + 1) * per]
                    else:
                        item = 2 * (lane % 4) + q
                        value = rows[lane // 4][item * per:(item + 1) * per]
                    start = dst.offset + (2 * m + q) * per
                    dst.array[start:start + per] = value

    def mma(self, shape, a_layout, b_layout, a_type, b_type, c_type, a, b, c) -> None:
        """``mma.sync.aligned.{shape}.row.col``: ``D = A @ B + C`` from the 32 lanes' fragments, written to C.

        Parameters
        ----------
        shape : str
            ``"m16n8k16"`` (f16) or ``"m16n8k32"`` (s8).
        a_layout, b_layout : str
            ``"row"`` and ``"col"`` (the fragment layouts are the ISA's for these).
        a_type, b_type, c_type : str
            Operand types (the arrays' dtypes are used).
        a, b, c : Pointer
            This lane's A, B and C/D registers.
        """
        lanes = self._collect(f"mma.{shape}", (a, b, c))
        if lanes is None:
            return
        self.executed += 1
        if (a_layout, b_layout) != ("row", "col"):
            raise TVMError(f"the PTX model runs mma.sync .row.col only, not .{a_layout}.{b_layout}")
        pos_a, pos_b, pos_c = _fragment_positions(shape)
        k = 16 if shape == "m16n8k16" else 32
        acc = np.float64 if lanes[0][2].array.dtype.kind == "f" else np.int64
        A, B, C = np.zeros((16, k), acc), np.zeros((k, 8), acc), np.zeros((16, 8), acc)
        for lane, (pa, pb, pc) in enumerate(lanes):
            for i, (r, col) in enumerate(pos_a[lane]):
                A[r, col] = pa.array[pa.offset + i]
            for i, (r, col) in enumerate(pos_b[lane]):
                B[r, col] = pb.array[pb.offset + i]
            for i, (r, col) in enumerate(pos_c[lane]):
                C[r, col] = pc.array[pc.offset + i]
        D = A @ B + C
        for lane, (_, _, pc) in enumerate(lanes):
            for i, (r, col) in enumerate(pos_c[lane]):
                pc.array[pc.offset + i] = D[r, col]

    def wgmma(self, shape, a_type, b_type, c_type, a, a_lbo, a_sbo, b, b_lbo, b_sbo, c, swizzle=0, trans_b=0) -> None:
        """``wgmma.mma_async.sync.aligned.m64nNk16`` with A and B in shared memory, K-major:
        ``D = A @ B^T + D`` once all 128 threads of the warpgroup have issued it.

        Parameters
        ----------
        shape : str
            ``"m64n{N}k16"``.
        a_type, b_type, c_type : str
            Operand types (the arrays' dtypes are used).
        a, b : Pointer
            The start of the A (64 x 16) and B (N x 16) tiles in shared memory.
        a_lbo, a_sbo, b_lbo, b_sbo : int
            Elements between core matrices (8 rows x 16 bytes each) along K (leading) and along M or N
            (stride), as the descriptors carry them.
        c : Pointer
            This thread's ``N / 2`` accumulator registers.
        swizzle : int
            The descriptors' swizzle mode in bytes (0: none): rows of that many bytes, 8-row groups ``*_sbo``
            apart, each address's 16-byte chunk bits XORed with its bits 7 and up (``_swizzled_tile``).
        trans_b : int
            1: B is MN-major (swizzled only): blocks of ``swizzle / 2`` N-columns ``b_lbo`` elements apart,
            K-rows of ``swizzle`` bytes, 8-row groups ``b_sbo`` apart (``_swizzled_tile_mn``).
        """
        # one instruction of the warpgroup is the 128 issues naming the same tiles (a thread may issue several
        # instructions, for consecutive K steps, before the next thread issues its own)
        tiles = (shape, id(a.array), int(a.offset), int(a_lbo), int(a_sbo), id(b.array), int(b.offset), int(b_lbo),
                 int(b_sbo), int(swizzle), int(trans_b))
        if int(trans_b) and not int(swizzle):
            raise ValueError("wgmma: an MN-major B is modelled in the swizzled layouts only")
        lanes = self._collect(f"wgmma{tiles}", (a, int(a_lbo), int(a_sbo), b, int(b_lbo), int(b_sbo), int(swizzle),
                                                int(trans_b), c), WARPGROUP)
        if lanes is None:
            return
        # asynchronous: it reads the shared tiles and the accumulators when its group is waited for
        self.open_group.append(lambda: self._wgmma(shape, lanes, str(a_type)))

    def commit_group(self) -> None:
        """``wgmma.commit_group``: the warpgroup's ``wgmma`` issued since the last commit become one group."""
        if self._collect("wgmma.commit_group", (), WARPGROUP) is not None:
            self.groups.append(self.open_group)
            self.open_group = []

    def wait_group(self, n) -> None:
        """``wgmma.wait_group n``: run the oldest committed groups until at most ``n`` are pending.

        Parameters
        ----------
        n : int
            Groups left in flight.
        """
        while len(self.groups) > int(n):
            for instruction in self.groups.pop(0):
                instruction()

    def flush(self) -> None:
        """Run every pending ``wgmma``, committed or not (the end of a program)."""
        self.groups.append(self.open_group)
        self.open_group = []
        self.wait_group(0)

    def _wgmma(self, shape, lanes, in_type="fp16") -> None:
        self.executed += 1
        n = int(shape[len("m64n"):-len("k16")])
        a, a_lbo, a_sbo, b, b_lbo, b_sbo, swizzle, trans_b = lanes[0][:8]
        if trans_b:
            A, B = _swizzled_tile(a, 64, a_sbo, swizzle), _swizzled_tile_mn(b, n, b_lbo, b_sbo, swizzle)
        elif swizzle:
            A, B = _swizzled_tile(a, 64, a_sbo, swizzle), _swizzled_tile(b, n, b_sbo, swizzle)
        else:
            A, B = _core_matrix_tile(a, 64, a_lbo, a_sbo), _core_matrix_tile(b, n, b_lbo, b_sbo)
        if in_type == "bf16":  # bf16 buffers are held as their 16-bit patterns: the high half of an f32
            A, B = ((x.astype(np.uint32) << 16).view(np.float32) for x in (A, B))
        acc = np.float64 if lanes[0][8].array.dtype.kind == "f" else np.int64
        rows, cols = _accumulator_positions(n)
        registers = np.stack([pc.array[pc.offset:pc.offset + n // 2] for *_, pc in lanes]).astype(acc)
        C = np.zeros((64, n), acc)
        C[rows, cols] = registers
        D = A.astype(acc) @ B.astype(acc).T + C
        for thread, (*_, pc) in enumerate(lanes):
            pc.array[pc.offset:pc.offset + n // 2] = D[rows[thread], cols[thread]]

    def tma_load(self, dst, src, ld, rows, cols, swizzle) -> int:
        """A TMA copy (``cp.async.bulk.tensor``): the ``rows`` x ``cols`` box of ``src`` (rows ``ld`` apart) stored
        row-major at ``dst`` through the ``swizzle``-byte swizzle, as the hardware stores it. It completes at
        once here: the serial emulation runs the copy before the multiply that waits for it.

        Parameters
        ----------
        dst, src : Pointer
            The shared tile and the box's first element.
        ld, rows, cols, swizzle : int
            Row stride (elements), box and swizzle (bytes; 0 for none).

        Returns
        -------
        int
            0.
        """
        self.executed += 1
        r = np.arange(int(rows))[:, None]
        c = np.arange(int(cols))[None, :]
        values = src.array[src.offset + r * int(ld) + c]
        size = dst.array.itemsize
        byte = (dst.offset + r * int(cols) + c) * size
        if int(swizzle):
            byte = _swizzled_bytes(byte, int(swizzle))
        dst.array[byte // size] = values
        return 0

    def externs(self) -> dict:
        """The interpreter's ``externs`` for the calls ``emulate_warp_calls`` writes.

        Returns
        -------
        dict
            ``{"ptx_ldmatrix": ..., "ptx_mma": ..., "ptx_wgmma": ..., ...}``; ``wgmma`` runs when a wait
            reaches its group (it reads shared memory then, as the asynchronous instruction does), the
            ``cp.async`` waits and the barriers are no-ops (a serial run keeps program order).
        """
        def no_op(*args):  # ordering of a serial run is already program order
            return 0

        return {"ptx_ldmatrix": self.ldmatrix, "ptx_mma": self.mma, "ptx_wgmma": self.wgmma,
                "ptx_wgmma_wait_group": self.wait_group, "ptx_wgmma_fence": no_op,
                "ptx_wgmma_commit_group": self.commit_group, "ptx_tma_load": self.tma_load,
                "tir.ptx_commit_group": no_op, "tir.ptx_wait_group": no_op,
                "tir.tvm_storage_sync": no_op}


def _core_matrix_tile(ptr, rows: int, lbo: int, sbo: int, k: int = 16):
    """The ``rows`` x ``k`` tile a no-swizzle K-major descriptor names: core matrices of 8 rows x 16 bytes,
    ``sbo`` elements apart along the rows and ``lbo`` along K (PTX ISA, matrix descriptors)."""
    per_row = 16 // ptr.array.itemsize
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    index = ptr.offset + (r // 8) * sbo + (kk // per_row) * lbo + (r % 8) * per_row + kk % per_row
    return ptr.array[index]


def _swizzled_tile(ptr, rows: int, sbo: int, swizzle: int, k: int = 16):
    """The ``rows`` x ``k`` tile a swizzled K-major descriptor names: rows of ``swizzle`` bytes, 8-row groups
    ``sbo`` elements apart, the start ``ptr`` inside the first row, read through the swizzle (``_swizzled_gather``;
    the array's start stands for a 1024-byte aligned base; PTX ISA, shared memory matrix layout swizzling)."""
    size = ptr.array.itemsize
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    return _swizzled_gather(ptr, ptr.offset + (r // 8) * sbo + (r % 8) * (swizzle // size) + kk, swizzle)


def _swizzled_tile_mn(ptr, rows: int, lbo: int, sbo: int, swizzle: int, k: int = 16):
    """The ``rows`` (N) x ``k`` tile an MN-major swizzled descriptor names (returned N x K, as the K-major
    tiles): blocks of ``swizzle`` bytes of N ``lbo`` elements apart, K-rows of one block ``swizzle`` bytes apart,
    8-row groups ``sbo`` apart, read through the swizzle (``_swizzled_gather``; CUTLASS's canonical MN-major
    GMMA layouts)."""
    width = swizzle // ptr.array.itemsize
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    return _swizzled_gather(ptr, ptr.offset + (r // width) * lbo + r % width + (kk // 8) * sbo + (kk % 8) * width,
                            swizzle)


def _swizzled_gather(ptr, elements, swizzle: int):
    """``ptr``'s array at the logical element offsets ``elements`` as the hardware stores them: each byte
    address's 16-byte chunk bits ``[4, 4 + B)`` XORed with its bits ``[7, 7 + B)``, ``B = log2(swizzle / 16)``."""
    size = ptr.array.itemsize
    return ptr.array[_swizzled_bytes(elements * size, swizzle) // size]


def _swizzled_bytes(byte, swizzle: int):
    """Where the hardware stores byte address ``byte`` of a ``swizzle``-byte swizzled tile: its 16-byte chunk bits
    ``[4, 4 + B)`` XORed with its bits ``[7, 7 + B)``, ``B = log2(swizzle / 16)`` (an involution)."""
    return byte ^ (((byte >> 7) & (swizzle // 16 - 1)) << 4)


def _accumulator_positions(n: int):
    """Row and column of register ``v`` of thread ``t`` in the 64 x ``n`` f32 accumulator of ``wgmma``
    (PTX ISA, "WGMMA .m64nNk16 register fragment layout for accumulator"): arrays of shape (128, n / 2)."""
    t = np.arange(WARPGROUP)[:, None]
    v = np.arange(n // 2)[None, :]
    warp, lane = t // WARP, t % WARP
    rows = 16 * warp + lane // 4 + 8 * ((v // 2) % 2)
    cols = 8 * (v // 4) + 2 * (lane % 4) + v % 2
    return np.broadcast_to(rows, (WARPGROUP, n // 2)), np.broadcast_to(cols, (WARPGROUP, n // 2))
