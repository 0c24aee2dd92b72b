"""Recognition: operators that exporters write out in primitive ops become one op again."""

from __future__ import annotations

import math

import numpy as np

from ...ir import Graph, Node, Value
from ...ir.dtypes import is_float, to_numpy
from ...patterns import Match, Pattern, any_value, const, op
from ...patterns.library.normalization import decomposed_layernorm, normalized_last_axis
from ...wording import plural
from ..framework.base import PassContext
from ..framework.pass_registry import register_pass
from ..framework.rules import Rule, RuleSet

LAYERNORM_OPSET = 17  # LayerNormalization is a standard op from this default-domain opset on
GELU_OPSET = 20       # Gelu likewise
SQRT_2 = math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def default_opset(graph: Graph) -> int:
    return graph.opset_imports.get("", graph.opset_imports.get("ai.onnx", 0))


class LayerNormRule(Rule):
    """Pattern ``layernorm`` -> LayerNormalization(X, Scale, B) over the last axis: the
    standard op from opset 17, else a fused node whose body is the original ops."""

    name = "layernorm"

    def pattern(self) -> Pattern:
        """Layer normalization written out in primitive ops, over the last axis:
        ReduceMean → Sub → Pow 2 (or Sub·Sub) → ReduceMean → Add eps → Sqrt → Div → Mul scale
        → Add shift.  ReduceMean may carry its axes as an attribute (opset ≤ 17) or as a
        constant input (opset 18+); the Sub output feeds both Pow and Div.

        Why: exporters at low opsets emit these nine ops; one LayerNormalization kernel reads
        the activation once instead of five times and is numerically safer.

        Bindings: ``input``, ``scale``, ``shift`` (values), ``epsilon`` (float), ``axis``
        (always -1: only the last-axis case matches); nodes ``mean``, ``sub``, ``pow`` (Pow or
        Mul), ``var``, ``add_eps``, ``sqrt``, ``div``, ``scale_mul``, ``shift_add``;
        ``layernorm`` is the node whose output is the normalized result (the shift Add).
        """
        return decomposed_layernorm(any_value().bind("input")).described_as(
            "Layer normalization over the last axis written out as ReduceMean, Sub, Pow, "
            "ReduceMean, Add epsilon, Sqrt, Div, then a scale Mul and a shift Add.")

    def site(self, match: Match) -> Node:
        return match["layernorm"]

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        x, scale, shift = match["input"], match.bindings.get("scale"), match.bindings.get("shift")
        if not is_float(x.elem_type):
            return f"the input {x.name!r} is not a floating-point tensor"
        standard = default_opset(graph) >= LAYERNORM_OPSET
        attrs = {"axis": -1, "epsilon": float(match["epsilon"])}
        width = x.shape[-1] if x.shape else None
        # Either way the node reads (X, Scale[, B]) like the op, so later passes see one
        # signature.
        if scale is None:
            scale = unit_scale(graph, x, width)
        elif standard:
            scale = _as_vector(graph, scale, x, width)
        if standard and shift is not None:
            shift = _as_vector(graph, shift, x, width)
        reason = next((v for v in (scale, shift) if isinstance(v, str)), None)
        if reason is not None:
            return reason
        if standard:
            return self.replace(graph, ctx, match.nodes, "LayerNormalization", [x, scale, shift],
                                attrs)
        return self.fuse(graph, ctx, match.nodes, "LayerNormalization", attrs,
                         operands=[x, scale, shift])


class UnscaledLayerNormRule(LayerNormRule):
    """Pattern ``layernorm_unscaled`` (no scale and shift, or folded away) ->
    LayerNormalization with a unit scale.  Its near misses are the full pattern's, so they
    are not declined twice."""

    name = "layernorm_unscaled"
    declines = False

    def pattern(self) -> Pattern:
        """Layer normalization without its scale and shift, written out over the last axis:
        ReduceMean → Sub → Pow 2 (or Sub·Sub) → ReduceMean → Add eps → Sqrt → Div.

        Why: a LayerNorm without learned affine (``elementwise_affine=False``), or one whose
        scale and shift were already folded into the next linear layer, is still one
        LayerNormalization kernel (with scale 1) instead of seven passes over the activation.
        Look for ``layernorm`` first: this pattern also matches the core of a full one.

        Bindings: ``input``, ``epsilon`` (float), ``axis`` (always -1); nodes ``mean``,
        ``sub``, ``pow``, ``var``, ``add_eps``, ``sqrt``, ``div``; ``layernorm`` is the Div.
        """
        return normalized_last_axis(any_value().bind("input")).bind("layernorm").tag(
            "axis", -1).described_as(
            "Layer normalization over the last axis without scale and shift, written out as "
            "ReduceMean, Sub, Pow, ReduceMean, Add epsilon, Sqrt, Div.")


LAYERNORM = LayerNormRule()


def _layernorm_note(graph: Graph, made: list[Node]) -> str:
    return _opset_note(graph, len(made), "LayerNormalization", LAYERNORM_OPSET)


