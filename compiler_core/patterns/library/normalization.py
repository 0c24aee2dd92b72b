"""Layer normalization: the decomposed form exporters emit, and Add + LayerNorm (skip)."""

from __future__ import annotations

from ...ir import FUSED_DOMAIN, Node, Value
from ..language import Pattern, any_value, const, op, optional
from ..texts import format_attr
from .common import as_float, attr_or_default, scalar_const
from .registry import register


def _reduced_axes(node: Node) -> tuple | None:
    """ReduceMean's axes: an attribute up to opset 17, a constant second input from 18 on."""
    axes = node.attrs.get("axes")
    if axes is None and node.input(1) is not None:
        data = node.input(1).constant_value()
        axes = None if data is None else tuple(int(a) for a in data.reshape(-1))
    return axes


def _is_last_axis(axes: tuple | None, rank: int | None) -> bool:
    return axes is not None and len(axes) == 1 and (
        axes[0] == -1 or (rank is not None and axes[0] == rank - 1))


def _means_last_axis(value: Value, _: dict) -> bool:
    node = value.producer
    return node.attrs.get("keepdims", 1) == 1 and _is_last_axis(_reduced_axes(node),
                                                                 node.inputs[0].rank)


def _reduction_found(value: Value, _: dict) -> str:
    node = value.producer
    axes = _reduced_axes(node)
    text = "axes not constant" if axes is None and node.input(1) else f"axes {format_attr(axes)}"
    return f"{text}, keepdims {node.attrs.get('keepdims', 1)} (rank {node.inputs[0].rank})"


def last_axis_mean(x: Pattern, name: str) -> Pattern:
    # Checked once the structure matched (not as an early reject), so a wrong axis on an
    # otherwise perfect layer norm scores as the near miss it is.
    return op("ReduceMean", x, optional(const())).bind(name).where(
        _means_last_axis, "mean over the last axis (axes [-1], keepdims 1)", _reduction_found)


def normalized_last_axis(x: Pattern) -> Pattern:
    """(x - mean(x)) / sqrt(mean((x - mean(x))²) + eps) over the last axis, ending at the Div.
    The same Sub feeds both the square and the Div; binds the nodes and epsilon."""
    mean = last_axis_mean(x, "mean")
    sub = op("Sub", x, mean).bind("sub")
    square = op("Pow", sub, const(2.0)).bind("pow") | op("Mul", sub, sub).bind("pow")
    var = last_axis_mean(square, "var")
    add_eps = op("Add", var, scalar_const().bind("epsilon", as_float)).bind("add_eps")
    return op("Div", sub, op("Sqrt", add_eps).bind("sqrt")).bind("div")


def decomposed_layernorm(x: Pattern) -> Pattern:
    """``normalized_last_axis`` * scale + shift; binds the nodes and scale/shift/epsilon."""
    div = normalized_last_axis(x)
    scale = any_value().bind("scale").same_size_as("input", axis=-1)
    shift = any_value().bind("shift").same_size_as("input", axis=-1)
    mul = op("Mul", div, scale).bind("scale_mul")
    return op("Add", mul, shift).bind("shift_add").bind("layernorm").tag("axis", -1)


@register("layernorm")
def layernorm() -> Pattern:
    """Layer normalization written out in primitive ops, over the last axis:
    ReduceMean → Sub → Pow 2 (or Sub·Sub) → ReduceMean → Add eps → Sqrt → Div → Mul scale →
    Add shift.  ReduceMean may carry its axes as an attribute (opset ≤ 17) or as a constant
    input (opset 18+); the Sub output feeds both Pow and Div.

    Why: exporters at low opsets emit these nine ops; one LayerNormalization kernel reads the
    activation once instead of five times and is numerically safer.

    Bindings: ``input``, ``scale``, ``shift`` (values), ``epsilon`` (float), ``axis`` (always
    -1: only the last-axis case matches); nodes ``mean``, ``sub``, ``pow`` (Pow or Mul),
    ``var``, ``add_eps``, ``sqrt``, ``div``, ``scale_mul``, ``shift_add``; ``layernorm`` is the
    node whose output is the normalized result (the shift Add).
    """
    return decomposed_layernorm(any_value().bind("input")).described_as(
        "Layer normalization over the last axis written out as ReduceMean, Sub, Pow, "
        "ReduceMean, Add epsilon, Sqrt, Div, then a scale Mul and a shift Add.")


@register("layernorm_unscaled")
def layernorm_unscaled() -> Pattern:
    """Layer normalization without its scale and shift, written out over the last axis:
    ReduceMean → Sub → Pow 2 (or Sub·Sub) → ReduceMean → Add eps → Sqrt → Div.

    Why: a LayerNorm without learned affine (``elementwise_affine=False``), or one whose
    scale and shift were already folded into the next linear layer, is still one
    LayerNormalization kernel (with scale 1) instead of seven passes over the activation.
    Look for ``layernorm`` first: this pattern also matches the core of a full one.

    Bindings: ``input``, ``epsilon`` (float), ``axis`` (always -1); nodes ``mean``, ``sub``,
    ``pow``, ``var``, ``add_eps``, ``sqrt``, ``div``; ``layernorm`` is the Div.
    """
    return normalized_last_axis(any_value().bind("input")).bind("layernorm").tag(
        "axis", -1).described_as(
        "Layer normalization over the last axis without scale and shift, written out as "
        "ReduceMean, Sub, Pow, ReduceMean, Add epsilon, Sqrt, Div.")


