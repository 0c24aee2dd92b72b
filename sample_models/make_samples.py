"""Build GraphLab's bundled sample models.

Run from the repository root:

    python sample_models/make_samples.py                 # every sample + manifest.json
    python sample_models/make_samples.py --only cnn_bn,teach_gelu
    python sample_models/make_samples.py --large sample_models/large   # bert_base.onnx, not committed
    python sample_models/make_samples.py --bert-eager sample_models/large  # 3-layer eager BERT
    python sample_models/make_samples.py --transformers DIR  # today's transformer family, not committed

This is the only file in GraphLab that needs torch / transformers / scikit-learn. Everything it
writes (small .onnx files, one .npz test set, manifest.json) is committed, so the app and the tests
never import torch.

Each sample exists to exhibit one or more compiler artifacts; the docstring of its ``make_*``
function says which. Weights are random but fixed (seeded); biases and normalisation parameters get
a little noise so that exporters do not deduplicate equal constants by accident and so that folds
change numbers in a visible way. Every torch-exported sample is checked against torch with
onnxruntime at shapes different from the export shapes (so dynamic axes are really dynamic).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import json
import logging
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
MANIFEST = "manifest.json"
# Sizes the analyses use for a sample's symbolic dims when the user binds none.
TRANSFORMER_SIZES = {"batch": 1, "seq": 128}
# onnxruntime 1.31 reads IR versions <= 13, onnx 1.23 writes 14 by default.
MAX_IR_VERSION = 10

VOCAB = 1000  # vocabulary of the tiny transformers
MAX_POS = 128


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _torch():
    import torch  # noqa: PLC0415  (imported lazily: --help and the teach graphs need no torch)

    return torch


def _seed(seed: int) -> None:
    torch = _torch()
    torch.manual_seed(seed)
    np.random.seed(seed)


def _perturb(model, std: float = 0.02) -> None:
    """Add N(0, std) noise to every bias and to LayerNorm/BatchNorm scales; randomise BN stats.

    Freshly initialised models have all-zero biases and all-one norm weights; the TorchScript
    exporter would deduplicate those equal initializers into Identity aliases and BN/LN folds would
    be numerically trivial.
    """
    torch = _torch()
    nn = torch.nn
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.LayerNorm, nn.modules.batchnorm._BatchNorm)):
                if module.weight is not None:
                    module.weight.add_(torch.randn_like(module.weight) * std)
            bias = getattr(module, "bias", None)
            if isinstance(bias, nn.Parameter):
                bias.add_(torch.randn_like(bias) * std)
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 1.5)


def _fix_ir_version(path: Path) -> int:
    """Make sure onnxruntime can load the file (IR version <= MAX_IR_VERSION); return it."""
    model = onnx.load(str(path))
    if model.ir_version > MAX_IR_VERSION:
        model.ir_version = MAX_IR_VERSION
        onnx.save(model, str(path))
    return model.ir_version


def _strip_stack_traces(path: Path) -> None:
    """Drop the dynamo exporter's per-node Python stack traces (they hold this machine's file
    paths); keep the other metadata (namespace, class hierarchy, name scopes, fx node)."""
    model = onnx.load(str(path))
    for node in model.graph.node:
        keep = [p for p in node.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del node.metadata_props[:]
        node.metadata_props.extend(keep)
    onnx.save(model, str(path))


def _assert_no_local_paths(path: Path) -> None:
    data = path.read_bytes()
    for needle in {str(HERE), str(Path.home()), "site-packages"}:
        assert needle.encode() not in data, f"{path.name} contains a machine-specific path ({needle})"


def _opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _check_against_torch(path: Path, module, feeds: list[dict[str, np.ndarray]], atol=1e-4) -> float:
    """Run the ONNX file and the torch module on each feed; assert they agree; return max error."""
    torch = _torch()
    sess = _session(path)
    worst = 0.0
    for feed in feeds:
        got = sess.run(None, feed)
        with torch.no_grad():
            ref = module(*[torch.from_numpy(v) for v in feed.values()])
        ref = ref if isinstance(ref, (tuple, list)) else (ref,)
        for g, r in zip(got, ref, strict=True):
            r = r.numpy()
            assert g.shape == r.shape, (path.name, g.shape, r.shape)
            worst = max(worst, float(np.abs(g - r).max()))
    assert worst < atol, f"{path.name}: onnxruntime differs from torch by {worst}"
    return worst


def _torchscript_export(module, args, path: Path, **kwargs) -> None:
    """torch.onnx.export with the legacy TorchScript exporter.

    Its deprecation warning and the tracer's "this value will be treated as a constant" warnings
    are silenced; every sample is instead checked against torch at other input shapes.
    """
    torch = _torch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(module, args, str(path), dynamo=False, **kwargs)


def _entry(name, path, description, exporter, tags, notes, test_data=None, **extra) -> dict:
    """A manifest entry; ``teaches_pass`` (a teaching sample's) names the pass it is about,
    which the app opens on."""
    model = onnx.load(str(path))
    entry = {
        "name": name,
        "file": path.name,
        "description": description,
        "exporter": exporter,
        "opset": _opset(model),
        "tags": tags,
        "test_data": test_data,
        "notes": notes,
    }
    entry.update(extra)
    return entry


def summarize(path: Path) -> str:
    model = onnx.load(str(path))
    hist = collections.Counter(n.op_type for n in model.graph.node)
    top = ", ".join(f"{op} {n}" for op, n in hist.most_common(10))
    more = f", +{len(hist) - 10} more op types" if len(hist) > 10 else ""
    return (f"{path.name}: {len(model.graph.node)} nodes, {len(hist)} op types, "
            f"{path.stat().st_size / 1024:.0f} KB, ir {model.ir_version}, opset {_opset(model)}\n"
            f"    {top}{more}")


# --------------------------------------------------------------------------------------------
# CNNs
# --------------------------------------------------------------------------------------------


def make_cnn_bn(out: Path) -> dict:
    """Conv+BatchNorm folding and Identity elimination.

    Exported in eval mode with do_constant_folding=False, so BatchNormalization stays a separate
    node after each Conv (the TorchScript exporter would otherwise fold it itself). The auxiliary
    (deep-supervision) head is initialised as a copy of the main head: the exporter deduplicates
    the equal initializers and leaves Identity aliases (aux_head.weight = Identity(head.weight)).
    """
    torch = _torch()
    nn = torch.nn

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()

            def block(cin, cout, bias):
                return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=bias),
                                     nn.BatchNorm2d(cout), nn.ReLU())

            self.block1 = block(3, 16, bias=True)
            self.block2 = block(16, 32, bias=False)
            self.block3 = block(32, 32, bias=False)
            self.pool = nn.MaxPool2d(2)
            self.head = nn.Linear(32, 10)
            self.aux_head = nn.Linear(32, 10)

        def forward(self, image):
            x = self.pool(self.block1(image))
            mid = self.pool(self.block2(x))
            x = self.block3(mid)
            logits = self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))
            aux = self.aux_head(torch.flatten(nn.functional.adaptive_avg_pool2d(mid, 1), 1))
            return logits, aux

    _seed(1)
    model = SmallCNN()
    _perturb(model)
    model.aux_head.load_state_dict(copy.deepcopy(model.head.state_dict()))  # tied at init
    model.eval()
    path = out / "cnn_bn.onnx"
    _torchscript_export(model, (torch.randn(1, 3, 32, 32),), path, opset_version=13,
                        do_constant_folding=False, input_names=["image"],
                        output_names=["logits", "aux_logits"],
                        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"},
                                      "aux_logits": {0: "batch"}})
    rng = np.random.default_rng(0)
    _check_against_torch(path, model, [{"image": rng.standard_normal((2, 3, 32, 32), np.float32)}])
    return _entry(
        "cnn_bn", path,
        "Small CNN: three Conv+BatchNorm+ReLU blocks, max pooling and two linear heads (32x32 RGB input).",
        "torchscript", ["cnn", "batchnorm", "identity"],
        "Eval-mode export with do_constant_folding=False keeps BatchNormalization unfolded. "
        "aux_head starts as a copy of head, so the exporter deduplicated the equal initializers "
        "into Identity nodes. Dynamic batch; input 1x3x32x32.", sizes={"batch": 1})


def make_mlp_dropout(out: Path) -> dict:
    """Dropout elimination: Dropout nodes exported in training mode (training_mode input = true).

    An eliminator must NOT treat these as no-ops blindly: with training_mode=true the node is
    random. (onnxruntime's default graph optimizations remove them anyway; with optimizations
    disabled it really drops activations.)
    """
    torch = _torch()
    nn = torch.nn
    _seed(2)
    model = nn.Sequential(
        nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(64, 10))
    _perturb(model)
    path = out / "mlp_dropout.onnx"
    model.train()
    _torchscript_export(model, (torch.randn(2, 32),), path, opset_version=13,
                        training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                        input_names=["x"], output_names=["logits"],
                        dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    # onnxruntime's default optimizations drop the Dropouts, so the result equals eval-mode torch.
    model.eval()
    rng = np.random.default_rng(0)
    _check_against_torch(path, model, [{"x": rng.standard_normal((3, 32), np.float32)}])
    return _entry(
        "mlp_dropout", path,
        "Three-layer MLP (32 -> 64 -> 64 -> 10) with Dropout exported in training mode.",
        "torchscript", ["mlp", "dropout", "training-mode"],
        "Dropout nodes carry training_mode=true (a Constant input) and ratios 0.1 and 0.2. "
        "onnxruntime's default graph optimizations eliminate them anyway (output equals the eval "
        "model); with ORT_DISABLE_ALL they drop activations at random.", sizes={"batch": 1})


def _same_padding(size, kernel: int, stride: int, dilation: int = 1):
    """TF 'SAME' padding for one spatial dim, like timm's get_same_padding.

    Under tracing `size` is a tensor, so the exporter records the arithmetic as ONNX ops.
    """
    torch = _torch()
    if isinstance(size, torch.Tensor):
        return torch.clamp(((size / stride).ceil() - 1) * stride + (kernel - 1) * dilation + 1 - size, min=0)
    return max((math.ceil(size / stride) - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)


def make_mobilenet_tiny(out: Path) -> dict:
    """Shape-computation subgraphs and depthwise convolutions.

    Strided convolutions use TF-style SAME padding computed at run time from the input size
    (like timm's Conv2dSame), so with dynamic height/width the exporter emits
    Shape/Gather/Cast/Div/Ceil/Sub/Clip/Concat/Pad subgraphs in front of each of them. Depthwise
    separable blocks (Conv with group = channels, then a 1x1 Conv) with ReLU6 (Clip) activations
    exercise Conv+activation fusion and layout passes; BN is folded by the exporter.
    """
    torch = _torch()
    nn = torch.nn
    F = nn.functional

    class Conv2dSame(nn.Conv2d):
        def forward(self, x):
            ih, iw = x.shape[-2], x.shape[-1]
            k, s, d = self.kernel_size, self.stride, self.dilation
            pad_h = _same_padding(ih, k[0], s[0], d[0])
            pad_w = _same_padding(iw, k[1], s[1], d[1])
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
            return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def conv_bn(cin, cout, k, stride, groups=1):
        conv = (Conv2dSame(cin, cout, k, stride, groups=groups, bias=False) if stride > 1
                else nn.Conv2d(cin, cout, k, stride, padding=k // 2, groups=groups, bias=False))
        return nn.Sequential(conv, nn.BatchNorm2d(cout), nn.ReLU6())

    def dw_separable(cin, cout, stride):
        return nn.Sequential(conv_bn(cin, cin, 3, stride, groups=cin), conv_bn(cin, cout, 1, 1))

    class MobileNetTiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = conv_bn(3, 16, 3, 2)
            self.blocks = nn.Sequential(dw_separable(16, 24, 1), dw_separable(24, 32, 2),
                                        dw_separable(32, 32, 1), dw_separable(32, 64, 2))
            self.classifier = nn.Linear(64, 10)

        def forward(self, image):
            x = self.blocks(self.stem(image))
            return self.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    _seed(3)
    model = MobileNetTiny()
    _perturb(model)
    model.eval()
    path = out / "mobilenet_tiny.onnx"
    _torchscript_export(model, (torch.randn(1, 3, 33, 31),), path, opset_version=13,
                        input_names=["image"], output_names=["logits"],
                        dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"},
                                      "logits": {0: "batch"}})
    rng = np.random.default_rng(0)
    feeds = [{"image": rng.standard_normal(s, np.float32)}
             for s in [(1, 3, 32, 32), (2, 3, 45, 29), (1, 3, 96, 97)]]
    _check_against_torch(path, model, feeds)
    return _entry(
        "mobilenet_tiny", path,
        "MobileNet-style CNN: depthwise separable blocks, ReLU6, TF 'same' padding computed from the input size.",
        "torchscript", ["cnn", "depthwise", "dynamic-shape", "shape-subgraph", "pad"],
        "Dynamic batch, height and width (bind e.g. 1x3x32x32). Each stride-2 conv is preceded by "
        "a run-time padding subgraph (Shape/Gather/Cast/Div/Ceil/Sub/Clip/Concat/Pad), as timm's "
        "Conv2dSame exports. BatchNorm was folded into the convs by the exporter.",
        sizes={"batch": 1, "height": 32, "width": 32})


def make_mobilenet_zeropad(out: Path) -> dict:
    """Explicit zero Pads in front of convolutions and pooling, with constant sizes.

    A MobileNetV2-style network written the way ports of TF models write it: every 3x3 conv has
    padding=0 and an nn.ZeroPad2d in front (asymmetric (0, 1, 0, 1) before stride-2 convs, as TF
    'SAME' pads), and the stem's max pooling pads its ReLU output with ZeroPad2d too. Exported at
    a fixed input size, each one is a Pad node with constant sizes right before a Conv or MaxPool,
    which the Conv's (or MaxPool's, since ReLU output is >= 0) own pads could absorb.
    """
    torch = _torch()
    nn = torch.nn

    def conv_bn(cin, cout, k, stride, groups=1, act=True):
        pad = [] if k == 1 else [nn.ZeroPad2d((0, 1, 0, 1) if stride == 2 else k // 2)]
        layers = [*pad, nn.Conv2d(cin, cout, k, stride, 0, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, *([nn.ReLU6()] if act else []))

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.residual = stride == 1 and cin == cout
            self.body = nn.Sequential(conv_bn(cin, hidden, 1, 1),
                                      conv_bn(hidden, hidden, 3, stride, groups=hidden),
                                      conv_bn(hidden, cout, 1, 1, act=False))

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    class MobileNetZeroPad(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.ZeroPad2d(1), nn.Conv2d(3, 16, 3, 1, 0, bias=False),
                                      nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.ZeroPad2d(1), nn.MaxPool2d(3, 2))
            self.blocks = nn.Sequential(
                InvertedResidual(16, 16, 1, 1), InvertedResidual(16, 24, 2, 4),
                InvertedResidual(24, 24, 1, 4), InvertedResidual(24, 32, 2, 4),
                InvertedResidual(32, 32, 1, 4), InvertedResidual(32, 40, 2, 4),
                InvertedResidual(40, 40, 1, 4))
            self.head = conv_bn(40, 80, 1, 1)
            self.classifier = nn.Linear(80, 10)

        def forward(self, image):
            x = self.head(self.blocks(self.stem(image)))
            return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    _seed(5)
    model = MobileNetZeroPad()
    _perturb(model)
    model.eval()
    path = out / "mobilenet_zeropad.onnx"
    _torchscript_export(model, (torch.randn(1, 3, 64, 64),), path, opset_version=13,
                        input_names=["image"], output_names=["logits"])
    rng = np.random.default_rng(0)
    _check_against_torch(path, model, [{"image": rng.standard_normal((1, 3, 64, 64), np.float32)}])
    pads = sum(n.op_type == "Pad" for n in onnx.load(str(path)).graph.node)
    return _entry(
        "mobilenet_zeropad", path,
        "MobileNetV2-style CNN (inverted residual blocks, ReLU6) with an explicit nn.ZeroPad2d "
        "before every 3x3 conv and before the stem's max pooling; fixed 1x3x64x64 input.",
        "torchscript", ["cnn", "depthwise", "pad", "residual"],
        f"{pads} zero Pad nodes, each read by one Conv (padding=0) or by the stem's MaxPool (after "
        "ReLU, so its input is >= 0): padding a Conv's or pool's own pads can absorb. Their pads "
        "come from small all-constant subgraphs (ConstantOfShape/Concat/Slice/Transpose/Reshape/"
        "Cast, how the TorchScript exporter writes F.pad at opset 13) that constant folding "
        "reduces. Stride-2 depthwise convs get TF-style asymmetric (0, 1, 0, 1) padding. "
        "BatchNorm was folded into the convs by the exporter.",
        teaches_pass="fold_pad")


def make_mobilenet_qdq(out: Path) -> dict:
    """A model quantized before it reaches GraphLab: mobilenet_zeropad through onnxruntime's
    own static quantizer, in QDQ form.

    No torch needed: onnxruntime's pre-processing (shape inference, its basic optimizations,
    which fold the zero Pads into the convolutions), then ``quantize_static`` with uint8
    activations, int8 weights per output channel and int32 biases, calibrated on 8 batches of
    standard-normal images.  Every Conv, Add, pooling, Flatten and the classifier's Gemm sits
    between DequantizeLinear and QuantizeLinear: the groups ``fold_qdq`` turns into integer
    ops (and onnxruntime at ORT_ENABLE_EXTENDED into its QLinear/QGemm operators).
    """
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,  # noqa: PLC0415
                                          QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process  # noqa: PLC0415

    source = HERE / "mobilenet_zeropad.onnx"
    rng = np.random.default_rng(0)
    batches = [{"image": rng.standard_normal((1, 3, 64, 64), np.float32)} for _ in range(8)]

    class Batches(CalibrationDataReader):
        def __init__(self):
            self.pending = iter(batches)

        def get_next(self):
            return next(self.pending, None)

    path = out / "mobilenet_qdq.onnx"
    with tempfile.TemporaryDirectory() as scratch:
        prepared = Path(scratch) / "prepared.onnx"
        quant_pre_process(str(source), str(prepared))
        quantize_static(str(prepared), str(path), Batches(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        per_channel=True)
    ops = collections.Counter(n.op_type for n in onnx.load(str(path)).graph.node)
    return _entry(
        "mobilenet_qdq", path,
        "mobilenet_zeropad quantized by onnxruntime's quantize_static (QDQ format: uint8 "
        "activations, int8 per-channel weights, int32 biases); fixed 1x3x64x64 input.",
        "onnxruntime.quantization", ["cnn", "quantized", "qdq", "int8"],
        f"{sum(ops.values())} nodes: {ops['QuantizeLinear']} QuantizeLinear, "
        f"{ops['DequantizeLinear']} DequantizeLinear around {ops['Conv']} Conv, {ops['Add']} "
        "Add, Pad, MaxPool, GlobalAveragePool, Flatten and Gemm. Calibrated on random "
        "images, so its ranges are only as representative as those.",
        teaches_pass="fold_qdq")


def make_digits_cnn(out: Path) -> dict:
    """A model with real weights and a real test set, for INT8 quantization accuracy checks.

    Trained on scikit-learn's 8x8 handwritten digits; BN left unfolded so the BN fold and the
    quantizer's calibration both have work to do. The .npz holds the held-out test split.
    """
    torch = _torch()
    nn = torch.nn
    from sklearn.datasets import load_digits  # noqa: PLC0415
    from sklearn.model_selection import train_test_split  # noqa: PLC0415

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]  # N x 1 x 8 x 8 in [0, 1]
    labels = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=0.25, random_state=0, stratify=labels)

    _seed(4)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    gen = torch.Generator().manual_seed(4)
    start = time.time()
    model.train()
    for _epoch in range(20):
        for idx in torch.randperm(len(xt), generator=gen).split(64):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model.eval()
    train_seconds = time.time() - start

    path = out / "digits_cnn.onnx"
    _torchscript_export(model, (torch.from_numpy(x_test[:2]),), path, opset_version=13,
                        do_constant_folding=False, input_names=["image"], output_names=["logits"],
                        dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    _check_against_torch(path, model, [{"image": x_test}])
    logits = _session(path).run(None, {"image": x_test})[0]
    accuracy = round(float((logits.argmax(1) == y_test).mean()), 4)
    assert accuracy >= 0.95, accuracy
    np.savez_compressed(out / "digits_cnn_test.npz", image=x_test, labels=y_test)
    print(f"    digits_cnn: trained {train_seconds:.1f} s, onnxruntime test accuracy {accuracy:.4f} "
          f"on {len(y_test)} images")
    return _entry(
        "digits_cnn", path,
        "Small CNN trained on scikit-learn's 8x8 handwritten digits (real weights, 10 classes).",
        "torchscript", ["cnn", "batchnorm", "trained", "quantization"],
        f"Trained 20 epochs (Adam) on {len(y_train)} images; test split: {len(y_test)} images "
        f"(test_size=0.25, random_state=0, stratified), pixels scaled to [0, 1]. Accuracy measured "
        f"with onnxruntime. BatchNormalization left unfolded.",
        test_data="digits_cnn_test.npz", test_accuracy=accuracy, sizes={"batch": 1})


# --------------------------------------------------------------------------------------------
# transformers
# --------------------------------------------------------------------------------------------


def _bert(config_kwargs: dict, seed: int):
    """A BertModel wrapped so that its forward takes (input_ids, attention_mask, token_type_ids)."""
    torch = _torch()
    from transformers import BertConfig, BertModel  # noqa: PLC0415

    class BertWrapper(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                            token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    def build(attn_implementation: str):
        _seed(seed)
        config = BertConfig(**config_kwargs)
        config._attn_implementation = attn_implementation
        model = BertWrapper(BertModel(config))
        _perturb(model)
        return model.eval()

    return build


def _bert_tiny():
    return _bert(dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=256, max_position_embeddings=MAX_POS), seed=5)


BERT_INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
BERT_OUTPUTS = ["last_hidden_state", "pooler_output"]
BERT_AXES = {**{k: {0: "batch", 1: "seq"} for k in BERT_INPUTS + ["last_hidden_state"]},
             "pooler_output": {0: "batch"}}


def _token_feeds(names: list[str], shapes, vocab: int = VOCAB, seed: int = 0) -> list[dict]:
    """Token inputs at several shapes; the first sequence of each batch has padding at the end."""
    rng = np.random.default_rng(seed)
    feeds = []
    for batch, seq in shapes:
        feed = {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64),
                "attention_mask": np.ones((batch, seq), np.int64),
                "token_type_ids": np.zeros((batch, seq), np.int64)}
        if seq > 3:
            feed["attention_mask"][0, -2:] = 0
            feed["token_type_ids"][:, seq // 2:] = 1
        feeds.append({k: feed[k] for k in names})
    return feeds


def _example_tokens(names: list[str], batch: int = 2, seq: int = 8):
    torch = _torch()
    return tuple(torch.from_numpy(v) for v in _token_feeds(names, [(batch, seq)], seed=123)[0].values())


class _Captured:
    text = ""


@contextlib.contextmanager
def _output_captured():
    """Capture file descriptors 1 and 2. When an export fails, the TorchScript exporter's C++
    logger dumps the whole Torch IR graph to stdout; we only want the output if it succeeds."""
    captured = _Captured()
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        for fd in saved:
            os.dup2(tmp.fileno(), fd)
        try:
            yield captured
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy_fd in saved.items():
                os.dup2(copy_fd, fd)
                os.close(copy_fd)
            tmp.seek(0)
            captured.text = tmp.read().decode(errors="replace")


def _export_with_attention_fallback(build, export) -> tuple[object, str, str]:
    """Export with the default attention implementation (SDPA); fall back to eager if that fails.

    Returns (model, implementation used, note about the fallback).
    """
    try:
        model = build("sdpa")
        with _output_captured() as captured:
            export(model)
        sys.stderr.write(captured.text)  # success: show the exporter's warnings after all
        return model, "sdpa", ""
    except Exception as exc:  # noqa: BLE001  -- any exporter failure means: try eager
        reason = str(exc).strip().splitlines()[0].split(". ")[0][:200]
        print(f"    SDPA export failed ({type(exc).__name__}: {reason}); retrying with eager attention")
        model = build("eager")
        export(model)
        return model, "eager", f" SDPA export failed ({reason}), so eager attention was used."


def _make_bert_torchscript(out: Path, name: str, opset: int) -> tuple[Path, str, str]:
    path = out / f"{name}.onnx"

    def export(model):
        _torchscript_export(model, _example_tokens(BERT_INPUTS), path, opset_version=opset,
                            input_names=BERT_INPUTS, output_names=BERT_OUTPUTS, dynamic_axes=BERT_AXES)

    model, attn, note = _export_with_attention_fallback(_bert_tiny(), export)
    _check_against_torch(path, model, _token_feeds(BERT_INPUTS, [(1, 8), (3, 11), (2, 1)]))
    return path, attn, note


BERT_TINY_DESC = ("Tiny BERT encoder (2 layers, hidden 64, 2 heads, FFN 256, vocab 1000), random weights; "
                  "inputs input_ids, attention_mask, token_type_ids [batch, seq].")


def make_bert_tiny_op13(out: Path) -> dict:
    """Decomposed LayerNorm and GELU: the TorchScript exporter at opset 13 writes LayerNorm as
    ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add and GELU as Div/Erf/Add/Mul/Mul, i.e. the
    patterns that LayerNorm, SkipLayerNorm, GELU and BiasGelu fusions must find."""
    path, attn, note = _make_bert_torchscript(out, "bert_tiny_op13", 13)
    return _entry("bert_tiny_op13", path, BERT_TINY_DESC, "torchscript",
                  ["transformer", "bert", "decomposed-layernorm", "erf-gelu", "dynamic-shape"],
                  f"attention implementation: {attn}.{note} Dynamic axes batch and seq "
                  f"(max {MAX_POS} positions).", sizes=TRANSFORMER_SIZES)


def make_bert_tiny_op20(out: Path) -> dict:
    """Same weights as bert_tiny_op13, TorchScript exporter at opset 20: LayerNormalization and Gelu
    are single ops, but the graph carries many Shape/Gather/Unsqueeze/Concat/Constant nodes
    (shape arithmetic) for shape-folding and cleanup passes."""
    path, attn, note = _make_bert_torchscript(out, "bert_tiny_op20", 20)
    return _entry("bert_tiny_op20", path, BERT_TINY_DESC, "torchscript",
                  ["transformer", "bert", "layernormalization", "gelu-op", "shape-subgraph",
                   "dynamic-shape"],
                  f"attention implementation: {attn}.{note} Same weights as bert_tiny_op13. "
                  f"Dynamic axes batch and seq.", sizes=TRANSFORMER_SIZES)


def make_bert_tiny_dynamo(out: Path) -> dict:
    """Same weights, exported with the torch.export-based (dynamo) exporter: far fewer nodes,
    different naming and different attention-mask construction than the TorchScript exporter."""
    torch = _torch()
    path = out / "bert_tiny_dynamo.onnx"
    batch = torch.export.Dim("batch")
    seq = torch.export.Dim("seq", max=MAX_POS)

    def export(model):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(
                model, _example_tokens(BERT_INPUTS), dynamo=True, opset_version=20, verbose=False,
                input_names=BERT_INPUTS, output_names=BERT_OUTPUTS,
                dynamic_shapes={k: {0: batch, 1: seq} for k in BERT_INPUTS})
        program.save(str(path), external_data=False)

    # the exporter logs a warning for each torchvision op it cannot register; irrelevant here
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    model, attn, note = _export_with_attention_fallback(_bert_tiny(), export)
    _strip_stack_traces(path)
    _fix_ir_version(path)
    _check_against_torch(path, model, _token_feeds(BERT_INPUTS, [(1, 8), (3, 11), (2, 1)]))
    return _entry("bert_tiny_dynamo", path, BERT_TINY_DESC, "dynamo",
                  ["transformer", "bert", "layernormalization", "gelu-op", "dynamic-shape"],
                  f"attention implementation: {attn}.{note} Same weights as bert_tiny_op13. "
                  f"torch.onnx.export(dynamo=True), dynamic batch and seq (seq <= {MAX_POS}).",
                  sizes=TRANSFORMER_SIZES)


def make_gpt2_tiny(out: Path) -> dict:
    """Tanh-form GELU (gelu_new -> FastGelu fusion), causal attention mask construction, GPT-2's
    Conv1D projections (Gemm after Reshape) and the LM head tied to the token embedding."""
    torch = _torch()
    from transformers import GPT2Config, GPT2LMHeadModel  # noqa: PLC0415

    class GPT2Wrapper(torch.nn.Module):
        def __init__(self, gpt2):
            super().__init__()
            self.gpt2 = gpt2

        def forward(self, input_ids, attention_mask):
            return self.gpt2(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    def build(attn_implementation: str):
        _seed(6)
        config = GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=2, n_positions=MAX_POS,
                            activation_function="gelu_new", use_cache=False,
                            bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
        config._attn_implementation = attn_implementation
        model = GPT2Wrapper(GPT2LMHeadModel(config))
        _perturb(model)
        return model.eval()

    names = ["input_ids", "attention_mask"]
    path = out / "gpt2_tiny.onnx"

    def export(model):
        _torchscript_export(model, _example_tokens(names), path, opset_version=14,
                            input_names=names, output_names=["logits"],
                            dynamic_axes={k: {0: "batch", 1: "seq"} for k in names + ["logits"]})

    model, attn, note = _export_with_attention_fallback(build, export)
    _check_against_torch(path, model, _token_feeds(names, [(1, 8), (3, 11), (1, 1)]))
    return _entry(
        "gpt2_tiny", path,
        "Tiny GPT-2 language model (2 layers, hidden 64, 2 heads, vocab 1000), random weights; "
        "inputs input_ids, attention_mask [batch, seq], output logits.",
        "torchscript", ["transformer", "gpt2", "decoder", "tanh-gelu", "decomposed-layernorm",
                        "dynamic-shape"],
        f"attention implementation: {attn}.{note} activation gelu_new (tanh GELU), no past key "
        f"values (use_cache=False). LM head tied to the token embedding. Dynamic batch and seq.",
        sizes=TRANSFORMER_SIZES)


# --------------------------------------------------------------------------------------------
# today's LLMs (the architectures live in transformer_family.py)
# --------------------------------------------------------------------------------------------


def _family_sample(out: Path, name: str, model: str, exporter: str, tags: list[str],
                   notes: str, sizes: dict[str, int]) -> dict:
    """One export of the transformer family, renamed to a sample and checked against torch."""
    import transformer_family  # noqa: PLC0415  (needs torch: imported only when building)

    spec = transformer_family.FAMILY[model]()
    with tempfile.TemporaryDirectory() as scratch:
        written = transformer_family.export(spec, exporter, Path(scratch))
        path = out / f"{name}.onnx"
        path.write_bytes(written.read_bytes())
    return _entry(name, path, spec.teaches, exporter, tags, notes, sizes=sizes)


LLAMA_NOTES = ("Hidden 64, 2 layers, 4 query heads sharing 2 key/value heads (head size 16), "
               "SwiGLU MLP of width 128, vocab 256, random weights. Inputs input_ids and "
               "attention_mask [batch, seq] (seq <= 120), output logits.")


def make_llama_tiny_torchscript(out: Path) -> dict:
    """GQA with repeat-kv written as Unsqueeze/Expand/Reshape, rotary as rotate-half
    (Slice/Neg/Concat) with cos/sin gathered from caches, RMSNorm as Pow/ReduceMean/Add/Sqrt/
    Div, SwiGLU as Sigmoid/Mul: the TorchScript exporter's spelling at opset 17."""
    return _family_sample(out, "llama_tiny_torchscript", "llama", "torchscript",
                          ["transformer", "llm", "decoder", "gqa", "rotary", "rmsnorm", "swiglu",
                           "causal-mask", "dynamic-shape"], LLAMA_NOTES, TRANSFORMER_SIZES)


