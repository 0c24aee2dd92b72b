"""What GraphLab and onnxruntime write reads back whole: GraphLab's portable output (fused
nodes as model-local functions), its onnxruntime output (onnxruntime's operators) and a model
onnxruntime's own optimizer wrote load with no opaque op and are priced as the graph they
came from."""

from __future__ import annotations

import json
import subprocess
import sys

import onnxruntime as ort
import pytest

from compiler_core.compilation import sized
from compiler_core.hardware.cost import graph_cost
from compiler_core.hardware.gemm_shapes import gemm_problems
from compiler_core.ir import load_model, save_model
from compiler_core.lowering import lower_for_onnxruntime
from compiler_core.passes import PassManager
from graphlab.samples import get_sample

SIZES = {"batch": 1, "seq": 128}
TRANSFORMERS = ["bert_tiny_op13", "gpt2_tiny", "llama_tiny_dynamo"]
# Passes fold constant arithmetic (masks, scales computed from constants): that much of the
# input's FLOPs may go; every real op stays priced.
FOLDED_SHARE = 0.01


def _opaque(graph) -> list[str]:
    return [w for w in graph.warnings if "not known to GraphLab" in w]


def _close(a: int, b: int) -> bool:
    return abs(a - b) <= FOLDED_SHARE * b


@pytest.fixture(scope="module", params=TRANSFORMERS)
def compiled(request, tmp_path_factory):
    name = request.param
    folder = tmp_path_factory.mktemp(name)
    original = load_model(get_sample(name).path)
    result = PassManager("O2").run(original)
    portable = folder / "o2.onnx"
    save_model(result.final, portable)
    lowered = folder / "ort.onnx"
    save_model(lower_for_onnxruntime(result.final).graph, lowered)
    return original, result.final, portable, lowered


def test_portable_output_is_priced_as_the_graph_that_wrote_it(compiled):
    original, final, portable, _ = compiled
    read = load_model(portable)
    assert not _opaque(read)
    written, back = _priced(final, SIZES), _priced(read, SIZES)
    assert back.unmodelled_ops == []
    assert (back.total_flops, back.total_bytes) == (written.total_flops, written.total_bytes)
    assert _close(back.total_flops, _priced(original, SIZES).total_flops)


def test_onnxruntime_output_reads_whole(compiled):
    original, _, _, lowered = compiled
    read = load_model(lowered)
    assert not _opaque(read)
    assert any(node.domain == "com.microsoft" for node in read.nodes)
    cost = _priced(read, SIZES)
    assert cost.unmodelled_ops == [] and cost.ops_with_assumed_dims == 0
    assert _close(cost.total_flops, _priced(original, SIZES).total_flops)


@pytest.mark.parametrize("name", ["bert_tiny_dynamo", "bart_tiny", "mobilenet_tiny",
                                  "mobilenet_zeropad"])
def test_onnxruntime_optimized_model_reads_whole(name, tmp_path):
    sample = get_sample(name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(sample.path, options, providers=["CPUExecutionProvider"])
    read = load_model(options.optimized_model_filepath)
    assert not _opaque(read)
    assert any(node.domain == "com.microsoft" for node in read.nodes)
    # every result typed, however often onnxruntime's operators and ONNX's alternate
    # (mobilenet_zeropad: Conv, FusedConv, Conv, ... seven blocks deep)
    assert [v.name for n in read.nodes for v in n.outputs if v is not None and
            v.shape is None] == []
    sizes = dict(sample.sizes)
    cost = _priced(read, sizes)
    assert cost.unmodelled_ops == []
    assert _close(cost.total_flops, _priced(load_model(sample.path), sizes).total_flops)


@pytest.mark.parametrize("name", ["cnn_bn", "mobilenet_qdq"])
def test_a_model_onnxruntime_laid_out_for_this_machine_reads_whole(name, tmp_path):
    """At ORT_ENABLE_ALL onnxruntime writes its layout ops: a float CNN in its blocked
    layout (com.microsoft.nchwc Conv, MaxPool, ReorderInput/Output on x86), a quantized one
    channels last (QLinearConv channels_last, NhwcMaxPool).  They load typed, priced, and
    compile to a model onnxruntime loads and that computes what the input computes."""
    sample = get_sample(name)
    optimized = tmp_path / "all.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = str(optimized)
    ort.InferenceSession(sample.path, options, providers=["CPUExecutionProvider"])
    read = load_model(optimized)
    assert not _opaque(read)
    assert any(node.domain.startswith("com.microsoft") for node in read.nodes)
    cost = _priced(read, dict(sample.sizes))
    assert cost.unmodelled_ops == [] and cost.ops_with_assumed_dims == 0
    # the same convolutions for the systolic array (these samples' channels fill the blocks)
    assert _gemms(read, sample.sizes) == _gemms(load_model(sample.path), sample.sizes)
    done = subprocess.run([sys.executable, "-m", "graphlab", "compile", str(optimized), "-p",
                           "O2", "--verify", "-o", str(tmp_path / "out.onnx")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-600:] + done.stderr[-600:]
    assert "runtime   ORT_ENABLE_ALL: ok" in done.stdout


def _gemms(graph, sizes) -> list[tuple]:
    """Every GEMM of the graph for the systolic array, in a fixed order."""
    return sorted((p.M, p.N, p.K, p.instances) for node in graph.nodes
                  for p in gemm_problems(node, dict(sizes)))


def _priced(graph, sizes):
    """The cost of ``graph`` sized at ``sizes`` (the hardware models read sized graphs)."""
    return graph_cost(sized(graph, sizes), None, sizes)


def _roofline_totals(model: str) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-m", "graphlab", "roofline", model, "--bind",
                           "batch=1,seq=128", "--json"], capture_output=True, text=True,
                          check=True)
    record = json.loads(done.stdout)
    return record, done.stderr


def test_cli_roofline_of_the_onnxruntime_output_matches_its_input(tmp_path):
    out = tmp_path / "bert_ort.onnx"
    subprocess.run([sys.executable, "-m", "graphlab", "compile", "bert_tiny_op13", "-p", "O2",
                    "--runtime", "onnxruntime", "-o", str(out)], check=True,
                   capture_output=True)
    before, _ = _roofline_totals("bert_tiny_op13")
    after, warnings = _roofline_totals(str(out))
    assert "not known to GraphLab" not in warnings
    assert after["unmodelled_ops"] == []
    assert _close(after["total_flops"], before["total_flops"])