def residual_sum() -> Pattern:
    """The residual Add a skip normalization reads: ``input + skip``, where ``input`` may be a
    projection plus its bias vector (``x + bias``, absorbed: onnxruntime's skip ops add a bias
    input with the skip, so the projection is left a bare MatMul).  The sum may also be read
    elsewhere: in a pre-norm block (x + sublayer(norm(x))) the residual stream flows on to the
    next block's Add, and the fused op returns the sum as a second result.

    Bindings: ``skip_add`` (node), ``input``, ``skip`` (values), and when a bias is absorbed
    ``bias_add`` (node) and ``bias`` (a constant vector over the last axis).
    """
    # Checked right away, not once the whole match stands (as same_size_as and other readers
    # are): by then it is too late to fall back to the unbiased alternative.
    biased = op("Add", any_value().bind("input"), const().bind("bias")).bind("bias_add").where(
        _adds_a_vector, "a bias vector over the last axis", _bias_found,
        needs_bindings=False).where(
        _read_once, "a bias Add read by the residual Add only", _readers, needs_bindings=False)
    # Two alternatives, not one Add over (biased | any): the commutative match takes the first
    # operand order that fits, and the plain operand fits either order.
    return (op("Add", biased, any_value().bind("skip")).bind("skip_add").allow_external_uses()
            | op("Add", any_value().bind("input"), any_value().bind("skip")).bind(
                "skip_add").allow_external_uses())


def _bias_of(value: Value) -> Value:
    """The constant operand of the bias Add that produces ``value``."""
    return next(v for v in value.producer.inputs if v.is_constant)


def _adds_a_vector(value: Value, _: dict) -> bool:
    bias, width = _bias_of(value), value.shape[-1] if value.shape else None
    return bias.rank == 1 and isinstance(width, int) and bias.shape[0] == width


def _bias_found(value: Value, _: dict) -> str:
    return f"{_bias_of(value).describe_type()} added to {value.describe_type()}"


def _read_once(value: Value, _: dict) -> bool:
    return not value.is_graph_output and len(value.uses) == 1


def _readers(value: Value, _: dict) -> str:
    readers = ", ".join(f"{user.op_type} '{user.name}'" for user in value.users())
    return "a graph output" + (f" also read by {readers}" if readers else "") \
        if value.is_graph_output else f"read by {readers}"


@register("skip_layernorm")
def skip_layernorm() -> Pattern:
    """A residual Add (``residual_sum``: maybe absorbing a projection's bias Add, maybe read on
    by the next block) feeding a layer normalization — either the LayerNormalization op over
    the last axis (standard, or GraphLab's fused LayerNormalization that LayerNorm recognition
    makes below opset 17) or the decomposed form of ``layernorm``.

    Why: onnxruntime's SkipLayerNormalization does the residual add (with the bias) and the
    normalization in one pass (24 of them in bert-base) and writes the sum once when the
    residual stream needs it.

    Bindings: those of ``residual_sum``; ``scale``, ``shift`` (None when the op form has no
    bias), ``epsilon`` (float), ``axis`` (-1 for decomposed; the op's axis otherwise),
    ``layernorm`` (the LayerNormalization node, or the shift Add of the decomposed form),
    ``form`` ("op" or "decomposed"); the decomposed form also binds the node names of
    ``layernorm``.
    """
    skip_add = residual_sum()
    standard = _layernorm_op(skip_add, "")
    recognized = _layernorm_op(skip_add, FUSED_DOMAIN)
    decomposed = decomposed_layernorm(skip_add).tag("form", "decomposed")
    return (standard | recognized | decomposed).described_as(
        "A residual Add (its input may carry a projection's bias Add; the sum may be read on) "
        "feeding a layer normalization over the last axis (the LayerNormalization op or its "
        "decomposed form).")


def _layernorm_op(x: Pattern, domain: str) -> Pattern:
    """LayerNormalization over the last axis reading ``x``: the standard op, or (in GraphLab's
    domain) the fused node LayerNorm recognition makes where the opset has no such op."""
    layernorm = over_last_axis(op("LayerNormalization", x, any_value().bind("scale"),
                                  optional(any_value().bind("shift")), domain=domain))
    return layernorm.bind("layernorm").bind("epsilon", attr_or_default("epsilon", 1e-5)).bind(
        "axis", attr_or_default("axis", -1)).tag("form", "op")


def over_last_axis(norm: Pattern) -> Pattern:
    """A normalization op whose ``axis`` attribute (default -1) names the last axis."""
    return norm.where(_normalizes_last_axis, "normalization over the last axis", _axis_found)


def _normalizes_last_axis(value: Value, _: dict) -> bool:
    node = value.producer
    return _is_last_axis((node.attrs.get("axis", -1),), node.inputs[0].rank)


def _axis_found(value: Value, _: dict) -> str:
    node = value.producer
    return f"axis {node.attrs.get('axis', -1)} (rank {node.inputs[0].rank})"
