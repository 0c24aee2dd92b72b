"""FLOPs of ONNX's classical-ML operators (domain ai.onnx.ml, as skl2onnx writes scikit-learn
pipelines), with `op_flops`'s conventions: a multiply-accumulate is 2 ops, an element-wise
step 1 op per output element.

- Scaler (x - offset) * scale: 2 per element; Normalizer: 3 per element (the norm's
  accumulation, the division); Binarizer and Imputer: 1 per element (a compare, a select);
- LinearClassifier and LinearRegressor: X·Wᵀ + b, 2·N·F per class (or target) and 1 for the
  intercept;
- feature extraction and label maps (ArrayFeatureExtractor, ZipMap, ...) move data only.

Tree ensembles and SVMs are left unpriced: their work depends on the paths the samples take
and on the kernel, which a per-op count would only guess.
"""

from __future__ import annotations

from math import prod

from .flop_rules import Rule, item_at, moves_data, numel

ML = "ai.onnx.ml"


def _per_element(steps: int) -> Rule:
    def rule(attrs: dict, ins: list, outs: list) -> int | None:
        count = numel(item_at(ins, 0))
        return None if count is None else count * steps
    return rule


def linear_model_sizes(x, coefficients) -> tuple[int, int, int] | None:
    """A linear model's matrix product X [N, F] · Wᵀ as (samples, features, outputs): one
    weight row per class (or target), the coefficients F at a time; None when unsized."""
    if numel(x) is None or not x or not coefficients or not x[-1]:
        return None
    return prod(x[:-1]), x[-1], len(coefficients) // x[-1]


def _linear(attrs: dict, ins: list, outs: list) -> int | None:
    """2·N·F per class (or target), plus the intercept."""
    sizes = linear_model_sizes(item_at(ins, 0), attrs.get("coefficients"))
    if sizes is None:
        return None
    samples, features, outputs = sizes
    return samples * outputs * (2 * features + 1)


RULES: dict[tuple[str, str], Rule] = {
    (ML, "Scaler"): _per_element(2),
    (ML, "Normalizer"): _per_element(3),
    (ML, "Binarizer"): _per_element(1),
    (ML, "Imputer"): _per_element(1),
    (ML, "LinearClassifier"): _linear,
    (ML, "LinearRegressor"): _linear,
    (ML, "ArrayFeatureExtractor"): moves_data,
    (ML, "ZipMap"): moves_data,
    (ML, "FeatureVectorizer"): moves_data,
    (ML, "CastMap"): moves_data,
    (ML, "DictVectorizer"): moves_data,
}
