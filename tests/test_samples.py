"""The bundled sample models (sample_models/): manifest, files, and what each one must exhibit.

These tests need only onnx, onnxruntime and numpy (never torch): the samples are committed files
made by sample_models/make_samples.py.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

SAMPLES_DIR = Path(__file__).resolve().parents[1] / "sample_models"
MANIFEST_PATH = SAMPLES_DIR / "manifest.json"

EXPECTED = [
    "cnn_bn", "mlp_dropout", "bert_tiny_op13", "bert_tiny_op20", "bert_tiny_dynamo", "gpt2_tiny",
    "llama_tiny_torchscript", "llama_tiny_dynamo", "bart_tiny", "mobilenet_tiny",
    "mobilenet_zeropad", "mobilenet_qdq", "digits_cnn", "teach_conv_bn", "teach_layernorm",
    "teach_gelu", "teach_matmul_bias",
]
TEACHING = [n for n in EXPECTED if n.startswith("teach_")]
BERTS = ["bert_tiny_op13", "bert_tiny_op20", "bert_tiny_dynamo"]
ENTRY_KEYS = {"name", "file", "description", "exporter", "opset", "tags", "test_data", "notes"}
OPTIONAL_KEYS = {"sizes",          # only samples with symbolic dims
                 "teaches_pass"}   # only samples about one pass (the app opens on it)

# small values for the symbolic dimensions the samples declare
DIMS = {"batch": 1, "seq": 8, "height": 32, "width": 32, "target": 4}
DIMS_ALT = {"batch": 2, "seq": 5, "height": 45, "width": 29, "target": 3}


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


@functools.cache
def manifest() -> dict:
    return json.loads(MANIFEST_PATH.read_text())


def entry(name: str) -> dict:
    return next(e for e in manifest()["samples"] if e["name"] == name)


def path_of(name: str) -> Path:
    return SAMPLES_DIR / entry(name)["file"]


@functools.cache
def model(name: str) -> onnx.ModelProto:
    return onnx.load(str(path_of(name)))


@functools.cache
def session(name: str) -> ort.InferenceSession:
    # loaded from the file as written: its original IR version must be readable by onnxruntime
    return ort.InferenceSession(str(path_of(name)), providers=["CPUExecutionProvider"])


def op_counts(m: onnx.ModelProto) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in m.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def node_named(m: onnx.ModelProto, name: str) -> onnx.NodeProto:
    matches = [n for n in m.graph.node if n.name == name]
    assert len(matches) == 1, f"expected one node named {name!r}, found {len(matches)}"
    return matches[0]


def consumers(m: onnx.ModelProto, value: str) -> list[onnx.NodeProto]:
    return [n for n in m.graph.node if value in n.input]


def producer(m: onnx.ModelProto, value: str) -> onnx.NodeProto | None:
    return next((n for n in m.graph.node if value in n.output), None)


def constant_value(m: onnx.ModelProto, value: str) -> np.ndarray | None:
    """The value of an initializer or of a Constant node's output; None if computed."""
    for init in m.graph.initializer:
        if init.name == value:
            return numpy_helper.to_array(init)
    node = producer(m, value)
    if node is not None and node.op_type == "Constant":
        return numpy_helper.to_array(onnx.helper.get_attribute_value(node.attribute[0]))
    return None


def attr(node: onnx.NodeProto, name: str):
    return next(onnx.helper.get_attribute_value(a) for a in node.attribute if a.name == name)


def shape_of(value_info, dims: dict[str, int]) -> list[int | None]:
    """Concrete shape of a graph input/output with symbolic dims bound (None: unknown symbol)."""
    out = []
    for d in value_info.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            out.append(d.dim_value)
        else:
            out.append(dims.get(d.dim_param))
    return out


def vocab_size(m: onnx.ModelProto) -> int:
    """Rows of the embedding table that input_ids index: Gather(table, input_ids), possibly after
    a Reshape/Cast of the ids (GPT-2 views them as [-1, seq] first)."""
    inits = {i.name: i for i in m.graph.initializer}
    frontier = ["input_ids"]
    while frontier:
        value = frontier.pop()
        for node in consumers(m, value):
            if node.op_type == "Gather" and node.input[1] == value and node.input[0] in inits:
                return inits[node.input[0]].dims[0]
            if node.op_type in ("Reshape", "Cast", "Flatten", "Unsqueeze") and node.input[0] == value:
                frontier.append(node.output[0])
    raise AssertionError("no Gather of an embedding table by input_ids")


