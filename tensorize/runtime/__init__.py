"""``tvm.runtime``: devices, tensors, compiled modules (built or loaded from a library) and timing."""
from .device import Device, cpu, cuda, device, gpu
from .library import load_module
from .module import Module, PackedFunc
from .ndarray import NDArray, Tensor, array, empty, from_numpy, tensor
from .profiling import BenchmarkResult, ProfileResult
from .signature import BufferParam, FunctionSignature, ScalarParam

__all__ = ["Device", "cpu", "cuda", "gpu", "device", "Module", "PackedFunc", "load_module", "NDArray", "Tensor",
           "array", "empty", "from_numpy", "tensor", "BenchmarkResult", "ProfileResult", "FunctionSignature",
           "BufferParam", "ScalarParam"]
