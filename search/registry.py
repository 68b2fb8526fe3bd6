"""Components chosen by name: each folder of ``search`` (schedule_rule, postproc, mutator, strategy,
cost_model, measure, ...) keeps a ``Registry`` so experiments swap components by config.

>>> rules = Registry("schedule rule")
>>> @rules.register("noop")
... class NoOp:
...     def __init__(self, level=1):
...         self.level = level
>>> rules.create("noop", level=2).level
2
>>> rules.create("nope")
Traceback (most recent call last):
...
ValueError: unknown schedule rule 'nope'; choose one of: noop
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["Registry"]


class Registry:
    """Classes of one kind of component, by name."""

    def __init__(self, kind: str):
        self.kind = kind
        self._classes: dict[str, Callable[..., Any]] = {}

    def register(self, name: str):
        """Class decorator: make the class available as ``name``."""
        def deco(cls):
            if name in self._classes and self._classes[name] is not cls:
                raise ValueError(f"a {self.kind} named {name!r} is already registered")
            self._classes[name] = cls
            cls.registered_name = name
            return cls
        return deco

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._classes)

    def create(self, spec: Any, **kwargs) -> Any:
        """An instance from a name (``"lgbm_rank"``), a ``{"name": ..., **kwargs}`` mapping, or an instance
        (returned as it is)."""
        if isinstance(spec, dict):
            spec = dict(spec)
            name = spec.pop("name", None)
            if name is None:
                raise ValueError(f"a {self.kind} given as a mapping needs a 'name' key; choose one of: "
                                 + ", ".join(self.names()))
            return self.create(name, **{**spec, **kwargs})
        if not isinstance(spec, str):
            return spec
        cls = self._classes.get(spec)
        if cls is None:
            raise ValueError(f"unknown {self.kind} {spec!r}; choose one of: {', '.join(self.names()) or 'none'}")
        return cls(**kwargs)
