"""The parser behind ``@T.prim_func``, registered by ``entry`` when it is imported.

``tir`` (the ``T`` namespace) is imported by the parser, so it cannot import the parser back; the
decorator finds the parser here instead. ``tensorize.script`` imports ``entry`` on first use, so the
parser is always registered before a decorator runs.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

_PARSERS: dict[str, Callable[..., Any]] = {}


def register(kind: str, parse: Callable[..., Any]) -> None:
    """Register ``parse`` as the implementation of decorator ``kind`` (``"prim_func"``).

    Parameters
    ----------
    kind : str
        The decorator's name.
    parse : callable
        Its implementation.
    """
    _PARSERS[kind] = parse


def get(kind: str) -> Callable[..., Any]:
    """The registered implementation of ``kind``, loading the parser when nothing registered it yet.

    Parameters
    ----------
    kind : str
        The decorator's name.

    Returns
    -------
    callable
        Its implementation.
    """
    parse = _PARSERS.get(kind)
    if parse is None:
        importlib.import_module(__name__.rsplit(".", 1)[0] + ".entry")
        parse = _PARSERS[kind]
    return parse
