"""Rotary position embedding (RoPE) written out in primitive ops becomes one RotaryEmbedding node.

LLM decoders rotate every query and key by position-dependent angles: x·cos + rotate(x)·sin,
where rotate turns each pair of features (x₁, x₂) into (−x₂, x₁).  Exporters write it as a
dozen element-wise and data-movement ops per tensor, twice per layer.  The pairs are either
the two halves of the rotated features (rotate_half: Llama, Qwen2, Mistral, GPT-NeoX, Phi) or
neighbouring features (interleaved: GPT-J, Cohere, GLM); only the first ``rotary_dim``
features may be rotated (partial rotary: GPT-NeoX, Phi, GPT-J), the rest passed through.
cos and sin are operands of the fused node, wherever they come from (a table gathered by
position ids, or Cos/Sin of positions times inverse frequencies): they are shared by every
layer, so computing them stays outside.
"""

from __future__ import annotations

from ...ir import Graph, Node, Value
from ...ir.dtypes import is_float
from ...patterns import Failure, Match, Pattern, any_value, const, op, optional, variadic
from ...patterns.language import OpPattern
from ...wording import plural
from ..framework.base import PassContext
from ..analyses.constants import constant_ints, ints_input_or_attr
from ..framework.pass_registry import register_pass
from ..framework.rewrite import boundary, with_private_shape_arithmetic
from ..framework.rules import Rule, RuleSet
from ..analyses.shape_facts import known_dim, shape_tensor_dims

FUSED_OP = "RotaryEmbedding"  # the lowering and the attention pattern import this spelling
HEADS_FIRST, SEQUENCE_FIRST = "heads_first", "sequence_first"  # [B, N, S, H] / [B, S, N, H]


# ---------------------------------------------------------------------------- slices
def last_axis_slice(node: Node) -> tuple[int, int, int] | None:
    """(start, stop, step) of a Slice that cuts only the last axis of a tensor whose last dim
    is known, clamped as ONNX clamps them; None for any other Slice."""
    x = node.inputs[0]
    if x.rank is None or not isinstance(x.shape[-1], int):
        return None
    starts, ends = ints_input_or_attr(node, 1, "starts"), ints_input_or_attr(node, 2, "ends")
    if starts is None or ends is None or len(starts) != 1 or len(ends) != 1:
        return None
    axes = _given_or(node, 3, "axes", (0,))
    steps = constant_ints(node.input(4)) if node.input(4) is not None else (1,)
    if (axes is None or steps is None or len(axes) != 1 or axes[0] % x.rank != x.rank - 1
            or steps[0] <= 0):
        return None
    return slice(starts[0], ends[0], steps[0]).indices(x.shape[-1])


def _given_or(node: Node, index: int, attr: str, default: tuple) -> tuple | None:
    if attr not in node.attrs and node.input(index) is None:
        return default
    return ints_input_or_attr(node, index, attr)


def _slice_text(node: Node | None) -> str:
    if node is None:
        return "nothing"
    cut = last_axis_slice(node)
    if cut is None:
        return f"Slice '{node.name}' (not a constant cut of the last axis of a known width)"
    start, stop, step = cut
    return f"x[..., {start}:{stop}{'' if step == 1 else f':{step}'}]"


def _last_dim(value: Value | None) -> int | None:
    if value is None or value.rank is None:
        return None
    dim = value.shape[-1]
    return dim if isinstance(dim, int) else None


# ------------------------------------------------------------------------- the pattern
def _op(op_type: str, *inputs, **attrs) -> OpPattern:
    """An op of the rotation whose output may also be read outside the match: without
    bindings, exporters compute the flattening Reshape's target from the Shape of the stacked
    pairs.  The rule absorbs such shape arithmetic or declines, naming the reader."""
    return op(op_type, *inputs, **attrs).allow_external_uses()


def _sliced(x: Pattern) -> Pattern:
    """A Slice of ``x`` (its bounds are checked where the slices are combined)."""
    return _op("Slice", x, variadic(const()))


def _negated(x: Pattern) -> Pattern:
    return _op("Neg", x) | _op("Mul", x, const(-1.0))


