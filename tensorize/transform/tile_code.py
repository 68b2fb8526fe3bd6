"""What the AMX lowering passes (``HoistTileConfig``, ``FuseTileZero``, ``PromoteTileAccumulators``) read in
lowered code: LLVM intrinsic calls by name, the ``ldtilecfg`` descriptors and their tile shapes, tile loads and
stores of flat buffers.

>>> tile_shapes([1, 0, 0x40004000400040, 0x40004000400040, 0, 0, 0x1010101010101010, 0])[:2]
[(16, 64), (16, 64)]
"""
from __future__ import annotations

import numpy as np

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import StmtExprVisitor

LDTILECFG = "llvm.x86.ldtilecfg"
TILERELEASE = "llvm.x86.tilerelease"
TILE_LOADS = ("llvm.x86.tileloadd64", "llvm.x86.tileloaddt164")
TILE_STORE = "llvm.x86.tilestored64"
TILE_ZERO = "llvm.x86.tilezero"
_TILE_PREFIXES = ("llvm.x86.tile", "llvm.x86.tdp", LDTILECFG, "llvm.x86.sttilecfg")


def llvm_intrin_name(expr) -> str | None:
    """The LLVM intrinsic ``expr`` calls (``"llvm.x86.ldtilecfg"``), or None when it is not such a call.

    Parameters
    ----------
    expr : PrimExpr or None
        An expression.

    Returns
    -------
    str or None
    """
    if isinstance(expr, E.Call) and expr.op.name in ("tir.call_llvm_intrin", "tir.call_llvm_pure_intrin") \
            and expr.args and isinstance(expr.args[0], E.StringImm):
        return expr.args[0].value
    return None


def config_site(stmt) -> E.Var | None:
    """The descriptor buffer's data variable when ``stmt`` is ``ldtilecfg(T.address_of(cfg[0]))``.

    Parameters
    ----------
    stmt : Stmt
        A statement.

    Returns
    -------
    Var or None
        The variable, or None for any other statement.
    """
    if not (isinstance(stmt, S.Evaluate) and llvm_intrin_name(stmt.value) == LDTILECFG and len(stmt.value.args) == 2):
        return None
    address = stmt.value.args[1]
    if isinstance(address, E.Call) and address.op.name == "tir.address_of" and \
            isinstance(address.args[0], E.BufferLoad):
        load = address.args[0]
        if all(isinstance(i, E.IntImm) and i.value == 0 for i in load.indices):
            return load.buffer.data
    return None


def tile_shapes(words) -> list[tuple[int, int]]:
    """Each tile's (rows, bytes per row) in an ``ldtilecfg`` descriptor given as 8 little-endian 64-bit words.

    Parameters
    ----------
    words : sequence of int
        The descriptor.

    Returns
    -------
    list of (int, int)
        Tiles 0 to 7.

    Examples
    --------
    >>> tile_shapes([1, 0, 0x40004000400040, 0x40004000400040, 0, 0, 0x1010101010101010, 0])[0]
    (16, 64)
    """
    raw = b"".join(int(w).to_bytes(8, "little", signed=int(w) < 0) for w in words)
    return [(raw[48 + t], int.from_bytes(raw[16 + 2 * t:18 + 2 * t], "little")) for t in range(8)]


class DescriptorScan(StmtExprVisitor):
    """The ``ldtilecfg`` sites of a statement (``sites``: their descriptor variables) and the words stored into
    each descriptor (``words``; ``varying``: descriptors with a computed word, or two constants for one)."""

    def __init__(self):
        super().__init__()
        self.sites: list[E.Var] = []
        self.words: dict = {}
        self.varying: set = set()

    def visit_evaluate_(self, op):
        var = config_site(op)
        if var is not None:
            self.sites.append(var)
        super().visit_evaluate_(op)

    def visit_buffer_store_(self, op):
        words = self.words.setdefault(op.buffer.data, {})
        if not (len(op.indices) == 1 and isinstance(op.indices[0], E.IntImm) and isinstance(op.value, E.IntImm)
                and words.setdefault(op.indices[0].value, op.value.value) == op.value.value):
            self.varying.add(op.buffer.data)
        super().visit_buffer_store_(op)

    def constant_descriptor(self, usable=lambda var: True) -> tuple | None:
        """The one descriptor every site loads, its words in order, or None: no site, several descriptors, a
        computed or incomplete one, or one ``usable`` rejects.

        Parameters
        ----------
        usable : callable
            Tests each descriptor variable.

        Returns
        -------
        tuple of int or None
        """
        found = set()
        for var in set(self.sites):
            words = self.words.get(var)
            if var in self.varying or not words or sorted(words) != list(range(len(words))) or not usable(var):
                return None
            found.add(tuple(words[i] for i in range(len(words))))
        return found.pop() if len(found) == 1 else None


class _StatementDescriptors(DescriptorScan):
    def visit_expr(self, expr):  # sites and descriptor stores are statements: expressions need no walk
        return None


