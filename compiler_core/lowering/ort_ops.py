"""Fused nodes whose onnxruntime operator takes the same operands: one rule per fused op.

Each rule replaces the fused node by onnxruntime's operator (inputs, their order and attributes
as onnxruntime's operator schemas give them) and returns the new node, or returns why the
node's semantics do not match the operator exactly; the caller then writes its body inline.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto

from ..ir import Graph, Node, Value
from ..ir.dtypes import to_numpy
from ..passes.fusion.linear import FUSED_CONV, FUSED_GEMM, FUSED_MATMUL_BIAS
from ..passes.fusion.skip_layernorm import FUSED_OP as SKIP_LAYERNORM
from ..passes.quantization.qdq_groups import FUSED_GROUPS
from ..passes.fusion.skip_rmsnorm import FUSED_OP as SKIP_RMSNORM
from ..passes.recognition.rmsnorm import FUSED_OP as RMSNORM
from ..passes.recognition.silu import SWISH

MS_DOMAIN = "com.microsoft"
_FLOATS = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16})
# Activations onnxruntime runs in FusedConv's epilogue (MLAS) and FusedGemm's, with the
# attributes each takes from the activation node.
_CONV_ACTIVATIONS = frozenset({"Relu", "Tanh", "Sigmoid", "LeakyRelu", "Clip", "HardSigmoid"})
_GEMM_ACTIVATIONS = frozenset({"Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid"})
_ACTIVATION_DEFAULTS = {"LeakyRelu": {"alpha": 0.01},
                        "HardSigmoid": {"alpha": 0.2, "beta": 0.5}}


# ------------------------------------------------------------------------------ primitives
def replace_fused(graph: Graph, node: Node, op_type: str, inputs: Sequence[Value | None],
                  attrs: dict | None = None, domain: str = MS_DOMAIN,
                  outputs: Sequence[Value | None] | None = None) -> Node:
    """Put ``op_type`` where the fused ``node`` was: same name, place, outputs (or the node's
    outputs placed as ``outputs`` lists them, None for an output left out), provenance."""
    outputs, order = list(node.outputs if outputs is None else outputs), node.order
    graph.remove_node(node)
    return graph.add_node(op_type, inputs, outputs, attrs=attrs, domain=domain, name=node.name,
                          provenance=node.provenance, order=order)


def add_before(graph: Graph, node: Node, op_type: str, inputs: Sequence[Value | None],
               attrs: dict | None = None, domain: str = "") -> Value:
    """A helper op computed just before ``node``; returns its output."""
    made = graph.add_node(op_type, inputs, 1, attrs=attrs, domain=domain,
                          name=f"{node.name}/{op_type}", provenance=node.provenance,
                          order=node.order - 0.5)
    return made.outputs[0]


def outer_value(node: Node, inner: Value) -> Value | None:
    """The value outside the fused node that the body's input ``inner`` stands for."""
    for index, value in enumerate(node.body.inputs):
        if value is inner:
            return node.inputs[index]
    return None


def body_constant(node: Node, inner: Value | None) -> np.ndarray | None:
    """The data of a value the body reads, when known before run time (a body constant or a
    constant fed from outside)."""
    if inner is None:
        return None
    data = inner.constant_value()
    if data is not None:
        return data
    outer = outer_value(node, inner)
    return outer.constant_value() if outer is not None else None


def _plain_nodes(node: Node) -> list[Node]:
    return node.body.nodes


# ------------------------------------------------------------------------------ the rules
def lower_skip_layernorm(graph: Graph, node: Node) -> Node | str:
    """SkipLayerNormalization(input, skip, gamma, beta, bias): LayerNorm(input + skip + bias)
    over the last axis, and the sum as the op's fourth output when the fused node returns it.
    onnxruntime wants the input 3-D and the skip the same shape, [1, S, H] or [S, H]."""
    x = node.inputs[0]
    if x.elem_type not in _FLOATS:
        return f"input {x.name!r} is {x.describe_type()}; onnxruntime's op takes float tensors"
    if any(v is not None and v.rank != 1 for v in node.inputs[2:]):
        return ("the scale, shift or bias is not a vector over the last axis, as onnxruntime "
                "needs")
    return _lower_skip(graph, node, SKIP_LAYERNORM)


