"""Layer normalization written out in primitive ops (exporters below opset 17 emit it)."""


def _mean(v):
    # ReduceMean over the last axis, kept: axes are an attribute up to opset 17 and a
    # constant input from opset 18 on.
    return ReduceMean(v, axes=[-1], keepdims=1) | ReduceMean(v, [-1], keepdims=1)


def layernorm(x, scale, shift):
    """Layer normalization over the last axis: (x - mean) / sqrt(variance + eps) * scale
    + shift."""
    d = x - _mean(x)
    variance = _mean(d ** 2 | d * d)
    normalized = d / Sqrt(variance + const())
    return normalized * scale.same_size_as("x", -1) + shift.same_size_as("x", -1)
