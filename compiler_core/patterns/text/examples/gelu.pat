"""GELU written out in primitive ops, as exporters emit it."""


def gelu(x):
    """GELU written out: x·0.5·(1 + erf(x/√2)), or its tanh form, grouped any way exporters
    group the three products."""
    erf = Erf(x / sqrt(2) | x * (1 / sqrt(2)))
    tanh = Tanh(sqrt(2 / pi) * (x + 0.044715 * (x ** 3 | x * x * x)))
    one_plus = 1 + (erf | tanh)
    return 0.5 * (x * one_plus) | x * (0.5 * one_plus) | x * 0.5 * one_plus