def _lower_skip(graph: Graph, node: Node, op_type: str) -> Node | str:
    """The fused skip normalization as onnxruntime's ``op_type``, whose inputs are the fused
    node's (input, skip, the norm's parameters, bias) with input and skip in the order
    onnxruntime accepts, and whose outputs are the normalized sum, then (mean and inverse
    standard deviation left out) the sum when the fused node returns it."""
    x, skip, rest = node.inputs[0], node.inputs[1], node.inputs[2:]
    total = node.outputs[1] if len(node.outputs) > 1 else None
    outputs = [node.outputs[0]] + ([None, None, total] if total is not None else [])
    for first, second in ((x, skip), (skip, x)):
        if _skip_fits(first, second):
            return replace_fused(graph, node, op_type, [first, second, *rest],
                                 {"epsilon": float(node.attrs["epsilon"])}, outputs=outputs)
    return (f"onnxruntime's {op_type} needs a 3-D input and a skip of the same shape, "
            f"[1, S, H] or [S, H]; the shapes {x.describe_type()} and {skip.describe_type()} "
            f"cannot be proven to be such")


def _skip_fits(x: Value, skip: Value) -> bool:
    """x is [B, S, H] and skip provably [B, S, H], [1, S, H] or [S, H] (same dims or names)."""
    if x.rank != 3 or skip.rank not in (2, 3) or not isinstance(x.shape[-1], int):
        return False
    pairs = list(zip(reversed(x.shape), reversed(skip.shape)))
    return all(a == b or (axis == 2 and b == 1) for axis, (a, b) in enumerate(pairs))


def lower_layernorm(graph: Graph, node: Node) -> Node | str:
    """GraphLab's fused LayerNormalization (made below opset 17, where the standard op does not
    exist): onnxruntime registers LayerNormalization in the default domain from version 1 on,
    with the same inputs and attributes."""
    return replace_fused(graph, node, "LayerNormalization", node.inputs,
                         {"axis": int(node.attrs.get("axis", -1)),
                          "epsilon": float(node.attrs["epsilon"])}, domain="")


def lower_rmsnorm(graph: Graph, node: Node) -> Node | str:
    """GraphLab's fused RMSNorm -> onnxruntime's SimplifiedLayerNormalization (default domain,
    X and scale, the same axis and epsilon), which normalizes float16 in float32 and returns
    the scale's type.  What the model does around it stays exact: a weight applied after the
    cast back to float16 stays a Mul after the op (onnxruntime's op would round once where the
    model rounds twice), a float32 weight applied before the cast back gets the Cast after
    it.  A norm computed in float16 throughout is written inline: onnxruntime's op would be
    more precise, not the same."""
    x, scale = node.inputs[:2]
    result = node.outputs[0]
    compute = TensorProto.FLOAT if node.attrs.get("stash_type") else x.elem_type
    if compute not in (TensorProto.FLOAT, TensorProto.DOUBLE):
        return (f"the norm computes in {x.describe_type().split('[')[0]}; onnxruntime's op "
                f"computes it in float32, which is more precise but not the same numbers")
    attrs = {"axis": int(node.attrs.get("axis", -1)), "epsilon": float(node.attrs["epsilon"])}
    if scale.elem_type == compute == result.elem_type:
        return replace_fused(graph, node, RMSNORM, [x, scale], attrs, domain="")
    weight_after_cast = scale.elem_type != compute
    if weight_after_cast:
        width = x.shape[-1] if x.shape else None
        if not isinstance(width, int):
            return f"the normalized axis of {x.name!r} has unknown size"
        unit = graph.add_initializer(f"{node.name}/unit_scale",
                                     np.ones(width, dtype=to_numpy(compute)))
    normalized = graph.new_value(f"{result.name}/normalized", compute, result.shape)
    made = graph.add_node(RMSNORM, [x, unit if weight_after_cast else scale], [normalized],
                          attrs=attrs, name=node.name, provenance=node.provenance,
                          order=node.order - 0.5)
    if not weight_after_cast:
        replace_fused(graph, node, "Cast", [normalized], {"to": result.elem_type}, domain="")
        return made
    cast_back = graph.new_value(f"{result.name}/cast_back", result.elem_type, result.shape)
    graph.add_node("Cast", [normalized], [cast_back], attrs={"to": result.elem_type},
                   name=f"{node.name}/Cast", provenance=node.provenance, order=node.order - 0.25)
    replace_fused(graph, node, "Mul", [cast_back, scale], domain="")
    return made


