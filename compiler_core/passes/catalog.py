"""Every pass family, imported so its passes register, and the pipeline presets.

Presets follow the levels users know from onnxruntime: `clean` (cleanup only), `O1` (clean +
folding + DCE/CSE), `O2` (O1 + normalization folding, recognition and fusions).
"""

from __future__ import annotations

from . import dead_code  # noqa: F401 - registers passes
from .registry import define_preset

CLEAN = ["dce"]
O1 = CLEAN
O2 = O1

define_preset("clean", CLEAN, "cleanup only: Dropout, Identity, no-op and redundant "
                              "Reshape/Transpose elimination, dead code")
define_preset("O1", O1, "clean + symbolic-dim specialization, constant folding, CSE, DCE")
define_preset("O2", O2, "O1 + BatchNorm/LayerNorm folding, LayerNorm/GELU recognition and "
                        "operator fusion")