RECOGNIZE_LAYERNORM = register_pass(RuleSet(
    "recognize_layernorm", "recognition", note=_layernorm_note,
    # The full form first: the unscaled pattern also matches the core of a full LayerNorm.
    rules=(LAYERNORM, UnscaledLayerNormRule()),
    doc="""Replace a LayerNorm written out in primitive ops (ReduceMean, Sub, Pow, ReduceMean,
    Add ε, Sqrt, Div, then a scale Mul and a shift Add) by one LayerNormalization node.

    Exporters targeting old opsets spell layer normalization as nine ops, each a full pass
    over the activation; one LayerNormalization kernel reads it once.  Only a normalization
    over the last axis is recognized (that is what LayerNormalization with axis -1 computes);
    ε comes from the constant the pattern found.  LayerNormalization is a standard op from
    opset 17 on; in older models the nine ops become a fused node in GraphLab's domain whose
    body is the original subgraph, so the model keeps its opset and still runs everywhere.
    A LayerNorm without scale and shift (or whose affine was folded away) is recognized too.
    """))


def _erf_part(x: Pattern) -> Pattern:
    """erf(x / √2), with the division also written as a Mul by 1/√2."""
    scaled = op("Div", x, const(SQRT_2)) | op("Mul", x, const(1.0 / SQRT_2))
    return op("Erf", scaled).bind("erf").tag("form", "erf")


def _tanh_part(x: Pattern) -> Pattern:
    """tanh(√(2/π)·(x + 0.044715·x³)), with x³ as Pow(x, 3) or x·x·x."""
    cube = op("Pow", x, const(3.0)) | op("Mul", op("Mul", x, x), x)
    inner = op("Add", x, op("Mul", const(0.044715), cube))
    return op("Tanh", op("Mul", const(SQRT_2_OVER_PI), inner)).bind("tanh").tag("form", "tanh")


class GeluRule(Rule):
    """Pattern ``gelu`` (erf or tanh form) -> Gelu(X): the standard op from opset 20, else a
    fused node whose body is the original ops."""

    name = "gelu"

    def pattern(self) -> Pattern:
        """GELU written out: x·0.5·(1 + erf(x/√2)) or 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))),
        with the three products grouped in any of the ways exporters write them
        (0.5·(x·(1+…)), x·(0.5·(1+…)), (x·0.5)·(1+…)) and every operand order of Add and Mul.

        Why: a dozen element-wise ops, each a full pass over the activation, become one Gelu
        (or FastGelu for the tanh form) kernel.

        Bindings: ``input`` (x), ``form`` ("erf" or "tanh"), ``erf`` / ``tanh`` (the Erf or
        Tanh node; the other one is None).  The GELU's output is the root node's output.
        """
        x = any_value().bind("input")
        half = const(0.5)
        one_plus = op("Add", _erf_part(x) | _tanh_part(x), const(1.0))
        return (op("Mul", half, op("Mul", x, one_plus))
                | op("Mul", x, op("Mul", half, one_plus))
                | op("Mul", op("Mul", x, half), one_plus)).described_as(
            "GELU written out in primitive ops, in its erf form x·0.5·(1+erf(x/√2)) or its tanh "
            "form 0.5·x·(1+tanh(√(2/π)(x+0.044715x³))), in any common operand order.")

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        attrs = {"approximate": "tanh" if match["form"] == "tanh" else "none"}
        if default_opset(graph) >= GELU_OPSET:
            return self.replace(graph, ctx, match.nodes, "Gelu", [match["input"]], attrs)
        return self.fuse(graph, ctx, match.nodes, "Gelu", attrs, operands=[match["input"]])


def _gelu_note(graph: Graph, made: list[Node]) -> str:
    return _opset_note(graph, len(made), "Gelu", GELU_OPSET)


RECOGNIZE_GELU = register_pass(RuleSet(
    "recognize_gelu", "recognition", (GeluRule(),), note=_gelu_note,
    doc="""Replace a GELU written out in primitive ops — x·½·(1 + erf(x/√2)), or the tanh
    approximation ½x·(1 + tanh(√(2/π)(x + 0.044715x³))) — by one Gelu node.

    Five to eight element-wise ops, each a pass over a large activation (the FFN's 4× wide
    hidden layer), become one kernel.  The tanh form becomes Gelu with approximate="tanh".
    Gelu is a standard op from opset 20 on; in older models the ops become a fused Gelu node
    in GraphLab's domain whose body is the original subgraph.  A look-alike with a wrong
    constant is not a GELU and is left alone; the pattern report says which constant.
    """))


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


def unit_scale(graph: Graph, x: Value, width, elem_type: int | None = None) -> Value | str:
    """A scale of ones over the normalized axis, of x's type (or ``elem_type``)."""
    if not isinstance(width, int):
        return f"the normalized axis of {x.name!r} has unknown size, so no unit scale can be made"
    return graph.add_initializer(f"{x.name}_unit_scale",
                                 np.ones(width, dtype=to_numpy(elem_type or x.elem_type)))


def _opset_note(graph: Graph, count: int, op_type: str, since: int) -> str:
    opset = default_opset(graph)
    if opset >= since:
        return (f"made {plural(count, op_type + ' node')} (a standard op since opset {since}; "
                f"the model's: {opset})")
    return (f"made {plural(count, 'fused ' + op_type + ' node')} in GraphLab's domain, bodies = "
            f"the original ops: the model's opset {opset} predates the standard op (opset {since})")
