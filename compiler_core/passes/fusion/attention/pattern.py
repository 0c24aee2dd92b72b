"""The attention fusion's pattern: scaled-dot-product attention written out in primitive ops,
in the forms today's exporters emit.

One pattern covers the family: multi-head, grouped-query and multi-query attention, self- and
cross-attention, batch-first and sequence-first layouts, rotary embeddings on Q and K, a KV
cache (past keys and values concatenated in front of the new ones), additive or selecting
masks (causal, sliding-window, padding) or none, float32 and float16 (Casts around the
Softmax).  It starts at the tensors the head split reads (the projections' outputs: the fusion
takes the projections in when only this block reads them) and ends at the merged heads.
Each piece is a named part, so a near miss says which one did not fit ("key › repeat-kv: ...").
"""

from __future__ import annotations

from ....ir import FUSED_DOMAIN, Value
from ....ir.contrib_shapes import MS_DOMAIN
from ....patterns.checks import predicate
from ....patterns.language import OpPattern, Pattern, any_value, const, op, optional
from ....patterns.library.common import as_float, scalar_const

HEAD_SPLIT = (0, 2, 1, 3)        # [batch, seq, heads, head] <-> [batch, heads, seq, head]
KEY_SPLIT = (0, 2, 3, 1)         # [batch, seq, heads, head] -> [batch, heads, head, seq]
SEQ_FIRST_SPLIT = (1, 0, 2)      # [seq, batch·heads, head] -> [batch·heads, seq, head]
SEQ_FIRST_KEY_SPLIT = (1, 2, 0)  # [seq, batch·heads, head] -> [batch·heads, head, seq]
SEQ_FIRST_MERGE = (2, 0, 1, 3)   # [batch, heads, seq, head] -> [seq, batch, heads, head]
ROTARY_OP = "RotaryEmbedding"    # recognize_rotary's fused node (input 0: Q or K, same shape)

SWAPS_LAST_TWO = predicate(
    lambda p: len(p) >= 3 and list(p) == [*range(len(p) - 2), len(p) - 1, len(p) - 2],
    "swapping the last two axes")
SEQUENCE_AXIS = predicate(lambda a: a in (-2, 2), "-2 or 2 (the sequence axis)")
LAST_AXIS = predicate(lambda a: a in (-1, 3), "-1 or 3 (the last axis)")
LAST_AXIS_CONSTANT = predicate(lambda a: a.size == 1 and int(a.reshape(-1)[0]) in (-1, 3),
                               "[-1] or [3] (the last axis)")


def _op(op_type: str, *inputs, **attrs) -> OpPattern:
    """An op of the block whose output may also be read outside the match: without bindings,
    run-time shape arithmetic reads the intermediates (Shape of Q's heads, of the context) to
    compute Reshape targets; the attention fusion absorbs those readers or declines."""
    return op(op_type, *inputs, **attrs).allow_external_uses()


def _maybe(op_type: str, x: Pattern) -> Pattern:
    """x, or x through one ``op_type`` (a Cast of a float16 model computing in float32)."""
    return _op(op_type, x) | x


def _source(role: str) -> Pattern:
    return any_value().bind(f"{role}_in")


class _PackedHeads:
    """GPT-NeoX-style heads: one projection viewed as [B, S, N, 3·H], moved to [B, N, S, 3·H]
    and cut into Q, K, V along the last axis (a Split, or one Slice each).  One element per
    shared node, so Q, K and V match the very same Transpose and Split."""

    def __init__(self):
        source = any_value().bind("q_in").bind("k_in").bind("v_in")
        self.heads = _op("Transpose", _op("Reshape", source, any_value()), perm=HEAD_SPLIT).where(
            _cut_in_three, "heads cut into Q, K and V (a 3-way Split or three Slices)",
            _readers, needs_bindings=False)
        self.split = _op("Split", self.heads, optional(any_value()), axis=LAST_AXIS)

    def part(self, index: int) -> Pattern:
        cut = _op("Slice", self.heads, const(), const(), const(where=LAST_AXIS_CONSTANT), ...)
        return (self.split.output(index) | cut).tag("heads_packed", 1)


def _cut_in_three(value: Value, _: dict) -> bool:
    readers = [u for u in value.users() if u.op_type != "Shape"]
    return (len(readers) == 1 and readers[0].op_type == "Split" and len(readers[0].outputs) == 3
            or len(readers) == 3 and all(u.op_type == "Slice" for u in readers))