class _TileCodeFinder(StmtExprVisitor):
    def __init__(self):
        super().__init__()
        self.found = False

    def visit_expr(self, expr):  # tile instructions are statements, Evaluate(call): expressions need no walk
        return None

    def visit_evaluate_(self, op):
        name = llvm_intrin_name(op.value)
        self.found |= name is not None and name.startswith(_TILE_PREFIXES)


def has_tile_code(stmt) -> bool:
    """Whether ``stmt`` holds an AMX tile instruction (a load, store, dot product or configuration).

    Parameters
    ----------
    stmt : Stmt
        A statement.

    Returns
    -------
    bool
    """
    finder = _TileCodeFinder()
    finder.visit_stmt(stmt)
    return finder.found


class TileEffects(StmtExprVisitor):
    """What a statement does to tile registers and buffers: ``written`` the tiles it loads, zeroes or (by
    ``ldtilecfg``/``tilerelease``) resets, ``accumulated`` the tiles dot products accumulate into, ``buffers`` the
    data variables of every buffer it reads or writes (tile loads and stores included, through ``address_of``)."""

    def __init__(self):
        super().__init__()
        self.written, self.accumulated, self.buffers = set(), set(), set()

    def visit_call_(self, op):
        name = llvm_intrin_name(op)
        if name is not None and name.startswith("llvm.x86.") and len(op.args) > 1 and \
                isinstance(op.args[1], E.IntImm):
            if name.startswith("llvm.x86.tdp"):
                self.accumulated.add(op.args[1].value)
            elif name in TILE_LOADS or name == TILE_ZERO:
                self.written.add(op.args[1].value)
        elif name in (LDTILECFG, TILERELEASE):
            self.written.update(range(8))
        super().visit_call_(op)

    def visit_buffer_load_(self, op):
        self.buffers.add(op.buffer.data)
        super().visit_buffer_load_(op)

    def visit_buffer_store_(self, op):
        self.buffers.add(op.buffer.data)
        super().visit_buffer_store_(op)


def tile_effects(stmt) -> TileEffects:
    """``TileEffects`` of ``stmt``.

    Parameters
    ----------
    stmt : Stmt
        A statement.

    Returns
    -------
    TileEffects
    """
    effects = TileEffects()
    effects.visit_stmt(stmt)
    return effects


def tile_access(stmt, names):
    """``(tile, buffer, index, stride in bytes)`` when ``stmt`` calls one of the tile loads or stores ``names`` on a
    flat buffer at a constant tile and stride.

    Parameters
    ----------
    stmt : Stmt
        A statement.
    names : sequence of str
        LLVM intrinsic names (``"llvm.x86.tileloadd64"``).

    Returns
    -------
    tuple or None
        None for any other statement.
    """
    if not isinstance(stmt, S.Evaluate) or llvm_intrin_name(stmt.value) not in names:
        return None
    tile, address, stride = stmt.value.args[1:4]
    if not (isinstance(tile, E.IntImm) and isinstance(stride, E.IntImm) and isinstance(address, E.Call)
            and address.op.name == "tir.address_of" and len(address.args[0].indices) == 1):
        return None
    load = address.args[0]
    return tile.value, load.buffer, load.indices[0], stride.value


def single_tile_shapes(body) -> list[tuple[int, int]] | None:
    """The tile shapes (``tile_shapes``) of the one constant descriptor every ``ldtilecfg`` in ``body`` loads, or
    None (no ``ldtilecfg``, or several or computed descriptors).

    Parameters
    ----------
    body : Stmt
        A function's body.

    Returns
    -------
    list of (int, int) or None
    """
    scan = _StatementDescriptors()
    scan.visit_stmt(body)
    words = scan.constant_descriptor()
    return None if words is None else tile_shapes(words)


def tile_cells(shapes, access) -> np.ndarray | None:
    """The elements of a flat buffer a tile load or store covers, as offsets from its index: the tile's rows
    (``shapes``, from ``single_tile_shapes``) at the access's row stride; None when the stride or the tile's row
    is not a whole number of elements.

    Parameters
    ----------
    shapes : list of (int, int)
        Rows and bytes per row of each tile.
    access : tuple
        ``tile_access``'s ``(tile, buffer, index, stride in bytes)``.

    Returns
    -------
    numpy.ndarray or None

    Examples
    --------
    >>> from tensorize.ir.buffer import decl_buffer
    >>> C = decl_buffer((64,), "int32", "C")
    >>> tile_cells([(2, 8)], (0, C, 0, 16)).tolist()
    [0, 1, 4, 5]
    """
    tile, buffer, _, stride = access
    element = dt.bits_of(buffer.dtype) // 8
    rows, colsb = shapes[tile]
    if not rows or stride % element or colsb % element:
        return None
    return (np.arange(rows)[:, None] * (stride // element) + np.arange(colsb // element)[None, :]).ravel()
