"""RMS normalization written out in primitive ops (Llama, Qwen2, Mistral decoders)."""


def _mean(v):
    # ReduceMean over the last axis, kept: axes are an attribute up to opset 17 and a
    # constant input from opset 18 on.
    return ReduceMean(v, axes=[-1], keepdims=1) | ReduceMean(v, [-1], keepdims=1)


def rmsnorm(x, weight):
    """RMS normalization over the last axis: x / sqrt(mean(x²) + eps), then an optional
    weight."""
    rms = Sqrt(_mean(x ** 2 | x * x) + const())
    normalized = x / rms | x * Reciprocal(rms) | x * (1 / rms)
    return normalized * weight.same_size_as("x", -1) | normalized