def make_llama_tiny_dynamo(out: Path) -> dict:
    """The same architecture through the dynamo exporter (opset 20): far fewer nodes, RMSNorm
    with Reciprocal + Mul, positions computed in the graph."""
    return _family_sample(out, "llama_tiny_dynamo", "llama", "dynamo",
                          ["transformer", "llm", "decoder", "gqa", "rotary", "rmsnorm", "swiglu",
                           "causal-mask", "dynamic-shape"], LLAMA_NOTES, TRANSFORMER_SIZES)


def make_bart_tiny(out: Path) -> dict:
    """Encoder-decoder: the decoder's cross-attention reads Q from the decoder and K/V from
    the encoder output, so its two sequence lengths differ."""
    return _family_sample(out, "bart_tiny", "bart", "dynamo",
                          ["transformer", "encoder-decoder", "cross-attention", "padding-mask",
                           "causal-mask", "dynamic-shape"],
                          "Hidden 64, 2 encoder and 2 decoder layers, 4 heads, vocab 256, random "
                          "weights. Inputs input_ids, attention_mask [batch, seq] and "
                          "decoder_input_ids [batch, target], output logits.",
                          {**TRANSFORMER_SIZES, "target": 32})


# --------------------------------------------------------------------------------------------
# hand-made teaching graphs (onnx.helper)
# --------------------------------------------------------------------------------------------