def _readers(value: Value, _: dict) -> str:
    return "read by " + ", ".join(sorted(u.op_type for u in value.users()))


def _split_heads(role: str) -> Pattern:
    """[B, S, N·H] → [B, S, N, H] (rotated there by GPT-J-style models)."""
    split = _op("Reshape", _source(role), any_value())
    return _rotary_forms(split, role, "before_split", lambda before: split | before)


# A norm over each head's features (the query/key norm of Gemma-3, Qwen3, OLMo2): the
# normalizations recognition makes, written as one node each.
_HEAD_NORMS = (("SimplifiedLayerNormalization", FUSED_DOMAIN), ("RMSNormalization", ""),
               ("LayerNormalization", ""), ("LayerNormalization", FUSED_DOMAIN))


def _normed(x: Pattern, role: str) -> Pattern:
    """x through a per-head norm (tagged ``{role}_norm``), or x as it is."""
    norm = None
    for op_type, domain in _HEAD_NORMS:
        one = op(op_type, x, ..., domain=domain).allow_external_uses()
        norm = one if norm is None else norm | one
    return norm.tag(f"{role}_norm", 1) | x


def _heads(role: str, packed: _PackedHeads, index: int) -> Pattern:
    """The projection's output split into heads: [B, S, N·H] → [B, N, S, H] (batch first, or
    cut from packed heads), normalized per head before or after the heads move forward where
    the model does (Qwen3, Gemma-3); [S, B, N·H] → [S, B·N, H] → [B·N, S, H], then
    [B, N, S, H] or kept 3-D (sequence first, PyTorch's nn.MultiheadAttention)."""
    batch_first = _normed(_op("Transpose", _normed(_split_heads(role), role), perm=HEAD_SPLIT),
                          role) | packed.part(index)
    seq_first = _op("Transpose", _op("Reshape", _source(role), any_value()),
                    perm=SEQ_FIRST_SPLIT)
    return (batch_first.tag(f"{role}_layout", "batch-first")
            | _op("Reshape", seq_first, any_value()).tag(f"{role}_layout", "sequence-first")
            | seq_first.tag(f"{role}_layout", "sequence-first")).bind(f"{role}_heads").part(
                "head split")


def _written_out_rotary(x: Pattern) -> Pattern:
    """x·cos + rotate(x)·sin left as primitive ops: matched only to say so (the fusion takes
    rotary as recognize_rotary's one node, which later passes and runtimes understand)."""
    return _op("Add", _op("Mul", x, any_value()), _op("Mul", any_value(), any_value())).where(
        lambda _v, _b: False, "rotary embedding as one RotaryEmbedding node (recognize_rotary)",
        lambda _v, _b: "rotary written out: x·cos + rotate_half(x)·sin (recognize_rotary did "
                       "not fuse it)")


def _first_dims(x: Pattern) -> Pattern:
    return _op("Slice", x, const(), const(), const(where=LAST_AXIS_CONSTANT), ...)


def _rotary_forms(x: Pattern, role: str, where: str, around) -> Pattern:
    """``around(rotated x)``: x through recognize_rotary's RotaryEmbedding node, or x or its
    first dims through one, concatenated with the rest (partial rotary as Phi-3's TorchScript
    export writes it, even when the rest is empty); or — to say so — rotary written out, on
    the whole of x or its first dims.  Tags ``{role}_rotary``, binds
    ``{role}_rotated_{where}`` to the rotated value."""
    fused = op(ROTARY_OP, x, ..., domain=FUSED_DOMAIN).allow_external_uses()
    part = op(ROTARY_OP, _first_dims(x), ..., domain=FUSED_DOMAIN).allow_external_uses()
    partial = _op("Concat", fused | part, any_value(), axis=LAST_AXIS)
    rotated = (fused | partial).tag(f"{role}_rotary", 1).bind(f"{role}_rotated_{where}")
    written_partial = _op("Concat", _written_out_rotary(_first_dims(x)), any_value(),
                          axis=LAST_AXIS)
    return around(rotated) | _written_out_rotary(x) | written_partial


def _rotated(x: Pattern, role: str) -> Pattern:
    """x through rotary (see ``_rotary_forms``), or x as it is; bound ``{role}_rotated``."""
    return _rotary_forms(x, role, "heads", lambda rotated: rotated | x).bind(
        f"{role}_rotated").part("rotary")


