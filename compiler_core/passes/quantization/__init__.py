"""INT8 post-training quantization: calibration, QDQ insertion, and folding QDQ into int8 ops."""

from . import fold, quantize  # noqa: F401 - registers quantize_int8 and fold_qdq
