"""Lowering the final graph for one runtime: fused nodes become that runtime's own operators."""

from .onnxruntime import INLINE, Lowering, LoweredNode, lower_for_onnxruntime

__all__ = ["INLINE", "Lowering", "LoweredNode", "lower_for_onnxruntime"]