def _cached(x: Pattern, role: str) -> Pattern:
    """x, or the KV cache: the past keys (values) concatenated in front of x on the sequence
    axis.  Bound as ``{role}_cache``: the present keys (values) a decoder returns."""
    concat = _op("Concat", any_value().bind(f"past_{role}"), x, axis=SEQUENCE_AXIS)
    return (concat | x).bind(f"{role}_cache").part("past")


def _repeated(cache: Pattern) -> tuple[Pattern, Pattern]:
    """Grouped-query attention's repeat-kv: each K/V head read by N/N_kv query heads.
    (the 5-D repeat [B, N_kv, rep, S, H], the 4-D result): Unsqueeze → Expand → Reshape, or
    no repeat (as many K/V heads as Q heads, or one head broadcast by the MatMul)."""
    expanded = _op("Expand", _op("Unsqueeze", cache, ...), any_value()).tag("repeat_kv", 1)
    return expanded, (_op("Reshape", expanded, any_value()) | cache).part("repeat-kv")


def _scaled(x: Pattern, name: str) -> Pattern:
    """x, or x times a scalar constant (SDPA exports multiply Q and Kᵀ by √scale each)."""
    return _op("Mul", x, scalar_const().bind(name, as_float)) | x


def _query(packed: _PackedHeads) -> Pattern:
    """Q per head, rotated; for grouped-query attention by broadcasting, reshaped to
    [B, N_kv, rep·S, H] so each K/V head meets its group of query heads in one MatMul."""
    rotated = _rotated(_heads("q", packed, 0), "q")
    grouped = rotated | _op("Reshape", rotated, any_value()).tag("q_grouped", 1)
    return _scaled(grouped, "q_scale").part("query", group=True)


def _key_heads(packed: _PackedHeads) -> tuple[Pattern, Pattern]:
    """K per head through rotary, cache and repeat-kv: (the 5-D repeat, the 4-D heads)."""
    return _repeated(_cached(_rotated(_heads("k", packed, 1), "k"), "key"))


def _key(packed: _PackedHeads) -> Pattern:
    """Kᵀ per head, from the key heads through rotary, cache and repeat-kv; or straight from
    the projection in one Transpose (eager BERT, GPT-J) or one sequence-first Transpose
    (dynamo)."""
    expanded, full = _key_heads(packed)
    swapped = _op("Transpose", full, perm=SWAPS_LAST_TWO)
    # dynamo: the last two axes swapped through a 3-D Reshape → Transpose → Reshape
    through_3d = _op("Reshape", _op("Transpose", _op("Reshape", expanded | full, any_value()),
                                    perm=(0, 2, 1)), any_value())
    direct = _op("Transpose", _split_heads("k"), perm=KEY_SPLIT)
    direct_seq = _op("Transpose", _op("Reshape", _source("k"), any_value()),
                     perm=SEQ_FIRST_KEY_SPLIT)
    transposed = (swapped | through_3d | direct.tag("k_layout", "batch-first")
                  | _op("Reshape", direct_seq, any_value()).tag("k_layout", "sequence-first")
                  | direct_seq.tag("k_layout", "sequence-first")).part("transpose")
    return _scaled(transposed, "k_scale").part("key", group=True)


def _value(packed: _PackedHeads) -> Pattern:
    _, full = _repeated(_cached(_heads("v", packed, 2), "value"))
    return _maybe("Cast", full).part("value", group=True)


def _reciprocal(value: Value) -> float:
    return 1.0 / as_float(value)


def _fused_product(packed: _PackedHeads) -> Pattern:
    """α·Q·Kᵀ as onnxruntime's FusedMatMul (its optimizer folds the scale, and a Transpose of
    K swapping the last two axes, into one node): Q times Kᵀ as the MatMul form reads it
    (no transposes), or times K per head (transB = 1); α bound as ``product_scale``."""
    _, full = _key_heads(packed)
    plain = _op("FusedMatMul", _query(packed), _key(packed), domain=MS_DOMAIN).where(
        _transposes((0, 0, 0, 0)), "no transposes", _transposes_found, needs_bindings=False)
    swapped = _op("FusedMatMul", _query(packed), full.part("key", group=True),
                  domain=MS_DOMAIN).where(_transposes((0, 1, 0, 0)),
                                          "transB = 1 and no other transpose",
                                          _transposes_found, needs_bindings=False)
    return (plain | swapped).bind("product_scale",
                                  lambda v: float(v.producer.attrs.get("alpha", 1.0)))


_FUSED_MATMUL_TRANSPOSES = ("transA", "transB", "transBatchA", "transBatchB")


