"""The quantize_int8 pass: static post-training quantization written as QDQ nodes."""

from __future__ import annotations

from collections import Counter

from ...hardware.op_flops import DATA_MOVEMENT, METADATA_ONLY
from ...ir import Graph, Node, Value
from ...wording import plural
from ..framework.base import Pass, PassContext, PassResult
from ..framework.pass_registry import register_pass
from .calibration import calibrate
from .int8 import activation_params
from .layers import Layer, Refusal, find_layers
from .qdq import ActivationSite, plan_activation_sites, quantize_activation, quantize_weight

MIN_OPSET = 13  # DequantizeLinear's per-channel ``axis`` arrived in opset 13
_NO_ARITHMETIC = DATA_MOVEMENT | METADATA_ONLY | {"QuantizeLinear", "DequantizeLinear"}


@register_pass
class QuantizeInt8(Pass):
    """Quantize the Conv, Gemm and MatMul layers to int8: weights become int8 codes with one
    scale per output channel, and QuantizeLinear/DequantizeLinear pairs are inserted on the
    activations they read, with scales chosen by running the model on calibration inputs.

    Post-training quantization is a graph transformation, not just weight compression: it
    inserts quantize and dequantize nodes at chosen edges and changes the types on the edges
    between them.  An activation's scale must be fixed at compile time, so the pass first runs
    the float model on calibration data and records each such tensor's range (per tensor,
    asymmetric); a weight's scale comes from the weight itself (per output channel,
    symmetric).  The result is the standard ONNX "QDQ" form onnxruntime runs; every op the pass
    leaves in float32 — softmax, normalization, the bias add in the 32-bit accumulator — is
    listed with the reason.  Results change by design, so this pass and every later one are
    checked against the float model with a looser tolerance; the real test is task accuracy.
    """

    name = "quantize_int8"
    family = "quantization"
    tolerance = 0.05
    tolerance_reason = "quantized to int8"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        opset = graph.opset_imports.get("", graph.opset_imports.get("ai.onnx", 0))
        if opset < MIN_OPSET:
            result.decline(graph.name, "opset", (
                f"the model imports opset {opset}; per-channel DequantizeLinear needs opset "
                f"{MIN_OPSET}"))
            return result
        layers, refusals = _find_all_layers(graph)
        _record_refusals(refusals, result)
        if not layers:
            return result
        sites = plan_activation_sites(layers)
        calibration = calibrate(graph, [site.top.name for site in sites], ctx)
        sites, layers = _drop_unknown_ranges(sites, layers, calibration.ranges, result)
        if not layers:
            return result
        done: dict[tuple[str, int], Value] = {}
        weight_bytes = [quantize_weight(graph, ctx, layer, done) for layer in layers]
        for site in sites:
            quantize_activation(graph, ctx, site,
                                activation_params(*calibration.ranges[site.top.name]))
        _record_float_ops(graph, layers, sites, result)
        _record_float_biases(layers, result)
        result.rewrites = len(layers)
        result.notes += _notes(layers, sites, weight_bytes, calibration.source)
        return result


def _find_all_layers(graph: Graph) -> tuple[list[Layer], list[Refusal]]:
    """Every quantizable layer of the graph, and every linear op that is not."""
    layers: list[Layer] = []
    refusals: list[Refusal] = []
    for node in graph.nodes:
        found, refused = find_layers(node)
        layers += found
        refusals += refused
    return layers, refusals


def _record_float_ops(graph: Graph, layers: list[Layer], sites: list[ActivationSite],
                      result: PassResult) -> None:
    """A decline for every other op that does arithmetic: it stays float32."""
    int8_nodes = {layer.node.id for layer in layers}
    int8_nodes |= {node.id for site in sites for node in site.chain}
    for node in graph.nodes:
        if node.id not in int8_nodes and _does_arithmetic(node) and not any(
                d.site == node.name for d in result.declined):
            result.decline(node, "int8_op", (
                f"{node.op_type} stays float32: op not supported for int8 (int8 kernels are "
                f"given to Conv, Gemm and MatMul; ops like softmax, normalization and GELU "
                f"need more range than 8 bits)"))


def _does_arithmetic(node: Node) -> bool:
    return node.body is not None or node.op_type not in _NO_ARITHMETIC


def _drop_unknown_ranges(sites: list[ActivationSite], layers: list[Layer],
                         ranges: dict, result: PassResult
                         ) -> tuple[list[ActivationSite], list[Layer]]:
    """Sites whose range calibration never observed stay float, with their layers."""
    unknown = [s for s in sites if s.top.name not in ranges]
    blocked = {(node.id, index) for s in unknown for node, index in s.uses}
    for site in unknown:
        for node, _ in site.uses:
            result.decline(node, "calibration", (
                f"tensor range unknown: calibration saw no finite value of {site.top.name}, "
                f"so no scale can be chosen; the layer stays float32"))
    return ([s for s in sites if s.top.name in ranges],
            [layer for layer in layers if (layer.node.id, layer.activation) not in blocked])


def _record_refusals(refusals: list[Refusal], result: PassResult) -> None:
    for refusal in refusals:
        result.decline(refusal.node, "int8_layer", (
            f"{refusal.inner.name} ({refusal.inner.op_type}) stays float32: {refusal.reason}"))


def _record_float_biases(layers: list[Layer], result: PassResult) -> None:
    """A quantized node's constant float vectors as long as a layer's output channels are its
    biases: they stay float32."""
    channels: dict[int, set[int]] = {}
    nodes: dict[int, Node] = {}
    for layer in layers:
        weight = layer.node.inputs[layer.weight]
        channels.setdefault(layer.node.id, set()).add(weight.shape[layer.axis])
        nodes[layer.node.id] = layer.node
    for node_id, node in nodes.items():
        for value in node.inputs:
            if value is not None and value.is_initializer and value.stored.dtype.kind == "f" \
                    and value.stored.ndim == 1 and value.stored.size in channels[node_id]:
                result.decline(node, "bias", (
                    f"bias add kept float: {value.name} is added to the 32-bit accumulator, "
                    f"where 8 bits would lose the small terms"))


def _notes(layers: list[Layer], sites: list[ActivationSite], weight_bytes: list,
           source: str) -> list[str]:
    kinds = Counter(layer.describe() for layer in layers)
    before = sum(b for b, _ in weight_bytes)
    after = sum(a for _, a in weight_bytes)
    notes = [f"quantized {plural(len(layers), 'layer')} to int8: " +
             ", ".join(f"{n} {kind}" for kind, n in kinds.most_common()),
             f"weights: {before:,} bytes of float32 -> {after:,} bytes of int8 codes and "
             f"per-channel scales",
             f"activations: {plural(len(sites), 'QuantizeLinear/DequantizeLinear pair')}, ranges "
             f"calibrated on {source}"]
    moved = Counter(node.op_type for site in sites for node in site.chain)
    if moved:
        notes.append("ops now moving int8 codes (the Quantize was hoisted above them): " +
                     ", ".join(f"{n} {op}" for op, n in moved.most_common()))
    return notes
