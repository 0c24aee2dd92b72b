"""Per-channel affine maps and the arithmetic of folding them into a linear layer's weights.

Inference-mode BatchNormalization, and the scale and shift that end a LayerNorm, are affine per
channel: y = x·s + t.  Next to a linear layer such a map disappears at compile time.  After the
layer it scales the layer's output channels (W' = W·diag(s), b' = b·s + t); before the layer it
scales the layer's input channels (W' = diag(s)·W, b' = b + t·W).  The arithmetic runs in
float64 and the results are stored in the weight's dtype.
"""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, Value

DEFAULT_BN_EPSILON = 1e-5


def batchnorm_affine(bn: Node) -> tuple[np.ndarray, np.ndarray]:
    """(s, t) of an inference BatchNormalization with constant parameters, per channel."""
    scale, bias, mean, var = (bn.inputs[i].constant_value().astype(np.float64).reshape(-1)
                              for i in range(1, 5))
    s = scale / np.sqrt(var + float(bn.attrs.get("epsilon", DEFAULT_BN_EPSILON)))
    return s, bias - mean * s


def scale_axis(array: np.ndarray, factors: np.ndarray, axis: int) -> np.ndarray:
    """``array`` (as float64) with slice i along ``axis`` multiplied by ``factors[i]``."""
    shape = [1] * array.ndim
    shape[axis] = -1
    return array.astype(np.float64) * factors.reshape(shape)


def gemm_weight_axes(gemm: Node) -> tuple[int, int]:
    """(input-channel axis, output-channel axis) of a Gemm's B, which transB transposes."""
    return (1, 0) if gemm.attrs.get("transB", 0) else (0, 1)


def new_weight(graph: Graph, like: Value, array: np.ndarray) -> Value:
    """A new initializer holding ``array`` in ``like``'s dtype, named after ``like``."""
    dtype = like.constant_value().dtype
    return graph.add_initializer(f"{like.name}_folded", array.astype(dtype))
