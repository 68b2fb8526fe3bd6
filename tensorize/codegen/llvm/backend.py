"""LLVM itself: one-time initialisation, target machines, the O3 pipeline, JIT and object emission.

LLVM is initialised once per process. Each build makes its own target machine: MCJIT takes
ownership of the machine it is given, so machines are never shared between engines.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
from functools import lru_cache

import llvmlite.binding as llvm

from ...errors import TVMError
from ...runtime.openmp import pin_openmp_runtime
from ...target import Target
from ...target.llvm import initialize  # LLVM's one-time set-up, shared with target parsing

logger = logging.getLogger(__name__)
_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def load_openmp() -> str:
    """Load libgomp into the process so JIT code can call ``GOMP_parallel``; returns its name.

    Returns
    -------
    str
        The loaded library's name.
    """
    name = pin_openmp_runtime()
    if name is None:
        raise TVMError("parallel loops need the OpenMP runtime libgomp, which was not found; "
                       "install it (Debian/Ubuntu: apt-get install libgomp1)")
    llvm.load_library_permanently(name)
    return name


# Conversions to and from float16 that LLVM lowers to library calls on CPUs without F16C (the plain
# "llvm" target is generic x86-64). MCJIT does not find these in the process by itself; a call of an
# unresolved symbol jumps to address 0.
_HALF_LIBCALLS = ("__extendhfsf2", "__truncsfhf2", "__truncdfhf2")


@lru_cache(maxsize=1)
def load_compiler_runtime() -> tuple[str, ...]:
    """Make the compiler runtime's float16 conversion helpers (libgcc) visible to JIT code; returns the
    names registered.

    Returns
    -------
    tuple of str
        The registered symbol names.
    """
    candidates = [ctypes.util.find_library("gcc_s"), "libgcc_s.so.1", "libgcc_s.1.dylib"]
    for name in filter(None, candidates):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        found = []
        for symbol in _HALF_LIBCALLS:
            if llvm.address_of_symbol(symbol):
                found.append(symbol)
            elif hasattr(lib, symbol):
                llvm.add_symbol(symbol, ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value)
                found.append(symbol)
        return tuple(found)
    logger.warning("libgcc_s was not found: float16 conversions on CPUs without F16C cannot run; build for "
                   "the host CPU (target 'llvm -mcpu=native') instead")
    return ()


def normalize_triple(triple: str) -> str:
    """The triple with a vendor part, as LLVM expects it (``aarch64-linux-gnu`` -> ``aarch64-unknown-linux-gnu``).

    Parameters
    ----------
    triple : str
        The triple.

    Returns
    -------
    str
        The triple.
    """
    parts = triple.split("-")
    if len(parts) == 3 and parts[1] == "linux":  # aarch64-linux-gnu -> aarch64-unknown-linux-gnu
        return f"{parts[0]}-unknown-{parts[1]}-{parts[2]}"
    return triple


def create_target_machine(target: Target, jit: bool) -> llvm.TargetMachine:
    """A fresh LLVM target machine for ``target`` at O3.

    Parameters
    ----------
    target : Target
        The target.
    jit : bool
        For the JIT (default code model) rather than a shared library (PIC).

    Returns
    -------
    llvm.TargetMachine
        The machine.
    """
    initialize()
    triple = normalize_triple(target.mtriple)
    try:
        llvm_target = llvm.Target.from_triple(triple)
    except RuntimeError as err:
        raise TVMError(f"LLVM has no backend for triple {triple!r} (from target {target}): {err}") from None
    return llvm_target.create_target_machine(cpu=target.mcpu, features=target.llvm_feature_string(), opt=3,
                                             reloc="default" if jit else "pic",
                                             codemodel="jitdefault" if jit else "default", jit=jit)


def parse(text: str) -> llvm.ModuleRef:
    """Parse and verify LLVM IR text.

    Parameters
    ----------
    text : str
        The IR.

    Returns
    -------
    llvm.ModuleRef
        The module.
    """
    initialize()
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as err:
        raise TVMError(f"generated LLVM IR is invalid (a code generator bug): {err}") from None
    return module


def optimize(module: llvm.ModuleRef, machine: llvm.TargetMachine) -> None:
    """Run LLVM's O3 pipeline with the loop and SLP vectorizers.

    Parameters
    ----------
    module : llvm.ModuleRef
        The module (changed in place).
    machine : llvm.TargetMachine
        The target machine.
    """
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    tuning.loop_unrolling = True
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(module, builder)


class JitEngine:
    """An MCJIT engine owning one compiled module; resolves function and global addresses.

    The machine code is generated when the engine is made, which for a large unrolled kernel
    costs as much as emitting its object file; ``LazyJit`` defers it to the first use, so a
    module that is only exported (the tuning builder's case) never pays it.
    """

    def __init__(self, module: llvm.ModuleRef, machine: llvm.TargetMachine):
        load_compiler_runtime()
        with _LOCK:
            self.engine = llvm.create_mcjit_compiler(module, machine)
            self.engine.finalize_object()
            self.engine.run_static_constructors()
        self.module = module

    def function_address(self, name: str) -> int:
        """The address of the JIT-compiled function ``name``.

        Parameters
        ----------
        name : str
            The symbol.

        Returns
        -------
        int
            The address.
        """
        return self.engine.get_function_address(name)

    def global_address(self, name: str) -> int:
        """The address of the global ``name`` in the JIT-compiled code.

        Parameters
        ----------
        name : str
            The symbol.

        Returns
        -------
        int
            The address.
        """
        return self.engine.get_global_value_address(name)


class LazyJit:
    """A ``JitEngine`` made on first use: compiling the module to machine code in this process is
    skipped when nobody asks for an address (e.g. a module built only to ``export_library``).

    Parameters
    ----------
    module : llvm.ModuleRef
        The optimised module (owned by the engine once it is made).
    machine : llvm.TargetMachine
        A JIT target machine (owned likewise).
    on_create : callable, optional
        ``on_create(engine)`` right after the engine is made (e.g. to set globals).

    Examples
    --------
    >>> lazy = LazyJit(module, machine)          # doctest: +SKIP
    >>> lazy.created                             # doctest: +SKIP
    False
    >>> lazy.function_address("main") != 0       # doctest: +SKIP
    True
    """

    def __init__(self, module: llvm.ModuleRef, machine: llvm.TargetMachine, on_create=None):
        self._module, self._machine, self._on_create = module, machine, on_create
        self._engine: JitEngine | None = None
        self._lock = threading.Lock()

    @property
    def created(self) -> bool:
        """Whether the machine code was generated (the engine exists)."""
        return self._engine is not None

    @property
    def engine(self) -> JitEngine:
        """The engine, made now if it was not yet (the machine code is generated then)."""
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    engine = JitEngine(self._module, self._machine)
                    self._module = self._machine = None
                    if self._on_create is not None:
                        self._on_create(engine)
                    self._engine = engine
        return self._engine

    def function_address(self, name: str) -> int:
        """The address of the function ``name`` (compiling the module first if it was not yet).

        Parameters
        ----------
        name : str
            The symbol.

        Returns
        -------
        int
            The address.
        """
        return self.engine.function_address(name)

    def global_address(self, name: str) -> int:
        """The address of the global ``name`` (compiling the module first if it was not yet).

        Parameters
        ----------
        name : str
            The symbol.

        Returns
        -------
        int
            The address.
        """
        return self.engine.global_address(name)