def lower_skip_rmsnorm(graph: Graph, node: Node) -> Node | str:
    """SkipSimplifiedLayerNormalization(input, skip, gamma, bias) -> RMSNorm(input + skip +
    bias) · gamma, and the sum as its fourth output when the fused node returns it.
    onnxruntime's op takes a 3-D input and a skip of its shape, [1, S, H] or [S, H], all of
    one type.  In float16 it normalizes the float32 sum where the model normalizes the sum
    rounded to float16: a float16 operator, within the export's float16 tolerance."""
    x, skip, gamma = node.inputs[:3]
    types = {v.elem_type for v in (*node.inputs, node.outputs[0])}
    if len(types) != 1 or not types <= _FLOATS:
        return (f"onnxruntime's SkipSimplifiedLayerNormalization takes and returns one float "
                f"type; here {x.describe_type()} + {skip.describe_type()}, scale "
                f"{gamma.describe_type()} -> {node.outputs[0].describe_type()} (the norm "
                f"inside is lowered on its own)")
    if any(v.rank != 1 for v in node.inputs[2:]):
        return "the scale or bias is not a vector over the last axis, as onnxruntime needs"
    return _lower_skip(graph, node, SKIP_RMSNORM)


def lower_gelu(graph: Graph, node: Node) -> Node | str:
    """Exact GELU -> com.microsoft Gelu; the tanh approximation -> FastGelu (same formula)."""
    op_type = "FastGelu" if node.attrs.get("approximate") == "tanh" else "Gelu"
    return replace_fused(graph, node, op_type, node.inputs[:1])


def lower_swish(graph: Graph, node: Node) -> Node | str:
    """Swish x·Sigmoid(α·x) -> com.microsoft QuickGelu with the same alpha (its formula).
    In float16 its kernel rounds once where the model rounds the Sigmoid and the product
    each: a float16 operator, within the export's float16 tolerance."""
    x = node.inputs[0]
    if x.elem_type not in _FLOATS:
        return f"onnxruntime's QuickGelu takes float32 or float16; here {x.describe_type()}"
    return replace_fused(graph, node, "QuickGelu", [x], {"alpha": float(node.attrs["alpha"])})


def lower_conv_activation(graph: Graph, node: Node) -> Node | str:
    """Conv + activation -> com.microsoft FusedConv: the Conv's attributes, the activation's
    name and its parameters (LeakyRelu alpha, Clip bounds, HardSigmoid alpha and beta)."""
    conv, act = _layer_and_activation(node, "Conv")
    if conv is None or act is None or act.op_type not in _CONV_ACTIVATIONS:
        return _unsupported_activation(node, _CONV_ACTIVATIONS)
    params = _activation_params(node, act)
    if isinstance(params, str):
        return params
    attrs = dict(conv.attrs, activation=act.op_type)
    if params:
        attrs["activation_params"] = params
    return replace_fused(graph, node, "FusedConv", node.inputs[:3], attrs)