def _transposes(wanted: tuple[int, ...]):
    def check(value: Value, _: dict) -> bool:
        attrs = value.producer.attrs
        return tuple(int(attrs.get(k, 0)) for k in _FUSED_MATMUL_TRANSPOSES) == wanted
    return check


def _transposes_found(value: Value, _: dict) -> str:
    attrs = value.producer.attrs
    return ", ".join(f"{k} = {int(attrs.get(k, 0))}" for k in _FUSED_MATMUL_TRANSPOSES)


def _scores(packed: _PackedHeads) -> Pattern:
    """Q·Kᵀ (cast to float32 in some float16 exports), with the scale on the product (Mul, or
    Div by √head_size) when it is not on the factors; or α·Q·Kᵀ in one FusedMatMul."""
    qk = _maybe("Cast", _op("MatMul", _query(packed), _key(packed)) | _fused_product(packed))
    return (_op("Mul", qk, scalar_const().bind("score_scale", as_float))
            | _op("Div", qk, scalar_const().bind("score_scale", _reciprocal)) | qk)


def _masked(scores: Pattern) -> Pattern:
    """The scores with the mask: added (a float mask, 0 where allowed), or selected
    (Where(allowed, scores, fill) or Where(masked, fill, scores)) — or no mask at all."""
    mask = any_value().bind("mask")
    fill = const().bind("mask_fill", as_float)
    return (_op("Add", scores, mask).tag("mask_kind", "additive")
            | _op("Where", mask, scores, fill).tag("mask_kind", "select")
            | _op("Where", mask, fill, scores).tag("mask_kind", "select_masked")
            | scores.tag("mask_kind", "none")).part("mask")


def _axis_and_rank(value: Value) -> tuple[int, int | None]:
    """The axis a Softmax works along (ONNX default since opset 13: -1) and its input rank."""
    node = value.producer
    return node.attrs.get("axis", -1), node.inputs[0].rank


def _along_last_axis(value: Value, _: dict) -> bool:
    axis, rank = _axis_and_rank(value)
    return axis == -1 or (rank is not None and axis == rank - 1)


def _axis_found(value: Value, _: dict) -> str:
    axis, rank = _axis_and_rank(value)
    return f"axis {axis} (rank {rank})"


def _probabilities(packed: _PackedHeads) -> Pattern:
    """Softmax over the last axis (Casts around it in float16 models computing it in float32),
    with SDPA's NaN guard after it (Where(IsNaN(p), 0, p): rows with every key masked)."""
    softmax = _op("Softmax", _maybe("Cast", _masked(_scores(packed)))).bind("softmax").where(
        _along_last_axis, "softmax over the last axis", _axis_found)
    guarded = _op("Where", _op("IsNaN", softmax), const(0.0), softmax).tag("nan_guard", 1)
    return _maybe("Cast", guarded | softmax).part("probabilities")


def _merged(context: Pattern) -> Pattern:
    """The heads merged back: [B, N, S, H] → [B, S, N, H] (after SDPA's no-op Reshape, or the
    5-D context of grouped-query broadcasting) or, sequence first, → [S, B, N, H] (4-D) or
    [B·N, S, H] → [S, B·N, H] (3-D); the root Reshape makes [B, S, N·H] or [S·B, N·H]."""
    return (_op("Transpose", _op("Reshape", context, any_value()) | context, perm=HEAD_SPLIT)
            | _op("Transpose", context, perm=SEQ_FIRST_MERGE)
            | _op("Transpose", context, perm=SEQ_FIRST_SPLIT)).part("head merge")


def _softmax_between_matmuls() -> Pattern:
    """The anchor of explanations: ·V of a Softmax over Q·Kᵀ, whatever surrounds them."""
    softmax = op("Softmax", any_value().where(_fed_by_matmul, "scores from a MatMul",
                                              needs_bindings=False))
    probs = op("Where", op("IsNaN", softmax), any_value(), softmax) | op("Cast", softmax) | softmax
    return op("MatMul", probs, any_value())


def _fed_by_matmul(value: Value, _: dict, hops: int = 4) -> bool:
    """Whether ``value`` comes from a MatMul through at most ``hops`` ops (scale, mask, Cast),
    along any of their run-time inputs."""
    frontier = [value]
    for _ in range(hops + 1):
        producers = [v.producer for v in frontier if v is not None and v.producer is not None]
        if any(node.op_type == "MatMul" for node in producers):
            return True
        frontier = [v for node in producers for v in node.inputs
                    if v is not None and not v.is_constant]
    return False


