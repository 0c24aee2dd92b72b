"""Recognition: operators that exporters write out in primitive ops become one op again."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Value
from ..ir.dtypes import is_float, to_numpy
from ..patterns import Match
from .base import Pass, PassContext, PassResult
from .pattern_pass import decline, find_matches
from .registry import register
from .rewrite import fuse_nodes, replace_by_op

LAYERNORM_OPSET = 17  # LayerNormalization is a standard op from this default-domain opset on
GELU_OPSET = 20       # Gelu likewise


def default_opset(graph: Graph) -> int:
    return graph.opset_imports.get("", graph.opset_imports.get("ai.onnx", 0))


@register
class RecognizeLayerNorm(Pass):
    """Replace a LayerNorm written out in primitive ops (ReduceMean, Sub, Pow, ReduceMean,
    Add ε, Sqrt, Div, then a scale Mul and a shift Add) by one LayerNormalization node.

    Exporters targeting old opsets spell layer normalization as nine ops, each a full pass
    over the activation; one LayerNormalization kernel reads it once.  Only a normalization
    over the last axis is recognized (that is what LayerNormalization with axis -1 computes);
    ε comes from the constant the pattern found.  LayerNormalization is a standard op from
    opset 17 on; in older models the nine ops become a fused node in GraphLab's domain whose
    body is the original subgraph, so the model keeps its opset and still runs everywhere.
    A LayerNorm without scale and shift (or whose affine was folded away) is recognized too.
    """

    name = "recognize_layernorm"
    family = "recognition"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        standard = default_opset(graph) >= LAYERNORM_OPSET
        # The full form first: the unscaled pattern also matches the core of a full LayerNorm.
        for pattern, declines in (("layernorm", True), ("layernorm_unscaled", False)):
            for match in find_matches(graph, pattern, ctx, result, declines=declines):
                reason = _recognize_layernorm(graph, ctx, match, standard)
                if reason is None:
                    result.rewrites += 1
                else:
                    decline(result, match["layernorm"].name, pattern, reason)
        if result.rewrites:
            result.notes.append(_opset_note(graph, result.rewrites, "LayerNormalization",
                                            LAYERNORM_OPSET, standard))
        return result


@register
class RecognizeGelu(Pass):
    """Replace a GELU written out in primitive ops — x·½·(1 + erf(x/√2)), or the tanh
    approximation ½x·(1 + tanh(√(2/π)(x + 0.044715x³))) — by one Gelu node.

    Five to eight element-wise ops, each a pass over a large activation (the FFN's 4× wide
    hidden layer), become one kernel.  The tanh form becomes Gelu with approximate="tanh".
    Gelu is a standard op from opset 20 on; in older models the ops become a fused Gelu node
    in GraphLab's domain whose body is the original subgraph.  A look-alike with a wrong
    constant is not a GELU and is left alone; the pattern report says which constant.
    """

    name = "recognize_gelu"
    family = "recognition"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        standard = default_opset(graph) >= GELU_OPSET
        for match in find_matches(graph, "gelu", ctx, result):
            attrs = {"approximate": "tanh" if match["form"] == "tanh" else "none"}
            if standard:
                replace_by_op(graph, ctx, match.nodes, "Gelu", "gelu", [match["input"]], attrs)
            elif fuse_nodes(graph, ctx, match.nodes, "Gelu", "gelu", attrs,
                            operands=[match["input"]]) is None:
                decline(result, match.root.name, "gelu", _CYCLE)
                continue
            result.rewrites += 1
        if result.rewrites:
            result.notes.append(_opset_note(graph, result.rewrites, "Gelu", GELU_OPSET,
                                            standard))
        return result


_CYCLE = "fusing would create a cycle: a value leaves the matched ops and comes back"


def _recognize_layernorm(graph: Graph, ctx: PassContext, match: Match,
                         standard: bool) -> str | None:
    """Rewrite one matched LayerNorm; or the reason it cannot be."""
    x, scale, shift = match["input"], match.bindings.get("scale"), match.bindings.get("shift")
    if not is_float(x.elem_type):
        return f"the input {x.name!r} is not a floating-point tensor"
    attrs = {"axis": -1, "epsilon": float(match["epsilon"])}
    width = x.shape[-1] if x.shape else None
    # Either way the node reads (X, Scale[, B]) like the op, so later passes see one signature.
    if scale is None:
        scale = _ones(graph, x, width)
    elif standard:
        scale = _as_vector(graph, scale, x, width)
    if standard and shift is not None:
        shift = _as_vector(graph, shift, x, width)
    reason = next((v for v in (scale, shift) if isinstance(v, str)), None)
    if reason is not None:
        return reason
    if standard:
        replace_by_op(graph, ctx, match.nodes, "LayerNormalization", "layernorm",
                      [x, scale, shift], attrs)
        return None
    fused = fuse_nodes(graph, ctx, match.nodes, "LayerNormalization", "layernorm", attrs,
                       operands=[x, scale, shift])
    return _CYCLE if fused is None else None


def _as_vector(graph: Graph, value: Value, x: Value, width) -> Value | str:
    """``value`` as LayerNormalization wants a scale or bias: a vector of x's dtype."""
    if value.rank == 1 and value.elem_type == x.elem_type:
        return value
    data = value.constant_value()
    if data is None:
        return (f"{value.name!r} (shape {value.describe_type()}) is computed at run time; "
                f"LayerNormalization needs a vector of {width} elements")
    return graph.add_initializer(f"{value.name}_vector",
                                 data.reshape(-1).astype(to_numpy(x.elem_type)))


def _ones(graph: Graph, x: Value, width) -> Value | str:
    if not isinstance(width, int):
        return f"the normalized axis of {x.name!r} has unknown size, so no unit scale can be made"
    return graph.add_initializer(f"{x.name}_unit_scale",
                                 np.ones(width, dtype=to_numpy(x.elem_type)))


def _opset_note(graph: Graph, count: int, op_type: str, since: int, standard: bool) -> str:
    opset = default_opset(graph)
    if standard:
        return (f"made {count} {op_type} node(s) (a standard op since opset {since}; "
                f"the model's: {opset})")
    return (f"made {count} fused {op_type} node(s) in GraphLab's domain, bodies = the original "
            f"ops: the model's opset {opset} predates the standard op (opset {since})")
