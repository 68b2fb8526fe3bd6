"""Tensors and the operations that produce them: ``placeholder`` and ``compute``.

A ``Tensor`` is output number ``value_index`` of an ``Operation``. Indexing it (``A[i, j]`` or
``A(i, j)``) gives a ``ProducerLoad`` expression; ``create_prim_func`` later turns every tensor
into a Buffer and every load into a BufferLoad.

>>> A = placeholder((8,), name="A")
>>> B = compute((8,), lambda *i: A(*i) + 1.0, name="B")
>>> B.op.axis[0].var.name, B.dtype, B.ndim
('i0', 'float32', 1)
"""
from __future__ import annotations

from ..errors import TVMIndexError, TVMTypeError, TVMValueError

import inspect
from typing import Callable, Mapping, Sequence

from ..ir import dtype as dt
from ..ir.expr import IntImm, IterVar, PrimExpr, ProducerLoad, Range, Reduce, SizeVar, Var, convert
from ..ir.functor import post_order_visit


class Operation:
    """Base of the operations of a tensor expression graph. ``output(i)`` is its i-th Tensor."""

    __slots__ = ("name", "tag", "attrs", "_outputs")

    def __init__(self, name: str, tag: str = "", attrs: Mapping | None = None):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self._outputs: tuple[Tensor, ...] = ()

    @property
    def num_outputs(self) -> int:
        """The number of output tensors."""
        return len(self._outputs)

    def output(self, index: int) -> "Tensor":
        """The Tensor holding output number ``index``.

        Parameters
        ----------
        index : int
            The output number.

        Returns
        -------
        Tensor
            The tensor.
        """
        if not 0 <= index < len(self._outputs):
            raise TVMIndexError(f"operation {self.name!r} has {len(self._outputs)} output(s), not {index + 1}")
        return self._outputs[index]

    @property
    def input_tensors(self) -> list["Tensor"]:
        """The tensors this operation reads, in first-use order."""
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class PlaceholderOp(Operation):
    """An input tensor: only a shape and a dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, name: str, shape: Sequence[PrimExpr], dtype: str):
        super().__init__(name)
        self.shape, self.dtype = tuple(shape), dtype
        self._outputs = (Tensor(self.shape, dtype, self, 0),)


class ComputeOp(Operation):
    """``compute``: each output element is an expression (``body[i]`` for output i) of the spatial
    ``axis`` iterators, possibly a reduction over ``reduce_axis``."""

    __slots__ = ("axis", "reduce_axis", "body")

    def __init__(self, name: str, tag: str, attrs: Mapping | None, axis: Sequence[IterVar], body: Sequence[PrimExpr]):
        super().__init__(name, tag, attrs)
        self.axis = tuple(axis)
        self.body = tuple(body)
        self.reduce_axis = _check_reductions(name, self.body)
        shape = tuple(iv.dom.extent for iv in self.axis)
        self._outputs = tuple(Tensor(shape, b.dtype, self, i) for i, b in enumerate(self.body))

    @property
    def input_tensors(self) -> list["Tensor"]:
        """The tensors the computation reads, in first-use order."""
        found: dict[Tensor, None] = {}

        def visit(node):
            if isinstance(node, ProducerLoad):
                found.setdefault(node.producer, None)

        for expr in self.body:
            post_order_visit(expr, visit)
            if isinstance(expr, Reduce):
                for ident in expr.combiner.identity_element:
                    post_order_visit(ident, visit)
                for res in expr.combiner.result:
                    post_order_visit(res, visit)
        return list(found)


def _check_reductions(name: str, body: Sequence[PrimExpr]) -> tuple[IterVar, ...]:
    """The reduction axes of ``body``; reductions must be top level and agree across outputs."""
    first = body[0] if isinstance(body[0], Reduce) else None
    for index, expr in enumerate(body):
        nested: list[Reduce] = []

        def visit(node, top=expr):
            if isinstance(node, Reduce) and node is not top:
                nested.append(node)

        post_order_visit(expr, visit)
        if nested:
            raise TVMValueError(
                f"compute {name!r}: a reduction (te.sum/te.max/...) must be the whole body of the compute, "
                f"not part of a larger expression; compute the reduction in its own te.compute and use its result")
        if (first is None) != (not isinstance(expr, Reduce)):
            raise TVMValueError(f"compute {name!r}: either every output is a reduction or none is (output {index} differs)")
        if first is not None and (expr.combiner is not first.combiner or expr.axis != first.axis
                                  or len(expr.source) != len(first.source)):
            raise TVMValueError(f"compute {name!r}: the outputs of a multi-output reduction must come from one "
                             f"reducer call (e.g. `a, b = argmax((x, y), axis=k)`)")
    return tuple(first.axis) if first is not None else ()


class Tensor:
    """Output ``value_index`` of operation ``op``: ``shape`` (PrimExprs), ``dtype``, ``ndim``.

    ``A[i, j]`` and ``A(i, j)`` build ``ProducerLoad`` expressions."""

    __slots__ = ("shape", "dtype", "op", "value_index")

    def __init__(self, shape: Sequence[PrimExpr], dtype: str, op: Operation, value_index: int):
        self.shape, self.dtype, self.op, self.value_index = tuple(shape), dtype, op, value_index

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    @property
    def name(self) -> str:
        """The name TVM gives: the op's name, with ``.v<i>`` for outputs of a multi-output op."""
        return self.op.name if self.op.num_outputs <= 1 else f"{self.op.name}.v{self.value_index}"

    def __call__(self, *indices) -> ProducerLoad:
        if len(indices) != self.ndim:
            raise TVMIndexError(f"tensor {self.name!r} has {self.ndim} dimension(s), indexed with {len(indices)}")
        return ProducerLoad(self, [_as_index(i) for i in indices])

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        if any(isinstance(i, slice) for i in indices):
            raise TVMIndexError(f"tensor {self.name!r}: slices are not supported in te expressions; index each element")
        if len(indices) < self.ndim:
            return TensorSlice(self, indices)
        return self(*indices)

    def __len__(self) -> int:
        raise TVMTypeError("len() of a te.Tensor is ambiguous; use tensor.shape")

    def __hash__(self) -> int:
        return hash((id(self.op), self.value_index))

    def __eq__(self, other) -> bool:  # type: ignore[override]
        return isinstance(other, Tensor) and other.op is self.op and other.value_index == self.value_index

    def __ne__(self, other) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return f"Tensor(shape={[_show(s) for s in self.shape]}, op.name={self.op.name}, dtype={self.dtype})"