def attention() -> Pattern:
    """Scaled-dot-product attention, from the tensors the head split reads to the merged heads:
    head split (Reshape, Transpose) of Q, K, V → rotary on Q and K (recognize_rotary's
    RotaryEmbedding node) → KV cache (Concat of past and new K, V) → repeat-kv (grouped-query:
    Unsqueeze, Expand, Reshape) → Q·Kᵀ → scale → mask → Softmax over the last axis → ·V →
    head merge (Transpose, Reshape).

    Variants: the scale as a Mul or Div of the scores, or a Mul of Q and of Kᵀ by √scale each
    (SDPA), or absent (folded into the weights); Kᵀ as one Transpose, or a 3-D Reshape →
    Transpose → Reshape (dynamo); multi-query attention by broadcasting one K/V head; the mask
    added (Add), selected (Where, either way round) or absent; Casts around Q·Kᵀ, the Softmax
    and V (float16 models computing attention in float32); SDPA's NaN guard after the
    Softmax; batch-first and sequence-first layouts (nn.MultiheadAttention: 4-D or heads
    folded into the batch); GPT-NeoX's packed heads (one [B, N, S, 3·H] tensor cut into Q, K,
    V); rotary on [B, S, N, H] before the heads move forward (GPT-J); a norm on each head of
    Q and K before rotary, on [B, S, N, H] (Qwen3) or [B, N, S, H] (Gemma-3); Q·Kᵀ and its
    scale as onnxruntime's FusedMatMul (a model its optimizer wrote).  Cross-attention is the
    same pattern with K and V computed from another tensor than Q.  Reshape targets may be
    constants or computed at run time: they are not looked at.  Intermediates may be read
    outside the match (run-time shape arithmetic); the fusion absorbs those readers or
    declines.  Rotary written out as primitive ops is a
    near miss that says so.

    Why: a fused attention kernel keeps the [heads, seq, seq] scores and probabilities on chip
    instead of writing them to memory and reading them back for the scale, mask, Softmax and
    ·V (onnxruntime's Attention, MultiHeadAttention, GroupQueryAttention, FlashAttention).

    Bindings: ``q_in``, ``k_in``, ``v_in`` (the tensors split into heads; one tensor for
    GPT-NeoX-style packed heads, tagged ``heads_packed``), ``q_heads``,
    ``k_heads``, ``v_heads`` (the per-head tensors; ``k_heads`` is None when K is transposed
    in the same op that splits it), ``q_rotated``, ``k_rotated`` (the heads after rotary, or
    the heads), ``q_rotated_heads``, ``k_rotated_heads`` (the rotated [B, N, S, H] heads, or
    None), ``q_rotated_before_split``, ``k_rotated_before_split`` (the rotated [B, S, N, H]
    heads when rotary comes before they move forward, or None), ``q_grouped`` (1 when Q is
    reshaped for grouped-query broadcasting), ``q_layout``, ``k_layout``, ``v_layout``
    ("batch-first" or "sequence-first"), ``q_rotary``,
    ``k_rotary`` (1, or None without rotary), ``q_norm``, ``k_norm`` (1 when the heads are
    normalized before rotary: ``q_heads``/``k_heads`` are then the normalized heads),
    ``past_key``, ``past_value`` (the cache inputs,
    or None), ``key_cache``, ``value_cache`` (the present K, V per head: the cache's Concat,
    or the heads), ``repeat_kv`` (1 when K/V heads are repeated), ``mask`` (the value added,
    or the Where's condition; None without a mask), ``mask_kind`` ("additive", "select":
    Where(allowed, scores, fill), "select_masked": Where(masked, fill, scores), or "none"),
    ``mask_fill``, ``softmax`` (node), ``nan_guard`` (1 or None), ``q_scale``, ``k_scale``,
    ``score_scale``, ``product_scale`` (onnxruntime's FusedMatMul's alpha) (floats, None
    when absent; their product is the scale).  The merged
    output is the root node's output.
    """
    packed = _PackedHeads()
    probs = _probabilities(packed)
    context = _maybe("Cast", _op("MatMul", probs, _value(packed)))
    return _op("Reshape", _merged(context), any_value()).described_as(
        "Scaled-dot-product attention (multi-head, grouped- or multi-query, self or cross): "
        "head split, rotary, KV cache, repeat-kv, Q·Kᵀ, scale, mask, Softmax over the last "
        "axis, ·V and head merge, as eager, SDPA and dynamo exports write it."
    ).anchored(_softmax_between_matmuls())
