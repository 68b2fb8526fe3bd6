"""``tvm.nd``: the older name of the tensor API (``tvm.nd.array``, ``tvm.nd.empty``, ``tvm.nd.NDArray``)."""
from .runtime.device import cpu, cuda, device, gpu
from .runtime.ndarray import NDArray, Tensor, array, empty, from_numpy

__all__ = ["array", "empty", "from_numpy", "NDArray", "Tensor", "cpu", "cuda", "gpu", "device"]