def _halves_rotated(x: Pattern) -> Pattern:
    """rotate_half: Concat(−x[..., h:], x[..., :h]) along the last axis, h = half the width."""
    upper, lower = _sliced(x).bind("upper"), _sliced(x).bind("lower")
    return _op("Concat", _negated(upper), lower).where(
        _halves_cut_right, "−x[..., h:] then x[..., :h] along the last axis (h = half the "
        "rotated width)", _halves_found)


def _halves_cut_right(value: Value, bindings: dict) -> bool:
    width = _last_dim(bindings["upper"].inputs[0])
    if width is None or width % 2 or not _concat_on_last_axis(value.producer):
        return False
    half = width // 2
    return (last_axis_slice(bindings["upper"]) == (half, width, 1)
            and last_axis_slice(bindings["lower"]) == (0, half, 1))


def _halves_found(value: Value, bindings: dict) -> str:
    return (f"−{_slice_text(bindings.get('upper'))} then {_slice_text(bindings.get('lower'))}"
            f" (width {_last_dim(bindings['upper'].inputs[0])}), Concat axis "
            f"{value.producer.attrs.get('axis')}")


def _lane(x: Pattern, pairs: Pattern, split: OpPattern, k: int) -> tuple[Pattern, Pattern]:
    """Feature k of every pair along the last axis, as [..., width/2] (x[..., k::2], or Gather
    or Split + Squeeze of x reshaped to pairs [..., width/2, 2]) and as the column
    [..., width/2, 1] a Split output or a Slice of the pairs already is."""
    flat = (_sliced(x) | _op("Gather", pairs, const(k))
            | _op("Squeeze", split.output(k), optional(const()))).bind(f"lane{k}")
    column = (split.output(k) | _sliced(pairs)).bind(f"lane{k}")
    return flat, column


def _column(x: Pattern) -> Pattern:
    return _op("Unsqueeze", x, optional(const()))


def _pairs_rotated(x: Pattern) -> Pattern:
    """The interleaved rotation: stack(−x₂, x₁) along a new last axis, flattened back, where
    x₁, x₂ are the even and odd features."""
    pairs = _op("Reshape", x, any_value())
    split = _op("Split", pairs, optional(const()))
    even, even_column = _lane(x, pairs, split, 0)
    odd, odd_column = _lane(x, pairs, split, 1)
    negated_odd = _column(_negated(odd)) | _negated(_column(odd)) | _negated(odd_column)
    stacked = _op("Concat", negated_odd, _column(even) | even_column)
    return _op("Reshape", stacked, any_value()).where(
        _pairs_cut_right, "stack(−x[..., 1::2], x[..., 0::2]) along a new last axis, flattened "
        "back to the rotated width", _pairs_found)


def _pairs_cut_right(value: Value, bindings: dict) -> bool:
    x = _rotated_input(bindings)
    width = _last_dim(x)
    if width is None or width % 2:
        return False
    flatten, stack = value.producer, value.producer.inputs[0].producer
    if not (_concat_on_last_axis(stack) and _reshapes_to(flatten, x.shape)):
        return False
    return all(_is_lane(bindings[f"lane{k}"], x, k) for k in (0, 1))