def _const(name: str, array) -> TensorProto:
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def _save_teach(out: Path, name: str, graph: onnx.GraphProto, opset: int = 13) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="graphlab-make_samples")
    model.ir_version = MAX_IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    path = out / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _vi(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def make_teach_conv_bn(out: Path) -> dict:
    """Conv+BN fold: `conv_good -> bn_good` folds; `conv_shared -> bn_shared` cannot, because
    conv_shared's output is also read by `relu_side` (a side branch that is a graph output)."""
    rng = np.random.default_rng(10)

    def bn_params(prefix, c):
        return [_const(f"{prefix}_scale", 1 + 0.1 * rng.standard_normal(c)),
                _const(f"{prefix}_bias", 0.1 * rng.standard_normal(c)),
                _const(f"{prefix}_mean", 0.1 * rng.standard_normal(c)),
                _const(f"{prefix}_var", rng.uniform(0.5, 1.5, c))]

    inits = [_const("conv_good_w", 0.3 * rng.standard_normal((8, 3, 3, 3))),
             _const("conv_good_b", 0.1 * rng.standard_normal(8)),
             *bn_params("bn_good", 8),
             _const("conv_shared_w", 0.2 * rng.standard_normal((8, 8, 3, 3))),
             *bn_params("bn_shared", 8)]
    bn = lambda p: [f"{p}_scale", f"{p}_bias", f"{p}_mean", f"{p}_var"]  # noqa: E731
    nodes = [
        helper.make_node("Conv", ["image", "conv_good_w", "conv_good_b"], ["conv_good_out"],
                         name="conv_good", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv_good_out", *bn("bn_good")], ["bn_good_out"],
                         name="bn_good", epsilon=1e-5),
        helper.make_node("Relu", ["bn_good_out"], ["relu_good_out"], name="relu_good"),
        helper.make_node("Conv", ["relu_good_out", "conv_shared_w"], ["conv_shared_out"],
                         name="conv_shared", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv_shared_out", *bn("bn_shared")],
                         ["bn_shared_out"], name="bn_shared", epsilon=1e-5),
        helper.make_node("Relu", ["bn_shared_out"], ["features"], name="relu_out"),
        helper.make_node("Relu", ["conv_shared_out"], ["side_branch"], name="relu_side"),
    ]
    graph = helper.make_graph(
        nodes, "teach_conv_bn", [_vi("image", [1, 3, 16, 16])],
        [_vi("features", [1, 8, 16, 16]), _vi("side_branch", [1, 8, 16, 16])], inits,
        doc_string="Conv+BatchNorm fold. Good: conv_good -> bn_good. Near miss: conv_shared -> "
                   "bn_shared, blocked because conv_shared_out is also used by relu_side.")
    path = _save_teach(out, "teach_conv_bn", graph)
    return _entry("teach_conv_bn", path,
                  "Teaching graph: one Conv+BatchNorm pair that folds, one that cannot (the conv output has a second consumer).",
                  "onnx.helper", ["teaching", "conv-bn-fold", "near-miss"],
                  "Good site: conv_good -> bn_good. Near miss: conv_shared -> bn_shared; "
                  "conv_shared_out also feeds relu_side, whose output side_branch is a graph output.",
                  teaches_pass="fold_batchnorm")


def _layernorm_nodes(prefix: str, x: str, out: str, axis: int) -> list:
    """A decomposed LayerNorm (opset 13: ReduceMean axes is an attribute) reducing over `axis`."""
    p = prefix
    return [
        helper.make_node("ReduceMean", [x], [f"{p}_mean_out"], name=f"{p}_mean", axes=[axis], keepdims=1),
        helper.make_node("Sub", [x, f"{p}_mean_out"], [f"{p}_centered"], name=f"{p}_sub"),
        helper.make_node("Pow", [f"{p}_centered", f"{p}_two"], [f"{p}_sq"], name=f"{p}_pow"),
        helper.make_node("ReduceMean", [f"{p}_sq"], [f"{p}_var_out"], name=f"{p}_var", axes=[axis], keepdims=1),
        helper.make_node("Add", [f"{p}_var_out", f"{p}_eps"], [f"{p}_var_eps"], name=f"{p}_add_eps"),
        helper.make_node("Sqrt", [f"{p}_var_eps"], [f"{p}_std"], name=f"{p}_sqrt"),
        helper.make_node("Div", [f"{p}_centered", f"{p}_std"], [f"{p}_normed"], name=f"{p}_div"),
        helper.make_node("Mul", [f"{p}_normed", f"{p}_gamma"], [f"{p}_scaled"], name=f"{p}_scale"),
        helper.make_node("Add", [f"{p}_scaled", f"{p}_beta"], [out], name=f"{p}_shift"),
    ]


def make_teach_layernorm(out: Path) -> dict:
    """LayerNorm fusion: `ln_good_*` reduces over the last axis and fuses; `ln_wrongaxis_*` has the
    same nine ops but its ReduceMeans reduce over axis 1 (tokens), so it is not a LayerNorm."""
    rng = np.random.default_rng(11)
    hidden = 16
    good = _layernorm_nodes("ln_good", "x", "hidden", axis=-1)
    near = _layernorm_nodes("ln_wrongaxis", "hidden", "y", axis=1)
    inits = []
    for p in ("ln_good", "ln_wrongaxis"):
        inits += [_const(f"{p}_two", 2.0), _const(f"{p}_eps", 1e-5),
                  _const(f"{p}_gamma", 1 + 0.1 * rng.standard_normal(hidden)),
                  _const(f"{p}_beta", 0.1 * rng.standard_normal(hidden))]
    graph = helper.make_graph(
        good + near, "teach_layernorm", [_vi("x", [2, 4, hidden])], [_vi("y", [2, 4, hidden])], inits,
        doc_string="LayerNorm fusion. Good: ln_good_* (ReduceMean over axis -1). Near miss: "
                   "ln_wrongaxis_* (ReduceMean over axis 1, not the last axis).")
    path = _save_teach(out, "teach_layernorm", graph)
    return _entry("teach_layernorm", path,
                  "Teaching graph: a decomposed LayerNorm over the last axis (recognized: one LayerNormalization) and one over the wrong axis (a near miss: it stays decomposed).",
                  "onnx.helper", ["teaching", "layernorm-fusion", "near-miss"],
                  "Opset 13, so ReduceMean takes axes as an attribute (axes=[-1] vs axes=[1]). "
                  "Good site: ln_good_mean ... ln_good_shift; near miss: ln_wrongaxis_* on x of shape [2, 4, 16].",
                  teaches_pass="recognize_layernorm")


def _gelu_nodes(prefix: str, x: str, out: str) -> list:
    p = prefix
    return [
        helper.make_node("Div", [x, f"{p}_sqrt2"], [f"{p}_scaled"], name=f"{p}_div"),
        helper.make_node("Erf", [f"{p}_scaled"], [f"{p}_erf_out"], name=f"{p}_erf"),
        helper.make_node("Add", [f"{p}_erf_out", f"{p}_one"], [f"{p}_plus1"], name=f"{p}_add"),
        helper.make_node("Mul", [x, f"{p}_plus1"], [f"{p}_prod"], name=f"{p}_mul"),
        helper.make_node("Mul", [f"{p}_prod", f"{p}_half"], [out], name=f"{p}_half_mul"),
    ]


def make_teach_gelu(out: Path) -> dict:
    """GELU fusion: `gelu_good_*` is x*0.5*(1+erf(x/1.4142135)); `gelu_wrongconst_*` has the same
    shape but divides by 1.5, so it is not GELU and must not be fused."""
    inits = [_const("gelu_good_sqrt2", 1.4142135), _const("gelu_good_one", 1.0),
             _const("gelu_good_half", 0.5),
             _const("gelu_wrongconst_sqrt2", 1.5), _const("gelu_wrongconst_one", 1.0),
             _const("gelu_wrongconst_half", 0.5)]
    nodes = _gelu_nodes("gelu_good", "x", "hidden") + _gelu_nodes("gelu_wrongconst", "hidden", "y")
    graph = helper.make_graph(
        nodes, "teach_gelu", [_vi("x", [2, 16])], [_vi("y", [2, 16])], inits,
        doc_string="GELU fusion. Good: gelu_good_* divides by 1.4142135 (sqrt 2). Near miss: "
                   "gelu_wrongconst_* divides by 1.5.")
    path = _save_teach(out, "teach_gelu", graph)
    return _entry("teach_gelu", path,
                  "Teaching graph: an Erf-form GELU (recognized: one Gelu) and a look-alike with the wrong constant (a near miss: not a GELU, though its element-wise ops fuse later).",
                  "onnx.helper", ["teaching", "gelu-fusion", "near-miss"],
                  "Good site: gelu_good_div/erf/add/mul/half_mul with constant 1.4142135; near miss: "
                  "gelu_wrongconst_* divides by 1.5 (the initializer gelu_wrongconst_sqrt2).",
                  teaches_pass="recognize_gelu")


def make_teach_matmul_bias(out: Path) -> dict:
    """MatMul+Add -> Gemm (or MatMul+bias fusion): `matmul_good -> add_bias_good` adds a constant
    bias; `matmul_inputbias -> add_inputbias` adds the graph input `bias`, which is not constant."""
    rng = np.random.default_rng(12)
    inits = [_const("matmul_good_w", 0.3 * rng.standard_normal((8, 16))),
             _const("add_bias_good_b", 0.1 * rng.standard_normal(16)),
             _const("matmul_inputbias_w", 0.3 * rng.standard_normal((16, 4)))]
    nodes = [
        helper.make_node("MatMul", ["x", "matmul_good_w"], ["matmul_good_out"], name="matmul_good"),
        helper.make_node("Add", ["matmul_good_out", "add_bias_good_b"], ["add_bias_good_out"],
                         name="add_bias_good"),
        helper.make_node("Relu", ["add_bias_good_out"], ["hidden"], name="relu"),
        helper.make_node("MatMul", ["hidden", "matmul_inputbias_w"], ["matmul_inputbias_out"],
                         name="matmul_inputbias"),
        helper.make_node("Add", ["matmul_inputbias_out", "bias"], ["y"], name="add_inputbias"),
    ]
    graph = helper.make_graph(
        nodes, "teach_matmul_bias", [_vi("x", [2, 8]), _vi("bias", [4])], [_vi("y", [2, 4])], inits,
        doc_string="MatMul+bias fusion. Good: matmul_good -> add_bias_good (constant bias). Near "
                   "miss: matmul_inputbias -> add_inputbias (bias is the graph input 'bias').")
    path = _save_teach(out, "teach_matmul_bias", graph)
    return _entry("teach_matmul_bias", path,
                  "Teaching graph: MatMul+Add with a constant bias (fuses with its Relu into a FusedGemm) and with a bias fed as a graph input (a near miss of matmul_add: it only becomes a standard Gemm that reads the bias at run time).",
                  "onnx.helper", ["teaching", "matmul-bias-fusion", "gemm", "near-miss"],
                  "Good site: matmul_good -> add_bias_good (initializer add_bias_good_b); near miss: "
                  "matmul_inputbias -> add_inputbias, whose bias is the graph input 'bias'.",
                  teaches_pass="fuse_linear_bias_act")


# --------------------------------------------------------------------------------------------
# large model (not committed)
# --------------------------------------------------------------------------------------------


def make_bert_base(out_dir: Path) -> Path:
    """BERT-base (12 layers, hidden 768, 12 heads, FFN 3072, vocab 30522), random weights, for
    benchmarks: ~440 MB, TorchScript exporter at opset 14, dynamic batch/seq. Not committed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "bert_base.onnx"
    build = _bert(dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                       intermediate_size=3072, max_position_embeddings=512), seed=7)

    def export(model):
        _torchscript_export(model, _example_tokens(BERT_INPUTS), path, opset_version=14,
                            input_names=BERT_INPUTS, output_names=BERT_OUTPUTS, dynamic_axes=BERT_AXES)

    model, attn, _ = _export_with_attention_fallback(build, export)
    _check_against_torch(path, model, _token_feeds(BERT_INPUTS, [(1, 16), (2, 7)]), atol=1e-3)
    print(f"    bert_base: attention implementation {attn}")
    return path


def make_bert_eager(out_dir: Path, layers: int = 3) -> Path:
    """A small BERT (hidden 256, 4 heads, FFN 1024, vocab 1000) with eager attention, TorchScript
    exporter at opset 13, dynamic batch/seq, random weights; not committed.  Eager attention at
    opset 13 is the form onnxruntime's own fusions know best, so benchmarks/latency.py uses it
    to check that GraphLab's onnxruntime export does not lose speed against them."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"bert_{layers}layer_eager_op13.onnx"
    model = _bert(dict(vocab_size=VOCAB, hidden_size=256, num_hidden_layers=layers,
                       num_attention_heads=4, intermediate_size=1024,
                       max_position_embeddings=MAX_POS), seed=11)("eager")
    _torchscript_export(model, _example_tokens(BERT_INPUTS), path, opset_version=13,
                        input_names=BERT_INPUTS, output_names=BERT_OUTPUTS, dynamic_axes=BERT_AXES)
    _fix_ir_version(path)
    _check_against_torch(path, model, _token_feeds(BERT_INPUTS, [(1, 16), (2, 7)]), atol=1e-3)
    return path


# --------------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------------

SAMPLES = {
    "cnn_bn": make_cnn_bn,
    "mlp_dropout": make_mlp_dropout,
    "bert_tiny_op13": make_bert_tiny_op13,
    "bert_tiny_op20": make_bert_tiny_op20,
    "bert_tiny_dynamo": make_bert_tiny_dynamo,
    "gpt2_tiny": make_gpt2_tiny,
    "llama_tiny_torchscript": make_llama_tiny_torchscript,
    "llama_tiny_dynamo": make_llama_tiny_dynamo,
    "bart_tiny": make_bart_tiny,
    "mobilenet_tiny": make_mobilenet_tiny,
    "mobilenet_zeropad": make_mobilenet_zeropad,
    "mobilenet_qdq": make_mobilenet_qdq,
    "digits_cnn": make_digits_cnn,
    "teach_conv_bn": make_teach_conv_bn,
    "teach_layernorm": make_teach_layernorm,
    "teach_gelu": make_teach_gelu,
    "teach_matmul_bias": make_teach_matmul_bias,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated sample names to (re)generate; "
                                       f"choices: {', '.join(SAMPLES)}")
    parser.add_argument("--out", type=Path, default=HERE, help="output directory (default: next to this script)")
    parser.add_argument("--large", type=Path, metavar="OUT_DIR",
                        help="only write bert_base.onnx (~440 MB, not committed) into OUT_DIR")
    parser.add_argument("--bert-eager", type=Path, metavar="OUT_DIR",
                        help="only write a small BERT with eager attention at opset 13 (not "
                             "committed) into OUT_DIR, with --layers layers")
    parser.add_argument("--layers", type=int, default=3, help="layers of --bert-eager's BERT")
    parser.add_argument("--transformers", type=Path, metavar="OUT_DIR",
                        help="only write the transformer family (Llama, Qwen2, Mistral, MQA, a "
                             "KV-cache decode step, nn.TransformerEncoder, BART, ViT; both "
                             "exporters; not committed) into OUT_DIR")
    args = parser.parse_args(argv)

    if args.transformers is not None:
        import transformer_family  # noqa: PLC0415

        for path in transformer_family.export_family(args.transformers):
            print(summarize(path))
        return

    if args.large is not None:
        path = make_bert_base(args.large)
        print(summarize(path))
        return
    if args.bert_eager is not None:
        print(summarize(make_bert_eager(args.bert_eager, args.layers)))
        return

    names = list(SAMPLES) if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SAMPLES]
    if unknown:
        parser.error(f"unknown sample(s) {unknown}; choose from {list(SAMPLES)}")

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    entries: dict[str, dict] = {}
    if manifest_path.exists():
        entries = {e["name"]: e for e in json.loads(manifest_path.read_text())["samples"]}

    for name in names:
        start = time.time()
        entry = SAMPLES[name](out)
        ir = _fix_ir_version(out / entry["file"])
        _session(out / entry["file"])  # must load in onnxruntime as written
        _assert_no_local_paths(out / entry["file"])
        assert ir <= MAX_IR_VERSION
        entries[name] = entry
        print(f"[{time.time() - start:5.1f} s] {summarize(out / entry['file'])}")

    ordered = [entries[n] for n in SAMPLES if n in entries]
    manifest_path.write_text(json.dumps({"samples": ordered}, indent=2) + "\n")

    files = {e["file"] for e in ordered} | {e["test_data"] for e in ordered if e["test_data"]}
    total = sum((out / f).stat().st_size for f in files) + manifest_path.stat().st_size
    print(f"{len(ordered)} samples in {MANIFEST}; total size {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
