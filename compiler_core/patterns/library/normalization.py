"""Sub-patterns several normalization rules share: a mean over the last axis (LayerNorm and
RMSNorm), the decomposed LayerNorm and the written-out RMSNorm (each recognized alone, or after
a residual Add), the residual sum a skip normalization reads and a normalization op over the
last axis (both skip norms)."""

from __future__ import annotations

from onnx import TensorProto

from ...ir import Node, Value
from ..checks import one_of
from ..failure import Wanted
from ..language import Pattern, any_value, const, op, optional
from ..texts import format_attr
from .common import as_float, scalar_const


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


def _last_axis_wanted(value: Value) -> Wanted | None:
    """The one edit that makes a ReduceMean a mean over the last axis: its axes (the
    attribute, or the constant input opset 18 reads them from), or its keepdims."""
    node = value.producer
    axes_right = _is_last_axis(_reduced_axes(node), node.inputs[0].rank)
    keepdims = node.attrs.get("keepdims", 1)
    if axes_right and keepdims != 1:
        return Wanted("attribute", node.name, 1, attribute="keepdims")
    if axes_right or keepdims != 1:
        return None
    axes = node.input(1)
    if axes is not None:
        return Wanted("tensor", axes.name, [-1]) if axes.constant_value() is not None \
            and axes.constant_value().size == 1 else None
    return Wanted("attribute", node.name, [-1], attribute="axes")


def last_axis_mean(x: Pattern, name: str) -> Pattern:
    # Checked once the structure matched (not as an early reject), so a wrong axis on an
    # otherwise perfect layer norm scores as the near miss it is.
    return op("ReduceMean", x, optional(const())).bind(name).where(
        _means_last_axis, "mean over the last axis (axes [-1], keepdims 1)", _reduction_found,
        wanted=_last_axis_wanted)


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


def over_last_axis(norm: Pattern) -> Pattern:
    """A normalization op whose ``axis`` attribute (default -1) names the last axis."""
    return norm.where(_normalizes_last_axis, "normalization over the last axis", _axis_found,
                      wanted=lambda value: Wanted("attribute", value.producer.name, -1,
                                                  attribute="axis"))


def _normalizes_last_axis(value: Value, _: dict) -> bool:
    node = value.producer
    return _is_last_axis((node.attrs.get("axis", -1),), node.inputs[0].rank)


def _axis_found(value: Value, _: dict) -> str:
    node = value.producer
    return f"axis {node.attrs.get('axis', -1)} (rank {node.inputs[0].rank})"


# ------------------------------------------------------------------ RMSNorm written out
_HALF_FLOATS = ("float16", "bfloat16")
_HALF_TYPES = one_of(TensorProto.FLOAT16, TensorProto.BFLOAT16)
# Where the weight multiply sits: RMSNormalization casts back before it multiplies.
WEIGHT_AFTER_CAST, WEIGHT_BEFORE_CAST, NO_CAST = "after_cast", "before_cast", "no_cast"


def _upcast_only_for_the_norm(value: Value, _: dict) -> bool:
    """The Cast to float32 feeds the square and the product only (else it stays outside)."""
    return len(value.users()) <= 2


def _is_weight_vector(value: Value, _: dict) -> bool:
    """A per-feature weight: a vector, or a tensor whose dims before the last are all 1 (a
    gate computed per token, such as Mamba's norm(x)·silu(z), is not part of the norm)."""
    shape = value.shape
    return shape is not None and all(d == 1 for d in shape[:-1])


def _weight_found(value: Value, _: dict) -> str:
    return value.describe_type()


def written_out_rmsnorm(source: Pattern) -> Pattern:
    """The RMS normalization of ``source`` written out, in every spelling of ``rmsnorm``;
    ``source`` is bound by the caller (a plain input, or the residual Add of a skip norm)."""
    upcast = op("Cast", source.has_dtype(*_HALF_FLOATS), to=TensorProto.FLOAT).bind(
        "upcast").where(_upcast_only_for_the_norm, "a float32 upcast read by the norm only",
                        lambda v, _: f"{len(v.users())} readers", needs_bindings=False)
    x = upcast | source
    square = op("Pow", x, const(2.0)) | op("Mul", x, x)
    add_eps = op("Add", last_axis_mean(square, "mean"),
                 scalar_const().bind("epsilon", as_float)).bind("add_eps")
    root = op("Sqrt", add_eps)
    normalized = (op("Div", x, root) | op("Mul", x, op("Reciprocal", root))
                  | op("Mul", x, op("Div", const(1.0), root))
                  | op("Mul", x, op("Pow", add_eps, const(-0.5))))
    weight = any_value().bind("scale").same_size_as("input", axis=-1).where(
        _is_weight_vector, "a weight vector over the last axis", _weight_found,
        needs_bindings=False)

    def downcast(p: Pattern) -> Pattern:
        return op("Cast", p, to=_HALF_TYPES).bind("downcast")

    return (op("Mul", downcast(normalized), weight).tag("weight_order", WEIGHT_AFTER_CAST)
            | downcast(op("Mul", normalized, weight)).tag("weight_order", WEIGHT_BEFORE_CAST)
            | op("Mul", normalized, weight).tag("weight_order", NO_CAST)
            | downcast(normalized).tag("weight_order", WEIGHT_AFTER_CAST)
            | normalized.tag("weight_order", NO_CAST))
