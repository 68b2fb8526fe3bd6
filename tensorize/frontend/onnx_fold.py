"""Constant folding of ONNX nodes whose inputs are all known, in numpy (shape arithmetic, weights)."""
from __future__ import annotations

import numpy as np

__all__ = ["FOLDERS", "fold"]


def _axes(node_attrs, inputs, index=1):
    if len(inputs) > index and inputs[index] is not None:
        return [int(a) for a in np.asarray(inputs[index]).reshape(-1)]
    return list(node_attrs.get("axes", []))


def _reshape(x, shape, allowzero=0):
    shape = [int(s) for s in shape]
    if not allowzero:
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x.reshape(shape)


def _unsqueeze(x, axes):
    out_ndim = x.ndim + len(axes)
    for a in sorted(a % out_ndim for a in axes):
        x = np.expand_dims(x, a)
    return x


def _slice(x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[int(a)] = slice(int(s), int(e), int(st))
    return x[tuple(index)]


_ONNX_DTYPES = {1: "float32", 6: "int32", 7: "int64", 9: "bool", 10: "float16", 11: "float64"}

FOLDERS = {
    "Add": lambda a, i: i[0] + i[1], "Sub": lambda a, i: i[0] - i[1], "Mul": lambda a, i: i[0] * i[1],
    "Div": lambda a, i: (i[0] / i[1]).astype(i[0].dtype) if i[0].dtype.kind == "f" else i[0] // i[1],
    "Pow": lambda a, i: np.power(i[0], i[1]).astype(i[0].dtype), "Sqrt": lambda a, i: np.sqrt(i[0]),
    "Neg": lambda a, i: -i[0], "Identity": lambda a, i: i[0],
    "Reshape": lambda a, i: _reshape(i[0], i[1], a.get("allowzero", 0)),
    "Transpose": lambda a, i: np.transpose(i[0], a.get("perm")),
    "Unsqueeze": lambda a, i: _unsqueeze(i[0], _axes(a, i)),
    "Squeeze": lambda a, i: np.squeeze(i[0], axis=tuple(_axes(a, i)) or None),
    "Concat": lambda a, i: np.concatenate(i, axis=a["axis"]),
    "Gather": lambda a, i: np.take(i[0], i[1], axis=a.get("axis", 0)),
    "Cast": lambda a, i: i[0].astype(_ONNX_DTYPES[a["to"]]),
    "Shape": lambda a, i: np.array(i[0].shape, "int64"),
    "Slice": lambda a, i: _slice(i[0], i[1], i[2], *(i[3:5])),
    "Range": lambda a, i: np.arange(i[0], i[1], i[2]).astype(i[0].dtype),
    "ConstantOfShape": lambda a, i: np.full([int(s) for s in i[0]], a["value"].reshape(-1)[0] if "value" in a else 0.0,
                                            dtype=a["value"].dtype if "value" in a else "float32"),
    "Equal": lambda a, i: np.equal(i[0], i[1]), "Where": lambda a, i: np.where(i[0], i[1], i[2]),
    "Expand": lambda a, i: i[0] * np.ones([int(s) for s in i[1]], i[0].dtype),
}


def fold(op_type: str, attrs: dict, inputs: list) -> np.ndarray | None:
    """The value of an ONNX node whose inputs are all known, computed in numpy.

    Parameters
    ----------
    op_type : str
        The ONNX operator name (a key of ``FOLDERS``), e.g. ``"Reshape"``.
    attrs : dict
        The node's attributes, by name.
    inputs : list of numpy.ndarray
        The node's input values, in order (``None`` for an omitted optional input).

    Returns
    -------
    numpy.ndarray or None
        The node's (first) output, or None when ``op_type`` has no folder here.

    Examples
    --------
    >>> import numpy as np
    >>> fold("Shape", {}, [np.zeros((2, 3))]).tolist()
    [2, 3]
    >>> fold("NonMaxSuppression", {}, []) is None
    True
    """
    fn = FOLDERS.get(op_type)
    return None if fn is None else np.asarray(fn(attrs, inputs))
