"""Warp-level matrix operations in CUDA C: WMMA fragments and their calls, inline-PTX ``mma.sync``.

A ``wmma.*`` buffer is an array of ``nvcuda::wmma::fragment``; element ``index`` of the TIR calls is the
fragment number. Shapes come from the calls (``tvm_load_matrix_sync(frag, m, n, k, ...)``), the layout
of ``matrix_a``/``matrix_b`` fragments from the layout string of their load.
"""
from __future__ import annotations

from ...errors import TVMError
from ...ir import expr as E
from ...ir.functor import post_order_visit
from .expr import c_type

_FRAGMENT_CALLS = ("tir.tvm_load_matrix_sync", "tir.tvm_store_matrix_sync", "tir.tvm_fill_fragment")
_WMMA = "nvcuda::wmma::"
_PTX_TYPES = {"fp16": "half", "fp32": "float", "int8": "signed char", "uint8": "unsigned char", "int32": "int",
              "float16": "half", "float32": "float", "s8": "signed char", "s32": "int"}


class FragmentInfo:
    """Shapes and layouts of the WMMA fragments of one kernel, read from the calls on them."""

    def __init__(self):
        self.shape: dict = {}
        self.layout: dict = {}

    def scan(self, body) -> None:
        """Record the shape (and, from loads, the layout) of every fragment a WMMA call in ``body`` uses.

        Parameters
        ----------
        body : Stmt
            The kernel's body.
        """
        def visit(node):
            if isinstance(node, E.Call) and node.op.name in _FRAGMENT_CALLS:
                var = node.args[0]
                self.shape[var] = tuple(int(a.value) for a in node.args[1:4])
                if node.op.name == "tir.tvm_load_matrix_sync":
                    self.layout.setdefault(var, node.args[7].value)

        post_order_visit(body, visit)

    def declaration(self, var, name: str, scope: str, dtype: str, size: int) -> str:
        """The C declaration of the fragment buffer ``name`` (an array of ``nvcuda::wmma::fragment``).

        Parameters
        ----------
        var : Var
            The buffer's data variable.
        name : str
            Its C identifier.
        scope : str
            ``"wmma.matrix_a"``, ``"wmma.matrix_b"`` or ``"wmma.accumulator"``.
        dtype : str
            The element dtype.
        size : int
            Elements in the buffer (one fragment per tile).

        Returns
        -------
        str
            The declaration.

        Raises
        ------
        TVMError
            When no WMMA call uses the buffer (its fragment shape is unknown).
        """
        if var not in self.shape:
            raise TVMError(f"the {scope} buffer {name} is never loaded, filled or stored by a WMMA call, so its "
                           "fragment shape is unknown; tensorize its producer with a wmma_* intrinsic")
        m, n, k = self.shape[var]
        use = scope.split(".")[1]
        rows, cols = {"matrix_a": (m, k), "matrix_b": (k, n), "accumulator": (m, n)}[use]
        count = max(1, size // (rows * cols))
        template = f"{_WMMA}{use}, {m}, {n}, {k}, {c_type(dtype)}"
        if use != "accumulator":
            template += f", {_WMMA}{self.layout.get(var, 'row_major')}"
        return f"{_WMMA}fragment<{template}> {name}[{count}];"


def _layout(text: str) -> str:
    return f"{_WMMA}mem_col_major" if "col" in text else f"{_WMMA}mem_row_major"


def _load(p, e):
    frag, index, ptr, stride = p.expr(e.args[0]), p.expr(e.args[4]), p.expr(e.args[5]), p.expr(e.args[6])
    if p.fragments.layout.get(e.args[0]) is None or _is_accumulator(p, e.args[0]):
        return f"{_WMMA}load_matrix_sync({frag}[{index}], {ptr}, {stride}, {_layout(e.args[7].value)})"
    return f"{_WMMA}load_matrix_sync({frag}[{index}], {ptr}, {stride})"


def _is_accumulator(p, var) -> bool:
    return p.scan.scopes.get(var, "") == "wmma.accumulator"


def _store(p, e):
    frag, index, ptr, stride = p.expr(e.args[0]), p.expr(e.args[4]), p.expr(e.args[5]), p.expr(e.args[6])
    return f"{_WMMA}store_matrix_sync({ptr}, {frag}[{index}], {stride}, {_layout(e.args[7].value)})"


def _fill(p, e):
    return f"{_WMMA}fill_fragment({p.expr(e.args[0])}[{p.expr(e.args[4])}], {p.expr(e.args[5])})"


def _mma(p, e):
    d, di, a, ai, b, bi, c, ci = (p.expr(x) for x in e.args)
    return f"{_WMMA}mma_sync({d}[{di}], {a}[{ai}], {b}[{bi}], {c}[{ci}])"


def _ptx_mma(p, e):
    """``ptx_mma(shape, a_layout, b_layout, a_type, b_type, c_type, a, a_off, b, b_off, c, c_off, saturate)``
    over per-thread register arrays (TVM's argument order)."""
    shape, a_layout, b_layout, a_type, b_type, c_type_ = (x.value for x in e.args[:6])
    a, a_off, b, b_off, c, c_off = (p.expr(x) for x in e.args[6:12])
    if (shape, a_type) == ("m16n8k16", "fp16") and c_type_ == "fp32":
        regs_a, regs_b, regs_c, ctype = 4, 2, 4, "f32"
        op = f"mma.sync.aligned.m16n8k16.{a_layout}.{b_layout}.f32.f16.f16.f32"
    elif (shape, a_type) == ("m16n8k32", "int8") and c_type_ == "int32":
        regs_a, regs_b, regs_c, ctype = 4, 2, 4, "s32"
        op = f"mma.sync.aligned.m16n8k32.{a_layout}.{b_layout}.s32.s8.s8.s32"
    else:
        raise TVMError(f"ptx_mma {shape} {a_type}x{b_type}->{c_type_} is not generated; supported: m16n8k16 "
                       "fp16->fp32 and m16n8k32 int8->int32")
    cty = "float" if ctype == "f32" else "int"
    creg = "f" if ctype == "f32" else "r"
    n_out = regs_c
    outs = ", ".join(f'"+{creg}"((({cty}*)({c} + {c_off}))[{i}])' for i in range(n_out))
    ins_a = [f'"r"(((unsigned*)({a} + {a_off}))[{i}])' for i in range(regs_a)]
    ins_b = [f'"r"(((unsigned*)({b} + {b_off}))[{i}])' for i in range(regs_b)]
    d = ", ".join(f"%{i}" for i in range(n_out))
    av = ", ".join(f"%{n_out + i}" for i in range(regs_a))
    bv = ", ".join(f"%{n_out + regs_a + i}" for i in range(regs_b))
    return (f'asm volatile("{op} {{{d}}}, {{{av}}}, {{{bv}}}, {{{d}}};\\n" : {outs} : '
            f'{", ".join(ins_a + ins_b)})')


def _ptx_ldmatrix(p, e):
    """``ptx_ldmatrix(trans, num, ".b16", local, local_off, smem, smem_off)``: ``ldmatrix.sync`` into registers."""
    trans, num = bool(e.args[0].value), int(e.args[1].value)
    local, local_off, smem, smem_off = (p.expr(x) for x in e.args[3:7])
    regs = ", ".join(f'"=r"(((unsigned*)({local} + {local_off}))[{i}])' for i in range(num))
    outs = ", ".join(f"%{i}" for i in range(num))
    op = f"ldmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    addr = f'"r"((unsigned)__cvta_generic_to_shared({smem} + {smem_off}))'
    return f'asm volatile("{op} {{{outs}}}, [%{num}];\\n" : {regs} : {addr})'


def install_warp_calls(printer) -> None:
    """Teach ``printer`` the warp-level calls (WMMA load/store/fill/mma, PTX mma and ldmatrix).

    Parameters
    ----------
    printer : KernelWriter
        The printer whose ``call_hooks`` get the calls.
    """
    printer.call_hooks.update({
        "tvm_load_matrix_sync": _load, "tvm_store_matrix_sync": _store, "tvm_fill_fragment": _fill,
        "tvm_mma_sync": _mma, "ptx_mma": _ptx_mma, "ptx_ldmatrix": _ptx_ldmatrix,
    })
