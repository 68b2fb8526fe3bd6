"""tensorize: TensorIR in Python, with TVM's API.

>>> import tensorize as tvm
>>> from tensorize.script import tir as T

Submodules load on first use, so ``import tensorize`` stays fast.
"""
import importlib

__version__ = "0.1.0"

_SUBMODULES = {"ir", "tir", "s_tir", "te", "script", "arith", "transform", "schedule", "codegen", "runtime",
               "target", "nd", "driver", "errors", "testing", "topi"}
# Top-level names TVM users reach for, mapped to the module that defines them.
_NAMES = {
    "IRModule": ("tensorize.ir", "IRModule"),
    "lower": ("tensorize.driver", "lower"),
    "build": ("tensorize.driver", "build"),
    "compile": ("tensorize.driver", "build"),
    "cpu": ("tensorize.runtime", "cpu"),
    "cuda": ("tensorize.runtime", "cuda"),
    "gpu": ("tensorize.runtime", "cuda"),
    "device": ("tensorize.runtime", "device"),
    "Target": ("tensorize.target", "Target"),
    "TVMError": ("tensorize.errors", "TVMError"),
}


def __getattr__(name):
    if name in _SUBMODULES:
        module = importlib.import_module(f"tensorize.{name}")
        globals()[name] = module
        return module
    if name == "tirx":  # current Apache TVM's name for ``tir``: the same module object
        importlib.import_module("tensorize.tirx")
        globals()[name] = globals()["tir"] = importlib.import_module("tensorize.tir")
        return globals()[name]
    if name in _NAMES:
        module_name, attr = _NAMES[name]
        value = getattr(importlib.import_module(module_name), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tensorize' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _SUBMODULES | set(_NAMES))


def _load_printer() -> None:
    from .script import printer  # noqa: F401  (registers itself as the printer of IR nodes)


def _register_printer_loader() -> None:
    from .ir.node import register_printer

    register_printer(load=_load_printer)


_register_printer_loader()