def lower_gemm_activation(graph: Graph, node: Node) -> Node | str:
    """Gemm + activation -> com.microsoft FusedGemm with the Gemm's alpha, beta, transA,
    transB and the activation's parameters as activation_alpha / activation_beta."""
    gemm, act = _layer_and_activation(node, "Gemm")
    if gemm is None or act is None or act.op_type not in _GEMM_ACTIVATIONS:
        return _unsupported_activation(node, _GEMM_ACTIVATIONS)
    params = _activation_params(node, act)
    attrs = dict(gemm.attrs, activation=act.op_type)
    for name, value in zip(("activation_alpha", "activation_beta"), params):
        attrs[name] = value
    return replace_fused(graph, node, "FusedGemm", node.inputs[:3], attrs)


def lower_matmul_bias_activation(graph: Graph, node: Node) -> Node | str:
    """MatMul + bias + GELU -> MatMul and com.microsoft BiasGelu (exact GELU) or FastGelu
    with its bias input (tanh form): the bias add runs inside the GELU kernel."""
    x, weight, bias = node.inputs[:3]
    nodes = _plain_nodes(node)
    if len(nodes) != 3 or nodes[-1].op_type != "Gelu":
        return ("onnxruntime has no op for a batched MatMul + bias"
                + (f" + {nodes[-1].op_type}" if len(nodes) == 3 else "")
                + "; written inline, where its own MatMul/Add fusions apply")
    act = nodes[-1]
    width = weight.shape[-1] if weight.shape else None
    if bias.rank != 1 or bias.shape[0] != width or not isinstance(width, int):
        return (f"the bias {bias.name!r} ({bias.describe_type()}) is not a vector over the "
                f"output features, which BiasGelu needs")
    product = add_before(graph, node, "MatMul", [x, weight])
    op_type = "FastGelu" if act.attrs.get("approximate") == "tanh" else "BiasGelu"
    return replace_fused(graph, node, op_type, [product, bias])


def lower_qlinear_group(graph: Graph, node: Node) -> Node | str:
    """A fused QDQ group (``graphlab.QLinearAdd``, ``QGemm``, ...) -> onnxruntime's operator of
    that name: the fused node already reads its operands in the operator's order and carries
    its attributes (``passes/quantization/qdq_groups.py``)."""
    return replace_fused(graph, node, node.op_type, node.inputs, dict(node.attrs))


def _layer_and_activation(node: Node, layer_op: str) -> tuple[Node | None, Node | None]:
    nodes = _plain_nodes(node)
    if len(nodes) != 2 or nodes[0].op_type != layer_op:
        return None, None
    return nodes[0], nodes[1]


def _unsupported_activation(node: Node, supported: frozenset[str]) -> str:
    act = node.attrs.get("activation")
    return (f"onnxruntime's fused op runs {', '.join(sorted(supported))}, not {act}; written "
            f"inline")


def _activation_params(node: Node, act: Node) -> list[float] | str:
    """The activation's parameters in the order onnxruntime's fused ops read them."""
    if act.op_type == "Clip":
        bounds = []
        for index, name, default in ((1, "min", -np.inf), (2, "max", np.inf)):
            data = body_constant(node, act.input(index))
            if act.input(index) is not None and data is None:
                return f"the Clip {name} bound is computed at run time"
            value = act.attrs.get(name, default) if data is None else float(np.asarray(data))
            bounds.append(float(np.clip(value, np.finfo(np.float32).min,
                                        np.finfo(np.float32).max)))
        return bounds
    defaults = _ACTIVATION_DEFAULTS.get(act.op_type, {})
    return [float(act.attrs.get(name, value)) for name, value in defaults.items()]


LOWERINGS: dict[str, Callable[[Graph, Node], Node | str]] = {
    SKIP_LAYERNORM: lower_skip_layernorm,
    "LayerNormalization": lower_layernorm,
    RMSNORM: lower_rmsnorm,
    SKIP_RMSNORM: lower_skip_rmsnorm,
    "Gelu": lower_gelu,
    SWISH: lower_swish,
    FUSED_CONV: lower_conv_activation,
    FUSED_GEMM: lower_gemm_activation,
    FUSED_MATMUL_BIAS: lower_matmul_bias_activation,
    **{op_type: lower_qlinear_group for op_type in FUSED_GROUPS.values()},
}
