"""Multi-head self-attention written out in primitive ops, in the forms today's exporters emit."""

from __future__ import annotations

from ...ir import Value
from ..language import OpPattern, Pattern, any_value, const, op, optional
from .common import as_float, scalar_const
from .registry import register

HEAD_SPLIT = (0, 2, 1, 3)   # [batch, seq, heads, head_size] <-> [batch, heads, seq, head_size]
KEY_SPLIT = (0, 2, 3, 1)    # [batch, seq, heads, head_size] -> [batch, heads, head_size, seq]


def _op(op_type: str, *inputs, **attrs) -> OpPattern:
    """An op of the block whose output may also be read outside the match: without bindings,
    run-time shape arithmetic reads the intermediates (Shape of Q's heads, of the context) to
    compute Reshape targets; the attention fusion absorbs those readers or declines."""
    return op(op_type, *inputs, **attrs).allow_external_uses()


def _linear(x: Pattern) -> Pattern:
    """x·W (+ b) with constant weights: one of the Q, K, V projections."""
    matmul = _op("MatMul", x, const())
    return _op("Add", matmul, const()) | matmul


def _separate(x: Pattern) -> Pattern:
    return _linear(x).tag("qkv", "separate")


def _packed_qkv(x: Pattern) -> Pattern:
    """One projection computing Q, K and V side by side, split in three along the features
    (GPT-2's c_attn): a Gemm on the input flattened to 2-D, or a MatMul (+ bias)."""
    flat_gemm = _op("Reshape", _op("Gemm", _op("Reshape", x, any_value()), const(),
                                 optional(const())), any_value())
    return _op("Split", flat_gemm | _linear(x), optional(const())).tag("qkv", "packed").where(
        _along_last_axis, "a split along the last axis", _axis_found)


def _heads(projection: Pattern, perm: tuple[int, ...] = HEAD_SPLIT) -> Pattern:
    """[batch, seq, hidden] reshaped to [batch, seq, heads, head_size], heads moved forward."""
    return _op("Transpose", _op("Reshape", projection, any_value()), perm=perm)


def _keys_transposed(key: Pattern) -> Pattern:
    """Kᵀ per head: one Transpose straight from the head split, or (dynamo) the heads' last two
    dims swapped through a 3-D Reshape → Transpose → Reshape."""
    through_3d = _op("Reshape", _op("Transpose", _op("Reshape", _heads(key), any_value()),
                                  perm=(0, 2, 1)), any_value())
    return _heads(key, KEY_SPLIT) | through_3d


def _scaled(x: Pattern, name: str) -> Pattern:
    """x, or x times a scalar constant (SDPA exports multiply Q and Kᵀ by √scale each)."""
    return _op("Mul", x, scalar_const().bind(name, as_float)) | x


def _reciprocal(value: Value) -> float:
    return 1.0 / as_float(value)


def _scores(query: Pattern, key: Pattern) -> Pattern:
    """Q·Kᵀ, with the scale on either factor or on the product (Mul, or Div by √head_size)."""
    qk = _op("MatMul", _scaled(query, "q_scale"), _scaled(_keys_transposed(key), "k_scale"))
    return (_op("Mul", qk, scalar_const().bind("score_scale", as_float))
            | _op("Div", qk, scalar_const().bind("score_scale", _reciprocal)) | qk)


def _masked(query: Pattern, key: Pattern) -> Pattern:
    """The scores with the mask: added (a float mask, 0 where allowed), or selected
    (Where(allowed, scores, fill value)) — or no mask at all (an encoder without padding)."""
    scores = _scores(query, key)
    mask = any_value().bind("mask")
    return (_op("Add", scores, mask).tag("mask_kind", "additive")
            | _op("Where", mask, scores, const()).tag("mask_kind", "where")
            | _scores(query, key).tag("mask_kind", "none"))


def _axis_and_rank(value: Value) -> tuple[int, int | None]:
    """The axis a Softmax or Split works along (ONNX defaults since opset 13: -1 and 0) and
    the rank of its input."""
    node = value.producer
    return node.attrs.get("axis", -1 if node.op_type == "Softmax" else 0), node.inputs[0].rank


def _along_last_axis(value: Value, _: dict) -> bool:
    axis, rank = _axis_and_rank(value)
    return axis == -1 or (rank is not None and axis == rank - 1)


def _axis_found(value: Value, _: dict) -> str:
    axis, rank = _axis_and_rank(value)
    return f"axis {axis} (rank {rank})"


@register("attention")
def attention() -> Pattern:
    """Scaled-dot-product multi-head self-attention, from the hidden states to the merged heads:
    Q, K, V projections (three MatMul (+ bias Add), or one packed projection and a Split) →
    head split (Reshape, Transpose) → Q·Kᵀ (MatMul) → scale → mask → Softmax over the last
    axis → ·V (MatMul) → head merge (Transpose, Reshape).

    Variants (one pattern covers them all): the scale as a Mul or Div of the scores, or as a
    Mul of Q and of Kᵀ by √scale each (SDPA exports), or absent (folded into the Q weights);
    Kᵀ as one Transpose or as a 3-D Reshape/Transpose/Reshape (dynamo); the mask added
    (Add), selected (Where) or absent; SDPA's NaN guard after the Softmax (Where(IsNaN(p), 0, p));
    SDPA's no-op Reshape before the head merge.  Reshape targets may be constants or computed
    at run time: they are not looked at.  Intermediates may also be read outside the match
    (run-time shape arithmetic reads them with Shape); the attention fusion absorbs those
    readers or declines.  Cross-attention (K, V from another input than Q) and layouts with
    the sequence first (torch's nn.MultiheadAttention) do not match.

    Why: a fused attention kernel keeps the [heads, seq, seq] scores and probabilities on chip
    instead of writing them to memory and reading them back five times (onnxruntime's
    Attention, FlashAttention).

    Bindings: ``input`` (the hidden states Q, K, V are computed from), ``qkv`` ("separate" or
    "packed"), ``q_heads`` (the Transpose splitting Q into heads), ``mask`` (the float mask
    added, or the boolean condition of the Where; None without a mask), ``mask_kind``
    ("additive", "where" or "none"),
    ``softmax`` (node), ``q_scale``, ``k_scale``, ``score_scale`` (floats, None when absent;
    their product is the attention's scale).  The merged output is the root node's output.
    """
    x = any_value().bind("input")
    packed = _packed_qkv(x)
    query = _heads(_separate(x) | packed).bind("q_heads")
    key = _separate(x) | packed.output(1)
    value = _heads(_separate(x) | packed.output(2))
    softmax = _op("Softmax", _masked(query, key)).bind("softmax").where(
        _along_last_axis, "softmax over the last axis", _axis_found)
    probs = _op("Where", _op("IsNaN", softmax), const(0.0), softmax) | softmax
    context = _op("MatMul", probs, value)
    merged = _op("Transpose", _op("Reshape", context, any_value()) | context, perm=HEAD_SPLIT)
    return _op("Reshape", merged, any_value()).described_as(
        "Multi-head self-attention: Q/K/V projections, head split, Q·Kᵀ, scale, mask, Softmax "
        "over the last axis, ·V and head merge, as eager, SDPA and dynamo exports write it.")