def make_feeds(name: str, dims: dict[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    m = model(name)
    rng = np.random.default_rng(seed)
    init_names = {i.name for i in m.graph.initializer}
    feeds = {}
    for vi in m.graph.input:
        if vi.name in init_names:
            continue
        shape = shape_of(vi, dims)
        assert None not in shape, f"{name}: input {vi.name} has an unknown symbolic dim: {shape}"
        elem = vi.type.tensor_type.elem_type
        if elem == onnx.TensorProto.FLOAT:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        elif elem == onnx.TensorProto.INT64:
            if vi.name == "input_ids":
                feeds[vi.name] = rng.integers(0, vocab_size(m), shape, dtype=np.int64)
            elif vi.name == "attention_mask":
                feeds[vi.name] = np.ones(shape, np.int64)
            else:  # token_type_ids
                feeds[vi.name] = np.zeros(shape, np.int64)
        else:
            raise AssertionError(f"{name}: unexpected input type {elem} for {vi.name}")
    return feeds


def run(name: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    outs = session(name).run(None, feeds)
    return {o.name: v for o, v in zip(session(name).get_outputs(), outs, strict=True)}


# ------------------------------------------------------------------------------------------------
# manifest and files
# ------------------------------------------------------------------------------------------------


def test_manifest_parses_and_lists_every_sample():
    data = manifest()
    assert set(data) == {"samples"}
    names = [e["name"] for e in data["samples"]]
    assert names == EXPECTED
    for e in data["samples"]:
        extra = {"test_accuracy"} if e["name"] == "digits_cnn" else set()
        assert ENTRY_KEYS | extra <= set(e) <= ENTRY_KEYS | extra | OPTIONAL_KEYS, e["name"]
        assert e["file"] == f"{e['name']}.onnx"
        assert e["exporter"] in {"torchscript", "dynamo", "onnx.helper", "onnxruntime.quantization"}
        assert isinstance(e["opset"], int) and e["opset"] >= 13
        assert e["tags"] and all(isinstance(t, str) for t in e["tags"])
        assert e["description"] and "\n" not in e["description"]
        assert isinstance(e["notes"], str) and e["notes"]
        assert e["test_data"] == ("digits_cnn_test.npz" if e["name"] == "digits_cnn" else None)
    assert {e["name"] for e in data["samples"] if e["exporter"] == "onnx.helper"} == set(TEACHING)
    assert entry("bert_tiny_dynamo")["exporter"] == "dynamo"


def test_files_exist_and_total_size_is_small():
    files = [SAMPLES_DIR / e["file"] for e in manifest()["samples"]]
    files += [SAMPLES_DIR / e["test_data"] for e in manifest()["samples"] if e["test_data"]]
    for f in files:
        assert f.is_file(), f
    total = sum(f.stat().st_size for f in files) + MANIFEST_PATH.stat().st_size
    assert total < 20 * 1024 * 1024, total
    # and the manifest is complete: no stray .onnx sample next to it
    listed = {e["file"] for e in manifest()["samples"]}
    assert {p.name for p in SAMPLES_DIR.glob("*.onnx")} == listed


@pytest.mark.parametrize("name", EXPECTED)
def test_file_matches_manifest(name):
    m = model(name)
    onnx.checker.check_model(m)
    assert m.ir_version <= 10  # onnxruntime 1.31 reads at most 13; onnx 1.23 writes 14 by default
    opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    assert opset == entry(name)["opset"]
    assert len(m.graph.node) > 0 and len(m.graph.output) > 0
    assert all(vi.name for vi in list(m.graph.input) + list(m.graph.output))


# ------------------------------------------------------------------------------------------------
# every sample runs in onnxruntime, at two sizes when it has dynamic axes
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", EXPECTED)
def test_runs_in_onnxruntime(name):
    m = model(name)
    symbolic = {d.dim_param for vi in m.graph.input for d in vi.type.tensor_type.shape.dim
                if d.HasField("dim_param")}
    assert symbolic <= set(DIMS), f"{name}: unexpected symbolic dims {symbolic - set(DIMS)}"
    for dims in ([DIMS, DIMS_ALT] if symbolic else [DIMS]):
        outs = run(name, make_feeds(name, dims))
        for vi in m.graph.output:
            got = outs[vi.name]
            expected = shape_of(vi, dims)
            assert len(got.shape) == len(expected), (vi.name, got.shape, expected)
            for g, e in zip(got.shape, expected, strict=True):
                assert e is None or g == e, (name, vi.name, got.shape, expected)
            assert np.isfinite(got).all(), (name, vi.name)
            assert got.std() > 1e-4, f"{name}: output {vi.name} is constant"


@pytest.mark.parametrize("name", EXPECTED)
def test_manifest_sizes_name_every_symbolic_dim_and_run(name):
    """The sizes the analyses price a sample at are the sample's dims, at sizes it accepts."""
    m = model(name)
    symbolic = {d.dim_param for vi in m.graph.input for d in vi.type.tensor_type.shape.dim
                if d.HasField("dim_param")}
    sizes = entry(name).get("sizes", {})
    assert set(sizes) == symbolic
    if sizes:
        outs = run(name, make_feeds(name, sizes))
        assert all(np.isfinite(out).all() for out in outs.values())


# ------------------------------------------------------------------------------------------------
# torch-exported samples: the artifacts they are there to exhibit
# ------------------------------------------------------------------------------------------------


def test_cnn_bn_has_unfolded_batchnorm_and_identity_aliases():
    m = model("cnn_bn")
    ops = op_counts(m)
    assert ops["Conv"] == 3 and ops["BatchNormalization"] == 3
    for bn in (n for n in m.graph.node if n.op_type == "BatchNormalization"):
        assert producer(m, bn.input[0]).op_type == "Conv"
        mean, var = constant_value(m, bn.input[3]), constant_value(m, bn.input[4])
        assert np.abs(mean).max() > 0.01 and np.abs(var - 1).max() > 0.01  # folds change numbers
    identities = [n for n in m.graph.node if n.op_type == "Identity"]
    assert len(identities) >= 1
    inits = {i.name for i in m.graph.initializer}
    for ident in identities:
        assert ident.input[0] in inits  # an alias of a weight
        assert consumers(m, ident.output[0]), "Identity output should be used"


def test_mlp_dropout_is_in_training_mode():
    m = model("mlp_dropout")
    drops = [n for n in m.graph.node if n.op_type == "Dropout"]
    assert len(drops) == 2
    ratios = sorted(float(constant_value(m, d.input[1])) for d in drops)
    assert ratios == pytest.approx([0.1, 0.2])
    for d in drops:
        assert len(d.input) == 3
        assert bool(constant_value(m, d.input[2])) is True  # training_mode

    # onnxruntime's optimizer removes the Dropouts (deterministic result) ...
    feeds = make_feeds("mlp_dropout", {"batch": 4})
    a, b = (run("mlp_dropout", feeds)["logits"] for _ in range(2))
    np.testing.assert_array_equal(a, b)
    # ... but executed as written they really drop activations, differently on each run.
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    raw = ort.InferenceSession(str(path_of("mlp_dropout")), opts, providers=["CPUExecutionProvider"])
    c, d = (raw.run(None, feeds)[0] for _ in range(2))
    assert np.abs(c - d).max() > 1e-3
    assert np.abs(c - a).max() > 1e-3


def test_bert_op13_has_decomposed_layernorm_and_erf_gelu():
    ops = op_counts(model("bert_tiny_op13"))
    assert ops.get("ReduceMean") == 10  # 5 LayerNorms x (mean, variance)
    assert ops.get("Erf") == 2  # one GELU per layer
    assert ops.get("Sqrt") == 5 and ops.get("Pow") == 5
    assert "LayerNormalization" not in ops and "Gelu" not in ops
    for node in model("bert_tiny_op13").graph.node:
        if node.op_type == "ReduceMean":
            assert list(attr(node, "axes")) == [-1]


def test_bert_op20_has_layernormalization_and_gelu_ops():
    ops = op_counts(model("bert_tiny_op20"))
    assert ops.get("LayerNormalization") == 5
    assert ops.get("Gelu") == 2
    assert "ReduceMean" not in ops and "Erf" not in ops
    assert ops.get("Shape", 0) >= 5 and ops.get("Constant", 0) >= 20  # shape arithmetic


def test_bert_dynamo_is_much_smaller_than_torchscript():
    n_dynamo = len(model("bert_tiny_dynamo").graph.node)
    n_op20 = len(model("bert_tiny_op20").graph.node)
    assert n_dynamo < 0.6 * n_op20
    assert op_counts(model("bert_tiny_dynamo")).get("LayerNormalization") == 5


def _token_batch(vocab: int, batch: int = 2, seq: int = 8, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, (batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), np.int64)
    mask[0, -3:] = 0
    types = np.zeros((batch, seq), np.int64)
    types[:, seq // 2:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def test_three_bert_exports_compute_the_same_function():
    feeds = _token_batch(vocab_size(model("bert_tiny_op13")))
    ref = run("bert_tiny_op13", feeds)
    assert ref["last_hidden_state"].shape == (2, 8, 64) and ref["pooler_output"].shape == (2, 64)
    for name in BERTS[1:]:
        assert vocab_size(model(name)) == 1000
        got = run(name, feeds)
        for key in ("last_hidden_state", "pooler_output"):
            np.testing.assert_allclose(got[key], ref[key], atol=1e-4, err_msg=f"{name} {key}")


@pytest.mark.parametrize("name", BERTS)
def test_bert_attention_mask_really_masks(name):
    """Padding positions must not influence the others: a padded sequence gives the same hidden
    states (on its real tokens) as the same sequence without the padding."""
    feeds = _token_batch(vocab_size(model(name)), batch=1, seq=8)
    feeds["attention_mask"][0, :] = 1
    feeds["attention_mask"][0, 5:] = 0
    padded = run(name, feeds)["last_hidden_state"][0, :5]
    short = run(name, {k: v[:, :5] for k, v in feeds.items()})["last_hidden_state"][0]
    np.testing.assert_allclose(padded, short, atol=1e-4)
    unmasked = run(name, {**feeds, "attention_mask": np.ones_like(feeds["attention_mask"])})
    assert np.abs(unmasked["last_hidden_state"][0, :5] - padded).max() > 1e-3


def test_gpt2_has_tanh_gelu_and_is_causal():
    m = model("gpt2_tiny")
    ops = op_counts(m)
    assert ops.get("Tanh", 0) >= 2  # gelu_new: 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))
    assert ops.get("ReduceMean") == 10  # 5 decomposed LayerNorms at opset 14
    assert entry("gpt2_tiny")["opset"] in (13, 14)
    rng = np.random.default_rng(2)
    ids = rng.integers(0, vocab_size(m), (1, 8), dtype=np.int64)
    full = run("gpt2_tiny", {"input_ids": ids, "attention_mask": np.ones_like(ids)})["logits"]
    assert full.shape == (1, 8, 1000)
    prefix = run("gpt2_tiny", {"input_ids": ids[:, :5],
                               "attention_mask": np.ones((1, 5), np.int64)})["logits"]
    np.testing.assert_allclose(full[:, :5], prefix, atol=1e-4)  # the future is not seen
    assert np.abs(full[:, 5] - full[:, 4]).max() > 1e-3


LLAMAS = ["llama_tiny_torchscript", "llama_tiny_dynamo"]


@pytest.mark.parametrize("name", LLAMAS)
def test_llama_has_grouped_query_attention_rotary_rmsnorm_and_swiglu(name):
    m = model(name)
    ops = op_counts(m)
    assert ops.get("Softmax") == 2  # one attention per layer
    assert ops.get("Neg") == 4  # rotate_half of Q and K in each layer
    assert ops.get("Sigmoid") == 2  # SiLU of each SwiGLU MLP
    squares = [n for n in m.graph.node if n.op_type == "ReduceMean"
               and producer(m, n.input[0]).op_type == "Pow"]
    assert len(squares) == 5  # RMSNorm: two per layer and the final one
    projections = sorted(constant_value(m, n.input[1]).shape[-1] for n in m.graph.node
                         if n.op_type == "MatMul" and constant_value(m, n.input[1]) is not None)
    assert projections.count(32) == 4  # K and V project to 2 heads of 16: fewer than Q's 4


@pytest.mark.parametrize("name", LLAMAS)
def test_llama_is_causal_and_reads_the_padding_mask(name):
    ids = np.random.default_rng(3).integers(0, 256, (1, 8), dtype=np.int64)
    full = run(name, {"input_ids": ids, "attention_mask": np.ones_like(ids)})["logits"]
    prefix = run(name, {"input_ids": ids[:, :5],
                        "attention_mask": np.ones((1, 5), np.int64)})["logits"]
    np.testing.assert_allclose(full[:, :5], prefix, atol=1e-4)  # the future is not seen
    padded = np.ones_like(ids)
    padded[0, :2] = 0
    masked = run(name, {"input_ids": ids, "attention_mask": padded})["logits"]
    assert np.abs(masked[0, -1] - full[0, -1]).max() > 1e-4


def test_llama_exports_compute_the_same_function():
    feeds = make_feeds("llama_tiny_dynamo", DIMS_ALT)
    np.testing.assert_allclose(run("llama_tiny_torchscript", feeds)["logits"],
                               run("llama_tiny_dynamo", feeds)["logits"], atol=1e-4)


def test_bart_decoder_cross_attends_to_the_encoder():
    feeds = make_feeds("bart_tiny", DIMS_ALT)
    base = run("bart_tiny", feeds)["logits"]
    changed = dict(feeds, input_ids=(feeds["input_ids"] + 7) % 256)
    assert np.abs(run("bart_tiny", changed)["logits"] - base).max() > 1e-4
    assert op_counts(model("bart_tiny")).get("Softmax") == 6  # 2 encoder, 2x2 decoder


def test_mobilenet_has_runtime_padding_and_depthwise_convs():
    m = model("mobilenet_tiny")
    ops = op_counts(m)
    assert ops.get("Pad", 0) >= 3 and ops.get("Shape", 0) >= 3
    for pad in (n for n in m.graph.node if n.op_type == "Pad"):
        assert constant_value(m, pad.input[1]) is None  # pads computed at run time
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    depthwise = [n for n in m.graph.node if n.op_type == "Conv"
                 and next((a.i for a in n.attribute if a.name == "group"), 1) > 1]
    assert len(depthwise) >= 2
    for conv in depthwise:
        w = inits[conv.input[1]]
        assert w.shape[1] == 1 and attr(conv, "group") == w.shape[0]  # one filter per channel
    # the SAME padding adapts to the input size: output is defined for odd and even sizes
    for hw in [(32, 32), (33, 17), (64, 71)]:
        logits = run("mobilenet_tiny", {"image": np.ones((1, 3, *hw), np.float32)})["logits"]
        assert logits.shape == (1, 10)


def test_mobilenet_zeropad_has_constant_zero_pads_before_convs_and_max_pool():
    m = model("mobilenet_zeropad")
    assert all(d.HasField("dim_value") for vi in m.graph.input
               for d in vi.type.tensor_type.shape.dim)  # exported at a fixed size
    pads = [n for n in m.graph.node if n.op_type == "Pad"]
    assert len(pads) == 9 and all(attr(p, "mode") == b"constant" for p in pads)
    readers = sorted(c.op_type for p in pads for c in consumers(m, p.output[0]))
    assert readers == ["Conv"] * 8 + ["MaxPool"]
    pooled = next(p for p in pads if consumers(m, p.output[0])[0].op_type == "MaxPool")
    assert producer(m, pooled.input[0]).op_type == "Relu"  # zero pads change no maximum
    assert all(attr(c, "pads") == [0, 0, 0, 0] for c in m.graph.node if c.op_type == "Conv"
               and attr(c, "kernel_shape") == [3, 3])


def test_digits_cnn_reproduces_its_accuracy():
    e = entry("digits_cnn")
    data = np.load(SAMPLES_DIR / e["test_data"])
    input_name = model("digits_cnn").graph.input[0].name
    assert set(data.files) == {input_name, "labels"}
    images, labels = data[input_name], data["labels"]
    assert images.dtype == np.float32 and labels.dtype == np.int64
    assert images.shape[1:] == (1, 8, 8) and len(images) == len(labels) >= 300
    assert set(np.unique(labels)) == set(range(10))
    logits = run("digits_cnn", {input_name: images})["logits"]
    accuracy = float((logits.argmax(1) == labels).mean())
    assert accuracy == pytest.approx(e["test_accuracy"], abs=1.5 / len(labels))
    assert accuracy >= 0.95
    assert op_counts(model("digits_cnn")).get("BatchNormalization") == 3


# ------------------------------------------------------------------------------------------------
# teaching graphs: one good site and one near miss each, and the numbers they compute
# ------------------------------------------------------------------------------------------------


# teach_conv_bn is checked with numpy in test_teach_conv_bn_sites: onnx.reference's
# BatchNormalization-9 (opsets 9-13) uses batch statistics whenever the momentum attribute has a
# value, and it always has one (default 0.9), so it does not compute inference-mode BN.
@pytest.mark.parametrize("name", [n for n in TEACHING if n != "teach_conv_bn"])
def test_teaching_graph_agrees_with_onnx_reference(name):
    m = model(name)
    feeds = make_feeds(name, DIMS, seed=3)
    got = run(name, feeds)
    ref = ReferenceEvaluator(m).run(None, feeds)
    for o, r in zip(m.graph.output, ref, strict=True):
        np.testing.assert_allclose(got[o.name], r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", TEACHING)
def test_teaching_graph_is_small_with_readable_names(name):
    m = model(name)
    assert len(m.graph.node) <= 20 and entry(name)["opset"] == 13
    names = [n.name for n in m.graph.node]
    assert all(names) and len(set(names)) == len(names)
    assert all(not n.startswith(("/", "node_", "onnx::")) for n in names)
    assert m.graph.doc_string  # says where the good site and the near miss are


def test_teach_conv_bn_sites():
    m = model("teach_conv_bn")
    conv_good, bn_good = node_named(m, "conv_good"), node_named(m, "bn_good")
    assert (conv_good.op_type, bn_good.op_type) == ("Conv", "BatchNormalization")
    assert [n.name for n in consumers(m, conv_good.output[0])] == ["bn_good"]
    conv_shared, bn_shared = node_named(m, "conv_shared"), node_named(m, "bn_shared")
    assert (conv_shared.op_type, bn_shared.op_type) == ("Conv", "BatchNormalization")
    users = sorted(n.name for n in consumers(m, conv_shared.output[0]))
    assert users == ["bn_shared", "relu_side"]  # the blocking consumer
    side = node_named(m, "relu_side")
    assert side.output[0] in {o.name for o in m.graph.output}
    # numbers: Conv + BatchNorm (inference mode) in numpy
    x = np.random.default_rng(6).standard_normal((1, 3, 16, 16)).astype(np.float32)

    def value(name):
        return constant_value(m, name).astype(np.float64)

    def batchnorm(y, node):
        scale, bias, mean, var = (value(n)[None, :, None, None] for n in node.input[1:])
        return (y - mean) / np.sqrt(var + attr(node, "epsilon")) * scale + bias

    h = _conv3x3_same(x, value("conv_good_w"), value("conv_good_b"))
    h = np.maximum(batchnorm(h, bn_good), 0)
    shared = _conv3x3_same(h, value("conv_shared_w"))
    got = run("teach_conv_bn", {"image": x})
    np.testing.assert_allclose(got["features"], np.maximum(batchnorm(shared, bn_shared), 0), atol=1e-4)
    np.testing.assert_allclose(got["side_branch"], np.maximum(shared, 0), atol=1e-4)


def _conv3x3_same(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Conv2d, 3x3 kernel, stride 1, padding 1, in float64."""
    n, _, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return y if b is None else y + b[None, :, None, None]


def test_teach_layernorm_sites():
    m = model("teach_layernorm")
    chain = ["mean:ReduceMean", "sub:Sub", "pow:Pow", "var:ReduceMean", "add_eps:Add", "sqrt:Sqrt",
             "div:Div", "scale:Mul", "shift:Add"]
    for prefix in ("ln_good", "ln_wrongaxis"):
        for item in chain:
            suffix, op = item.split(":")
            assert node_named(m, f"{prefix}_{suffix}").op_type == op
        assert constant_value(m, node_named(m, f"{prefix}_pow").input[1]) == 2.0
    assert list(attr(node_named(m, "ln_good_mean"), "axes")) == [-1]
    assert list(attr(node_named(m, "ln_good_var"), "axes")) == [-1]
    assert list(attr(node_named(m, "ln_wrongaxis_mean"), "axes")) == [1]
    assert list(attr(node_named(m, "ln_wrongaxis_var"), "axes")) == [1]
    # numbers: the good site is a real LayerNorm over the last axis
    x = np.random.default_rng(4).standard_normal((2, 4, 16)).astype(np.float32)
    gamma = constant_value(m, "ln_good_gamma")
    beta = constant_value(m, "ln_good_beta")
    exposed = onnx.ModelProto()
    exposed.CopyFrom(m)  # also expose the intermediate "hidden" (output of the good site)
    exposed.graph.output.append(onnx.helper.make_tensor_value_info("hidden", onnx.TensorProto.FLOAT, None))
    sess = ort.InferenceSession(exposed.SerializeToString(), providers=["CPUExecutionProvider"])
    y, hidden = sess.run(["y", "hidden"], {"x": x})
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(hidden, (x - mu) / np.sqrt(var + 1e-5) * gamma + beta, atol=1e-5)
    mu1, var1 = hidden.mean(1, keepdims=True), hidden.var(1, keepdims=True)
    expected_y = ((hidden - mu1) / np.sqrt(var1 + 1e-5) * constant_value(m, "ln_wrongaxis_gamma")
                  + constant_value(m, "ln_wrongaxis_beta"))
    np.testing.assert_allclose(y, expected_y, atol=1e-5)


def test_teach_gelu_sites():
    m = model("teach_gelu")
    ops = ["div:Div", "erf:Erf", "add:Add", "mul:Mul", "half_mul:Mul"]
    for prefix in ("gelu_good", "gelu_wrongconst"):
        for item in ops:
            suffix, op = item.split(":")
            assert node_named(m, f"{prefix}_{suffix}").op_type == op
    good_c = float(constant_value(m, node_named(m, "gelu_good_div").input[1]))
    wrong_c = float(constant_value(m, node_named(m, "gelu_wrongconst_div").input[1]))
    assert good_c == pytest.approx(math.sqrt(2), abs=1e-6)
    assert wrong_c == pytest.approx(1.5)
    erf = np.vectorize(math.erf)
    x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(2, 16)
    h = x * 0.5 * (1 + erf(x / math.sqrt(2)))
    y = h * 0.5 * (1 + erf(h / 1.5))
    np.testing.assert_allclose(run("teach_gelu", {"x": x})["y"], y, atol=1e-5)


def test_teach_matmul_bias_sites():
    m = model("teach_matmul_bias")
    inits = {i.name for i in m.graph.initializer}
    inputs = {i.name for i in m.graph.input}
    good_mm, good_add = node_named(m, "matmul_good"), node_named(m, "add_bias_good")
    near_mm, near_add = node_named(m, "matmul_inputbias"), node_named(m, "add_inputbias")
    assert (good_mm.op_type, good_add.op_type, near_mm.op_type, near_add.op_type) == (
        "MatMul", "Add", "MatMul", "Add")
    assert good_add.input[0] == good_mm.output[0] and good_add.input[1] in inits
    assert near_add.input[0] == near_mm.output[0]
    assert near_add.input[1] in inputs and near_add.input[1] not in inits
    x = np.random.default_rng(5).standard_normal((2, 8)).astype(np.float32)
    bias = np.arange(4, dtype=np.float32)
    w1, b1 = constant_value(m, good_mm.input[1]), constant_value(m, good_add.input[1])
    w2 = constant_value(m, near_mm.input[1])
    expected = np.maximum(x @ w1 + b1, 0) @ w2 + bias
    np.testing.assert_allclose(run("teach_matmul_bias", {"x": x, "bias": bias})["y"], expected,
                               rtol=1e-5, atol=1e-5)