def _is_lane(lane: Node | Value, x: Value, k: int) -> bool:
    """``lane`` picks feature k of every pair of x's last axis."""
    width = x.shape[-1]
    node, index = (lane.producer, lane.output_index) if isinstance(lane, Value) else (lane, 0)
    if node.op_type == "Squeeze":
        squeezed = ints_input_or_attr(node, 1, "axes")
        if squeezed is None or len(squeezed) != 1 or squeezed[0] % (x.rank + 1) != x.rank:
            return False
        node, index = node.inputs[0].producer, node.inputs[0].output_index
    if node.op_type == "Slice" and node.inputs[0] is x:
        return last_axis_slice(node) == (k, width, 2)
    pairs = node.inputs[0].producer
    if not _reshapes_to(pairs, (*x.shape[:-1], width // 2, 2)):
        return False
    if node.op_type == "Slice":
        return last_axis_slice(node) == (k, k + 1, 1)
    if node.op_type == "Gather":
        return (node.attrs.get("axis", 0) % (x.rank + 1) == x.rank
                and node.inputs[1].rank == 0 and constant_ints(node.inputs[1]) == (k,))
    return (node.op_type == "Split" and index == k and len(node.outputs) == 2
            and node.attrs.get("axis", 0) % (x.rank + 1) == x.rank)


def _pairs_found(value: Value, bindings: dict) -> str:
    x = _rotated_input(bindings)
    target = shape_tensor_dims(value.producer.input(1))
    return (f"lanes {_lane_text(bindings.get('lane0'))} and {_lane_text(bindings.get('lane1'))} "
            f"of {x.describe_type() if x is not None else 'an unknown tensor'}, flattened to "
            f"{list(target) if target is not None else 'a target computed at run time'}")


def _lane_text(lane: Node | Value | None) -> str:
    node = lane.producer if isinstance(lane, Value) else lane
    if node is not None and node.op_type == "Slice":
        return _slice_text(node)
    return f"{node.op_type} '{node.name}'" if node is not None else "nothing"


def _rotated_input(bindings: dict) -> Value | None:
    part = bindings.get("rotated_part")
    return part.outputs[0] if part is not None else bindings.get("input")


def _reshapes_to(node: Node, dims: tuple) -> bool:
    """``node`` is a Reshape whose result provably has the shape ``dims`` (ints or names)."""
    if node is None or node.op_type != "Reshape":
        return False
    result = node.outputs[0].shape
    if result is not None and len(result) == len(dims) and all(
            isinstance(d, (int, str)) and d == want for d, want in zip(result, dims)):
        return True
    target, source = shape_tensor_dims(node.input(1)), node.inputs[0].shape
    if target is None or len(target) != len(dims):
        return False
    if not node.attrs.get("allowzero", 0) and source is not None:
        target = tuple(source[i] if d == 0 and i < len(source) else d
                       for i, d in enumerate(target))
    mismatched = [i for i, (d, want) in enumerate(zip(target, dims)) if d is None or d != want]
    # One -1 takes what is left, which is the wanted dim once every other dim matches: the
    # rotation's Reshapes keep the element count by construction.
    return not mismatched or (len(mismatched) == 1 and target[mismatched[0]] == -1)


def _concat_on_last_axis(node: Node | None) -> bool:
    if node is None or node.op_type != "Concat":
        return False
    rank = node.outputs[0].rank
    axis = node.attrs.get("axis")
    return axis == -1 or (rank is not None and axis == rank - 1)


def _rotation(x: Pattern) -> Pattern:
    """x·cos + rotate(x)·sin, rotate being rotate_half or the interleaved pair rotation; the
    rotated product is matched first, so x is bound by the slices, not by an operand order."""
    rotated = (_halves_rotated(x).tag("interleaved", 0)
               | _pairs_rotated(x).tag("interleaved", 1))
    return _op("Add", _op("Mul", rotated, any_value().bind("sin")),
               _op("Mul", x, any_value().bind("cos")))


def _partial_cut_right(value: Value, bindings: dict) -> bool:
    width = _last_dim(bindings["input"])
    rotated = last_axis_slice(bindings["rotated_part"])
    return (width is not None and _concat_on_last_axis(value.producer) and rotated is not None
            and rotated[0] == 0 and rotated[2] == 1 and 0 < rotated[1] < width
            and last_axis_slice(bindings["passed_part"]) == (rotated[1], width, 1))


def _partial_found(value: Value, bindings: dict) -> str:
    return (f"{_slice_text(bindings.get('rotated_part'))} rotated, then "
            f"{_slice_text(bindings.get('passed_part'))} of a last axis of "
            f"{_last_dim(bindings.get('input'))}, Concat axis {value.producer.attrs.get('axis')}")


# ---------------------------------------------------------------------- layout facts
def rotary_layout(x: Value, cos: Value) -> tuple[str | None, int | None]:
    """Which 4-D layout the rotated tensor has, read from how cos broadcasts against it: the
    angles never vary along the heads.  Returns (HEADS_FIRST [B, N, S, H], SEQUENCE_FIRST
    [B, S, N, H], or None when cos varies along both middle axes or x is not 4-D; the number
    of heads when static).  With one position both layouts compute the same, so heads-first
    is said."""
    if x.rank != 4 or cos.shape is None or len(cos.shape) > 4:
        return None, None
    table = (1,) * (4 - len(cos.shape)) + tuple(cos.shape)
    for layout, heads in ((HEADS_FIRST, 1), (SEQUENCE_FIRST, 2)):
        if table[heads] == 1:
            return layout, known_dim(x, heads)
    return None, None


# ----------------------------------------------------------------------------- rule
class RotaryRule(Rule):
    """Pattern ``rotary_embedding`` -> one fused RotaryEmbedding(x, cos, sin) node whose body
    is the original ops; it records ``interleaved``, ``rotary_dim`` and, when the layout says,
    ``num_heads``.  The output has x's shape (partial rotary included)."""

    name = "rotary_embedding"

    def pattern(self) -> Pattern:
        """Rotary position embedding written out: x·cos + rotate(x)·sin, rotate being
        rotate_half (Concat(−x[..., h:], x[..., :h])) or the interleaved rotation
        (stack(−x[..., 1::2], x[..., 0::2]) flattened; the even and odd features also as
        Gather or Split of x reshaped to pairs); the negation as Neg or Mul by −1; Add and Mul
        operands in either order.  Partial rotary: only x[..., :rotary_dim] is rotated and
        Concat'ed with x[..., rotary_dim:].

        Why: a dozen element-wise and data-movement ops per query and key — each a pass over
        the activation — become one kernel (onnxruntime's RotaryEmbedding, or the prologue of
        a fused attention kernel, which can only take rotary as one recognized op).

        Bindings: ``input`` (the query or key tensor), ``cos``, ``sin`` (the values
        multiplied, broadcasting to the rotated part), ``interleaved`` (0 or 1),
        ``rotated_part`` and ``passed_part`` (the two Slices of partial rotary; None when every
        feature rotates), ``upper``/``lower`` or ``lane0``/``lane1`` (what picks the two
        features of each pair).
        """
        x = any_value().bind("input")
        rotated_part = _sliced(x).bind("rotated_part")
        passed_part = _sliced(x).bind("passed_part")
        partial = op("Concat", _rotation(rotated_part), passed_part).where(
            _partial_cut_right, "x[..., :rotary_dim] rotated, then x[..., rotary_dim:], along "
            "the last axis", _partial_found)
        return (partial | _rotation(any_value().bind("input"))).described_as(
            "Rotary position embedding: x·cos + rotate(x)·sin with rotate_half or the "
            "interleaved pair rotation, on all features or on the first rotary_dim (partial "
            "rotary).")

    def check(self, match: Match) -> Failure | None:
        return self.outside_reader_failure(match, self._members(match), match.root.outputs)

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        x, cos, sin = match["input"], match["cos"], match["sin"]
        if not is_float(x.elem_type):
            return f"the rotated tensor {x.name!r} is not a floating-point tensor"
        part = match["rotated_part"]
        width = _last_dim(part.outputs[0] if part is not None else x)
        attrs = {"interleaved": int(match["interleaved"]), "rotary_dim": int(width)}
        _, heads = rotary_layout(x, cos)
        if heads is not None:
            attrs["num_heads"] = heads
        members = self._members(match)
        # Shape arithmetic shared with other layers is read at run time: it follows x, cos, sin.
        extra = [v for v in boundary(members)[0]
                 if not v.is_constant and v not in (x, cos, sin)]
        return self.fuse(graph, ctx, members, FUSED_OP, attrs, operands=[x, cos, sin, *extra])

    @staticmethod
    def _members(match: Match) -> list[Node]:
        return with_private_shape_arithmetic(match.nodes)


def _note(graph: Graph, made: list[Node]) -> str:
    interleaved = sum(1 for n in made if n.attrs["interleaved"])
    partial = sum(1 for n in made if n.attrs["rotary_dim"] != _last_dim(n.inputs[0]))
    return (f"made {plural(len(made), 'RotaryEmbedding node')}: {interleaved} interleaved, "
            f"{partial} partial")


RECOGNIZE_ROTARY = register_pass(RuleSet(
    "recognize_rotary", "recognition", (RotaryRule(),), note=_note,
    doc="""Replace a rotary position embedding written out in primitive ops (x·cos +
    rotate_half(x)·sin, the interleaved pair rotation, or either on the first rotary_dim
    features) by one fused RotaryEmbedding node reading x, cos and sin.

    Each query and key of every layer is rotated by a dozen ops; one kernel reads x once.
    Attention fusion runs after this pass and finds rotary as that one node between the head
    split and Q·Kᵀ.  cos and sin stay outside (shared by every layer); with ``--runtime
    onnxruntime`` the node becomes onnxruntime's RotaryEmbedding where its contract fits.
    """))
