"""The arithmetic of int8 quantization: real value = scale · (q − zero_point).

Activations are quantized per tensor and asymmetrically: the observed range [lo, hi] (widened
to contain 0, so that 0.0 — padding, ReLU's floor — is exact) is spread over all 256 codes
-128..127.  Weights are quantized per output channel and symmetrically: each channel's largest
magnitude maps to 127 and the zero point is 0, so an int8 kernel multiplies raw codes and
applies one scale per channel afterwards (-128 is left unused, keeping the range symmetric).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INT8_MIN, INT8_MAX = -128, 127
WEIGHT_MAX = 127  # symmetric weights use -127..127


@dataclass(frozen=True)
class TensorQuantization:
    """Per-tensor parameters of an activation: one scale, one zero point."""

    scale: np.float32
    zero_point: np.int8


def activation_params(lo: float, hi: float) -> TensorQuantization:
    """Asymmetric int8 parameters covering [lo, hi] (and 0)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = (hi - lo) / (INT8_MAX - INT8_MIN)
    if scale == 0.0:
        scale = 1.0  # an all-zero tensor: any scale represents it exactly
    zero_point = int(np.clip(round(INT8_MIN - lo / scale), INT8_MIN, INT8_MAX))
    return TensorQuantization(np.float32(scale), np.int8(zero_point))


def quantize_per_channel(weight: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(int8 codes, float32 scale per channel along ``axis``) of a symmetric quantization."""
    moved = np.moveaxis(weight.astype(np.float64), axis, 0)
    largest = np.abs(moved.reshape(moved.shape[0], -1)).max(axis=1, initial=0.0)
    scale = np.where(largest > 0, largest / WEIGHT_MAX, 1.0).astype(np.float32)
    shape = [1] * weight.ndim
    shape[axis] = -1
    codes = np.clip(np.rint(weight / scale.reshape(shape)), -WEIGHT_MAX, WEIGHT_MAX)
    return codes.astype(np.int8), scale

