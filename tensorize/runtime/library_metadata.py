"""The metadata an exported library carries: its functions' signatures as JSON, in an object file
linked into the ``.so`` (``load_module`` in ``runtime.library`` reads it back)."""
from __future__ import annotations

import json

from .signature_json import FORMAT_VERSION, signature_to_json

__all__ = ["metadata_json", "metadata_object", "METADATA_SYMBOL", "FORMAT"]

METADATA_SYMBOL = "__tensorize_metadata"
FORMAT = "tensorize.library"


def metadata_json(module) -> str:
    """The JSON document describing ``module``'s functions, as stored in an exported library.

    Parameters
    ----------
    module : Module
        The runtime module.

    Returns
    -------
    str
        The JSON text.
    """
    functions = [signature_to_json(module._signatures[name]) for name in module.function_names]  # noqa: SLF001
    return json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "type_key": module.type_key,
                       "target": str(module.target) if module.target is not None else None,
                       "entry": module.entry_name, "functions": functions,
                       "needs": ["amx-tile"] if getattr(module, "requires_amx", False) else [],
                       "features": list(getattr(module, "features", ()))},
                      separators=(",", ":"))


def metadata_object(module) -> bytes:
    """An object file (for ``module``'s target) defining ``__tensorize_metadata``; linked into exports.

    Parameters
    ----------
    module : Module
        The runtime module.

    Returns
    -------
    bytes
        The object file.
    """
    import llvmlite.ir as ir

    from ..codegen.llvm import backend
    from ..target import Target

    target = module.target if module.target is not None else Target("llvm")
    data = bytearray(metadata_json(module).encode("utf-8") + b"\0")
    llvm_module = ir.Module("tensorize_metadata")
    llvm_module.triple = backend.normalize_triple(target.mtriple)
    var = ir.GlobalVariable(llvm_module, ir.ArrayType(ir.IntType(8), len(data)), METADATA_SYMBOL)
    var.initializer = ir.Constant(var.value_type, data)
    var.global_constant = True
    return backend.create_target_machine(target, jit=False).emit_object(backend.parse(str(llvm_module)))
