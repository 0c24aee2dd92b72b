"""INT8 post-training quantization: calibration, QDQ insertion, and folding QDQ into int8 ops."""

from . import quantize  # noqa: F401 - registers quantize_int8
