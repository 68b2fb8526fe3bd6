"""``tvm.runtime``: devices, tensors, compiled modules and timing."""
from .device import Device, cpu, cuda, device, gpu
from .module import Module, PackedFunc
from .ndarray import NDArray, Tensor, array, empty, from_numpy, tensor
from .profiling import BenchmarkResult, ProfileResult
from .signature import BufferParam, FunctionSignature, ScalarParam

__all__ = ["Device", "cpu", "cuda", "gpu", "device", "Module", "PackedFunc", "NDArray", "Tensor", "array", "empty",
           "from_numpy", "tensor", "BenchmarkResult", "ProfileResult", "FunctionSignature", "BufferParam",
           "ScalarParam"]
