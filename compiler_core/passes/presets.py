"""Every pass family, imported so its passes register, and the pipeline presets.

Every module of this package is imported, so a new pass (a new fusion: one module with its
rules) registers by existing; adding its name to a preset below puts it in a pipeline.
Presets follow the levels users know from onnxruntime: `clean` (cleanup only), `O1` (clean +
folding + DCE/CSE), `O2` (O1 + normalization folding, recognition and fusions).
"""

from __future__ import annotations

import importlib
import pkgutil

from .framework.pass_registry import define_preset

_PACKAGE = importlib.import_module(__package__)
for _module in pkgutil.walk_packages(_PACKAGE.__path__, prefix=f"{__package__}."):
    importlib.import_module(_module.name)  # importing a family registers its passes

CLEAN = ["eliminate_dropout", "eliminate_identity", "eliminate_noop", "cancel_transposes",
         "merge_reshapes", "dce"]
# fold_pad right after fold_constants, which turns run-time pad sizes into constants (like
# onnxruntime's basic-level PadFusion).
O1 = CLEAN + ["specialize_dims", "fold_constants", "fold_pad", "eliminate_noop",
              "cancel_transposes", "merge_reshapes", "cse", "dce"]
FUSIONS = [  # fusion passes, in the order they should run
    "fold_batchnorm", "fold_norm_affine", "recognize_layernorm", "recognize_rmsnorm",
    "recognize_gelu", "recognize_silu", "recognize_rotary",
    "fuse_attention", "fuse_skip_layernorm", "fuse_skip_rmsnorm", "fuse_linear_bias_act", "dce"]
# Horizontal fusion goes first (a MatMul fused with its bias is no longer a sibling); element-wise
# fusion goes last, taking only the chains the specific fusions left (fused nodes are opaque).
# A model quantized before it reached us (QDQ form) has its groups folded into integer ops
# first: the float fusions would otherwise take its Conv and Add apart from their Q/DQ.
O2 = O1 + ["fold_qdq", "fuse_sibling_matmuls"] + FUSIONS + ["fuse_elementwise"]
# Opt-in: INT8 post-training quantization after every float optimization (folding BatchNorm
# first gives the quantizer the weights that will actually run), then QDQ folded into int8 ops.
O2_INT8 = O2 + ["quantize_int8", "fold_qdq"]
# Opt-in: split the optimized graph between the target accelerator and the host CPU.
O2_PARTITION = O2 + ["partition"]
# Opt-in: layout conversion adds transposes instead of removing nodes.  It runs before
# element-wise fusion, whose fused nodes it cannot see through.
_AT = O2.index("fuse_elementwise")
O2_NHWC = O2[:_AT] + ["convert_layout_nhwc"] + O2[_AT:]

define_preset("clean", CLEAN, "cleanup only: Dropout, Identity, no-op and redundant "
                              "Reshape/Transpose elimination, dead code")
define_preset("O1", O1, "clean + symbolic-dim specialization, constant folding, zero-Pad "
                        "folding into convolutions, CSE, DCE")
define_preset("O2", O2, "O1 + BatchNorm/LayerNorm folding, recognition (LayerNorm, RMSNorm, "
                        "GELU, SiLU/SwiGLU, rotary) and operator fusion")
define_preset("O2-nhwc", O2_NHWC, "O2 + channels-last (NHWC) layout for convolution regions")
define_preset("O2-int8", O2_INT8, "O2 + INT8 post-training quantization: calibrated "
                                  "QuantizeLinear/DequantizeLinear pairs, int8 weights, "
                                  "folded into QLinearConv/QLinearMatMul where possible")
define_preset("O2-partition", O2_PARTITION, "O2 + partitioning onto the target accelerator "
                                            "with CPU fallback")
