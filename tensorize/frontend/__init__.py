"""Frontends: models from other formats as ``tensorize.graph.Graph`` (``from_onnx``)."""
from .onnx import from_onnx

__all__ = ["from_onnx"]