class TensorSlice:
    """``A[i]`` on a tensor with more dimensions: index it further (``A[i][j]``)."""

    __slots__ = ("tensor", "indices")

    def __init__(self, tensor: Tensor, indices: tuple):
        self.tensor, self.indices = tensor, indices

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        return self.tensor[self.indices + indices]


def _show(e) -> str:
    return str(e.value) if isinstance(e, IntImm) else getattr(e, "name", type(e).__name__)


def _as_index(i) -> PrimExpr:
    i = convert(i)
    if not isinstance(i, PrimExpr):
        raise TVMTypeError(f"tensor index must be an integer or an expression, got {i!r}")
    return i


def _as_shape(shape) -> tuple[PrimExpr, ...]:
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    out = []
    for s in shape:
        s = convert(s)
        if not isinstance(s, PrimExpr) or not dt.is_int(s.dtype):
            raise TVMTypeError(f"shape entries must be integers or integer expressions, got {s!r}")
        out.append(s)
    return tuple(out)


def placeholder(shape, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor (``tvm.te.placeholder``).

    Parameters
    ----------
    shape : tuple of int or PrimExpr
        The shape; symbolic sizes such as ``te.var("n")`` are allowed.
    dtype : str
        The element type (``"float32"``, ``"int8"``, ...).
    name : str
        The tensor's name; it names the buffer of ``create_prim_func``.

    Returns
    -------
    Tensor
        The tensor, to index in ``compute`` bodies and to list in ``create_prim_func``.

    Examples
    --------
    >>> A = placeholder((128, 64), name="A")
    >>> [int(s) for s in A.shape], A.dtype
    ([128, 64], 'float32')
    """
    dt.parse(dtype)
    return PlaceholderOp(name, _as_shape(shape), dtype).output(0)


def _fcompute_arg_names(fcompute: Callable, ndim: int) -> list[str]:
    try:
        spec = inspect.getfullargspec(fcompute)
    except TypeError:
        raise TVMTypeError(f"fcompute must be a function of the output indices, e.g. lambda i, j: A[i, j] + 1; "
                           f"got a {type(fcompute).__name__}") from None
    if spec.varkw is not None or spec.kwonlyargs or spec.defaults:
        raise TVMValueError("fcompute takes only positional index arguments (no defaults, keyword or **kwargs)")
    args = list(spec.args)
    if inspect.ismethod(fcompute):
        args = args[1:]
    if spec.varargs is not None:
        if len(args) > ndim:
            raise TVMValueError(f"fcompute takes {len(args)} index arguments but the shape has {ndim} dimension(s)")
        return args + [f"i{i}" for i in range(ndim - len(args))]
    if len(args) != ndim:
        raise TVMValueError(f"fcompute takes {len(args)} index argument(s) ({', '.join(args) or 'none'}) but the "
                         f"shape has {ndim} dimension(s); give one argument per dimension or use *i")
    return args


def compute(shape, fcompute: Callable, name: str = "compute", tag: str = "", attrs: Mapping | None = None):
    """A tensor whose element at index ``i`` is ``fcompute(*i)`` (``tvm.te.compute``).

    Parameters
    ----------
    shape : tuple of int or PrimExpr
        The output shape.
    fcompute : callable
        Takes one index variable per dimension (named after its parameters; ``*i`` gives
        ``i0, i1, ...``) and returns an expression, a reduction (``te.sum(..., axis=k)``) or a
        tuple of them for several outputs.
    name : str
        The tensor's name; it names the block and the buffer of ``create_prim_func``.
    tag, attrs
        Kept on the operation, as in TVM.

    Returns
    -------
    Tensor or list of Tensor
        The output tensor, or one tensor per output when ``fcompute`` returns a tuple.

    Examples
    --------
    >>> from tensorize import te
    >>> A = placeholder((4, 8), name="A")
    >>> k = reduce_axis((0, 8), name="k")
    >>> S = compute((4,), lambda i: te.sum(A[i, k], axis=k), name="S")
    >>> S.op.reduce_axis[0].var.name
    'k'
    """
    shape = _as_shape(shape)
    names = _fcompute_arg_names(fcompute, len(shape))
    axis = [IterVar(Range.from_min_extent(IntImm(s.dtype, 0), s), Var(n, s.dtype), IterVar.DataPar)
            for n, s in zip(names, shape)]
    body = fcompute(*[iv.var for iv in axis])
    bodies = list(body) if isinstance(body, (list, tuple)) else [body]
    if not bodies:
        raise TVMValueError(f"compute {name!r}: fcompute returned no expression")
    bodies = [convert(b) for b in bodies]
    for b in bodies:
        if not isinstance(b, PrimExpr):
            raise TVMTypeError(f"compute {name!r}: fcompute must return expressions, got {type(b).__name__}")
    op = ComputeOp(name, tag, attrs, axis, bodies)
    return op.output(0) if op.num_outputs == 1 else [op.output(i) for i in range(op.num_outputs)]


def reduce_axis(dom, name: str = "rv", thread_tag: str = "", span=None) -> IterVar:
    """A reduction iterator (``tvm.te.reduce_axis``).

    Parameters
    ----------
    dom : tuple of (begin, end), Range, int or PrimExpr
        The iteration domain; an int or expression ``n`` means ``(0, n)``.
    name : str
        The iterator's name.
    thread_tag, span
        As in TVM: a thread tag for GPU reductions, the source position.

    Returns
    -------
    IterVar
        An iterator of kind ``CommReduce`` to pass as ``axis=`` of ``te.sum``/``te.max``/...

    Examples
    --------
    >>> k = reduce_axis((0, 16), "k")
    >>> int(k.dom.extent), k.iter_type == IterVar.CommReduce
    (16, True)
    """
    dom = _as_range(dom)
    return IterVar(dom, Var(name, dom.extent.dtype), IterVar.CommReduce, thread_tag, span)


def _as_range(dom) -> Range:
    if isinstance(dom, Range):
        return dom
    if isinstance(dom, (tuple, list)) and len(dom) == 2:
        return Range(dom[0], dom[1])
    if isinstance(dom, (int, PrimExpr)):
        return Range(0, dom)
    raise TVMTypeError(f"an axis domain is (begin, end) or a Range, got {dom!r}")


def thread_axis(dom=None, tag: str = "", name: str = "", span=None) -> IterVar:
    """An IterVar bound to a GPU thread index: ``thread_axis("threadIdx.x")`` or ``thread_axis((0, 32), "threadIdx.x")``.

    Parameters
    ----------
    dom : Range, tuple or str, optional
        The extent ``(0, n)``, or the tag.
    tag : str
        The thread tag.
    name : str
        The variable's name.
    span : Span, optional
        The source location.

    Returns
    -------
    IterVar
        The thread IterVar.
    """
    if isinstance(dom, str):
        tag, dom = dom, None
    if not tag:
        raise TVMValueError("thread_axis needs a thread tag such as 'threadIdx.x' or 'blockIdx.x'")
    dom = None if dom is None else _as_range(dom)
    return IterVar(dom, Var(name or tag, "int32"), IterVar.ThreadIndex, tag, span)


def var(name: str = "tindex", dtype: str = "int32", span=None) -> Var:
    """A symbolic scalar variable (``te.var("n")`` for a symbolic shape).

    Parameters
    ----------
    name : str
        The name.
    dtype : str
        The dtype.
    span : Span, optional
        The source location.

    Returns
    -------
    Var
        The variable.

    Examples
    --------
    >>> n = te.var("n")
    >>> A = te.placeholder((n,), name="A")
    >>> B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    >>> [p.name for p in te.create_prim_func([A, B]).params]
    ['var_A', 'var_B']
    """
    return Var(name, dtype, span=span)


def size_var(name: str = "size", dtype: str = "int32", span=None) -> SizeVar:
    """A symbolic non-negative size variable.

    Parameters
    ----------
    name : str
        The name.
    dtype : str
        The dtype.
    span : Span, optional
        The source location.

    Returns
    -------
    SizeVar
        The variable.
    """
    return SizeVar(name, dtype, span=span)


__all__ = ["Operation", "PlaceholderOp", "ComputeOp", "Tensor", "TensorSlice", "placeholder", "compute",
           "reduce_axis", "thread_axis", "var", "size_var"]
