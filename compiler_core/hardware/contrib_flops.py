"""FLOPs of onnxruntime's operators and of ONNX's newer composite ones (opset 23 Attention).

The conventions are `op_flops`'s: a multiply-accumulate is 2 ops, an element-wise step 1 op
per output element.  An operator that fuses several steps counts each, the way its decomposed
form is counted, so a graph and its onnxruntime-optimized twin come out alike:

- attention: Q·Kᵀ (2·B·heads·S·L·head), the scale, the mask or bias where one is given
  (1 per score each), softmax (5 per score), softmax·V (2·B·heads·S·L·head_v); onnxruntime's
  Attention adds its Q/K/V projection (and bias); rotary inside it 3 per rotated element;
- rotary embedding: x·cos + rotate(x)·sin = 3 ops per rotated element;
- weight-only and integer matmuls: 2·M·N·K for the product (MatMulNBits unpacks its weights
  block by block as it goes: no extra pass over them), plus what the kernel does per element
  around it: quantizing A (DynamicQuantizeMatMul, 4 per element as DynamicQuantizeLinear),
  scaling the int32 result to float (1 per output), the bias (1 per output);
- quantized element-wise ops and pooling (QLinearAdd, QLinearGlobalAveragePool, ...) count
  as their float op: the scales are folded into the kernel, as `quantized_io` prices QDQ.

Keys are (domain, op): ONNX's Attention and onnxruntime's have one name and other inputs.
"""

from __future__ import annotations

from math import prod
from typing import Callable

from .attention_gemms import onnx_attention_sizes
from .flop_rules import Rule, item_at, moves_data, numel

MS = "com.microsoft"
NCHWC = "com.microsoft.nchwc"
# Ops that multiply int8 operands (they run at a target's int8 peak).
INT8_OPS = frozenset({
    (MS, "DynamicQuantizeMatMul"), (MS, "MatMulIntegerToFloat"), (MS, "QGemm"),
    (MS, "QLinearConv"), (MS, "QLinearAdd"), (MS, "QLinearMul"),
    (MS, "QLinearGlobalAveragePool"), (MS, "QLinearAveragePool"), (MS, "QLinearSigmoid"),
    (MS, "QLinearLeakyRelu"), (MS, "QLinearSoftmax"), (MS, "QLinearMatMul"),
})
_SOFTMAX = 5


def _per_output(steps: int, optional_extra: int | None = None) -> Rule:
    """``steps`` ops per output element, one more when input ``optional_extra`` is given."""
    def rule(attrs: dict, ins: list, outs: list) -> int | None:
        out = numel(item_at(outs, 0))
        if out is None:
            return None
        extra = optional_extra is not None and item_at(ins, optional_extra) is not None
        return out * (steps + extra)
    return rule


def attention_core(batch: int, heads: int, seq: int, total: int, head: int, v_head: int,
                   masks: int = 0) -> int:
    """Scores, scale, ``masks`` additions per score, softmax and the weighted sum of V."""
    scores = batch * heads * seq * total
    return 2 * scores * head + scores * (1 + masks + _SOFTMAX) + 2 * scores * v_head


def _ms_attention(attrs: dict, ins: list, outs: list) -> int | None:
    """input [B, S, in] · weights [in, q+k+v] (+ bias), then attention over past + S keys."""
    x, w, out = item_at(ins, 0), item_at(ins, 1), item_at(outs, 0)
    heads = int(attrs.get("num_heads", 0))
    if x is None or w is None or out is None or len(x) != 3 or not heads:
        return None
    batch, seq, hidden_in = x
    sizes = attrs.get("qkv_hidden_sizes") or (w[-1] // 3,) * 3
    q_hidden, _, v_hidden = (int(s) for s in sizes)
    projection = 2 * batch * seq * hidden_in * w[-1]
    projection += batch * seq * w[-1] if item_at(ins, 2) is not None else 0
    past = item_at(ins, 4)
    total = seq + (past[3] if past is not None and len(past) == 5 else 0)
    masks = sum(item_at(ins, i) is not None for i in (3, 5))
    return projection + attention_core(batch, heads, seq, total, q_hidden // heads,
                                       v_hidden // heads, masks)


def _kv(shape, heads: int):
    """(length, head size) of K or V given as [B, L, hidden], [B, heads, L, head] or packed."""
    if shape is None:
        return None, None
    if len(shape) == 3:
        return shape[1], shape[2] // heads
    if len(shape) == 4:
        return shape[2], shape[3]
    if len(shape) == 5:          # [B, L, heads, 2, head]
        return shape[1], shape[4]
    return None, None


def _multi_head_attention(attrs: dict, ins: list, outs: list) -> int | None:
    query, out = item_at(ins, 0), item_at(outs, 0)
    heads = int(attrs.get("num_heads", 0))
    if query is None or out is None or not heads:
        return None
    batch, seq = query[0], query[1]
    if len(query) == 5:          # packed Q/K/V [B, S, heads, 3, head]
        length, head, v_head = seq, query[4], query[4]
    else:
        length, head = _kv(item_at(ins, 1), heads)
        _, v_head = _kv(item_at(ins, 2), heads)
        if item_at(ins, 1) is not None and len(item_at(ins, 1)) == 5:
            v_head = head
        head = head or query[-1] // heads
        v_head = v_head or out[-1] // heads
        length = length or seq
    past = item_at(ins, 6)
    total = length + (past[2] if past is not None and len(past) == 4 else 0)
    bias = item_at(ins, 3)
    flops = numel(bias) * batch * seq if bias is not None else 0
    masks = sum(item_at(ins, i) is not None for i in (4, 5))
    return flops + attention_core(batch, heads, seq, total, head, v_head, masks)


def _group_query_attention(attrs: dict, ins: list, outs: list) -> int | None:
    """Causal attention with kv_num_heads K/V heads shared by groups of Q heads; rotary
    (do_rotary) on Q and K."""
    query, out = item_at(ins, 0), item_at(outs, 0)
    heads, kv_heads = int(attrs.get("num_heads", 0)), int(attrs.get("kv_num_heads", 0))
    if query is None or out is None or len(query) != 3 or not heads:
        return None
    batch, seq = query[0], query[1]
    head = out[-1] // heads
    present = item_at(outs, 1)
    past = item_at(ins, 3)
    if present is not None and len(present) == 4:
        total = present[2]
    else:
        total = seq + (past[2] if past is not None and len(past) == 4 else 0)
    rotary = 3 * batch * seq * (heads + kv_heads) * head if attrs.get("do_rotary") else 0
    return rotary + attention_core(batch, heads, seq, total, head, head, masks=1)


def _onnx_attention(attrs: dict, ins: list, outs: list) -> int | None:
    """ONNX's Attention: Q, K, V already projected, [B, heads, S, head] or [B, S, hidden]."""
    sizes = onnx_attention_sizes(attrs, ins)
    if sizes is None:
        return None
    batch, heads, seq, total, head, v_head = sizes
    masks = int(item_at(ins, 3) is not None or bool(attrs.get("is_causal", 0)))
    softcap = 3 if float(attrs.get("softcap", 0.0) or 0.0) > 0 else 0
    return attention_core(batch, heads, seq, total, head, v_head, masks + softcap)


def _rotary(head_of: Callable[[dict, tuple], int | None]) -> Rule:
    """3 ops per rotated element; a partial rotary (rotary_embedding_dim < head size) rotates
    only that share of each head."""
    def rule(attrs: dict, ins: list, outs: list) -> int | None:
        out = item_at(outs, 0)
        if out is None:
            return None
        rotated = numel(out)
        dim, head = int(attrs.get("rotary_embedding_dim", 0) or 0), head_of(attrs, out)
        if dim and head and dim < head:
            rotated = rotated * dim // head
        return 3 * rotated
    return rule


def _head_size(attrs: dict, shape: tuple) -> int | None:
    """The head size of a rotary input: [B, heads, S, head] or [B, S, heads * head]."""
    if len(shape) == 4:
        return shape[-1]
    heads = int(attrs.get("num_heads", 0) or 0)
    return shape[-1] // heads if heads else None


def _matmul_k(a, b, trans_a: bool = False) -> int | None:
    if not a:
        return None
    return a[-2] if trans_a and len(a) >= 2 else a[-1]


def _int_matmul(extra_per_out: int, a_steps: int = 0, bias_index: int | None = None) -> Rule:
    """2·M·N·K, ``a_steps`` ops per element of A, ``extra_per_out`` per output element, and
    the bias where input ``bias_index`` is given."""
    def rule(attrs: dict, ins: list, outs: list) -> int | None:
        a, out = item_at(ins, 0), numel(item_at(outs, 0))
        k = _matmul_k(a, item_at(ins, 1))
        if k is None or out is None:
            return None
        bias = bias_index is not None and item_at(ins, bias_index) is not None
        return 2 * out * k + a_steps * numel(a) + out * (extra_per_out + bias)
    return rule


def _matmul_nbits(attrs: dict, ins: list, outs: list) -> int | None:
    out, k = numel(item_at(outs, 0)), attrs.get("K")
    if out is None or not k:
        return None
    return 2 * out * int(k) + (out if item_at(ins, 5) is not None else 0)


def _fused_matmul(attrs: dict, ins: list, outs: list) -> int | None:
    out = numel(item_at(outs, 0))
    k = _matmul_k(item_at(ins, 0), item_at(ins, 1), bool(attrs.get("transA", 0)))
    if out is None or k is None:
        return None
    return 2 * out * k + (out if float(attrs.get("alpha", 1.0)) != 1.0 else 0)


def _gemm_like(a_index: int, bias_index: int, activation: bool) -> Rule:
    """Gemm (transA picks K), the bias C, and an activation epilogue (1 per output)."""
    def rule(attrs: dict, ins: list, outs: list) -> int | None:
        a, out = item_at(ins, a_index), numel(item_at(outs, 0))
        if a is None or out is None or len(a) != 2:
            return None
        k = a[0] if attrs.get("transA", 0) else a[1]
        epilogue = (item_at(ins, bias_index) is not None) + (activation and bool(
            attrs.get("activation")))
        return 2 * out * k + out * epilogue
    return rule


def _conv_like(weight_index: int, extra_inputs: tuple[int, ...], activation: bool) -> Rule:
    """Each output does prod(weight[1:]) MACs; a bias or a residual Z adds 1 per output, an
    activation epilogue 1 more."""
    def rule(attrs: dict, ins: list, outs: list) -> int | None:
        weight, out = item_at(ins, weight_index), numel(item_at(outs, 0))
        if weight is None or out is None:
            return None
        epilogue = sum(item_at(ins, i) is not None for i in extra_inputs)
        epilogue += activation and bool(attrs.get("activation"))
        return 2 * out * int(prod(weight[1:])) + out * epilogue
    return rule


def _global_pool(attrs: dict, ins: list, outs: list) -> int | None:
    return numel(item_at(ins, 0))


def _pool(attrs: dict, ins: list, outs: list) -> int | None:
    out, kernel = numel(item_at(outs, 0)), attrs.get("kernel_shape")
    return None if out is None or not kernel else out * int(prod(kernel))


def _skip_norm(steps: int, bias_index: int) -> Rule:
    return _per_output(steps, bias_index)


RULES: dict[tuple[str, str], Rule] = {
    (MS, "Attention"): _ms_attention,
    (MS, "MultiHeadAttention"): _multi_head_attention,
    (MS, "GroupQueryAttention"): _group_query_attention,
    ("", "Attention"): _onnx_attention,
    (MS, "RotaryEmbedding"): _rotary(_head_size),
    ("", "RotaryEmbedding"): _rotary(_head_size),
    # LayerNorm 7 per element, plus the skip add (and the bias); RMS norm 5
    (MS, "SkipLayerNormalization"): _skip_norm(8, 4),
    (MS, "SkipSimplifiedLayerNormalization"): _skip_norm(6, 3),
    ("", "SimplifiedLayerNormalization"): _per_output(5),
    # tanh GELU 8, erf GELU 5 (+ the bias add); x·sigmoid(αx) 3
    (MS, "FastGelu"): _per_output(8, 1),
    (MS, "BiasGelu"): _per_output(6),
    (MS, "Gelu"): _per_output(5),
    (MS, "QuickGelu"): _per_output(3),
    (MS, "BiasAdd"): _per_output(2),
    (MS, "FusedMatMul"): _fused_matmul,
    (MS, "FusedGemm"): _gemm_like(0, 2, activation=True),
    (MS, "QGemm"): _gemm_like(0, 6, activation=False),
    (MS, "FusedConv"): _conv_like(1, (2, 3), activation=True),
    (MS, "NhwcConv"): _conv_like(1, (2,), activation=False),
    (MS, "QLinearConv"): _conv_like(3, (8,), activation=False),
    (MS, "MatMulNBits"): _matmul_nbits,
    (MS, "DynamicQuantizeMatMul"): _int_matmul(1, a_steps=4, bias_index=4),
    (MS, "MatMulIntegerToFloat"): _int_matmul(1, bias_index=6),
    (MS, "QLinearAdd"): _per_output(1),
    (MS, "QLinearMul"): _per_output(1),
    (MS, "QLinearSigmoid"): _per_output(1),
    (MS, "QLinearLeakyRelu"): _per_output(1),
    (MS, "QLinearSoftmax"): _per_output(_SOFTMAX),
    (MS, "QLinearGlobalAveragePool"): _global_pool,
    (MS, "QLinearAveragePool"): _pool,
    (MS, "NhwcMaxPool"): _pool,
    # the blocked layout (`contrib_shapes`): Conv with bias, a residual Sum and an activation
    (NCHWC, "Conv"): _conv_like(1, (2, 3), activation=True),
    (NCHWC, "MaxPool"): _pool,
    (NCHWC, "AveragePool"): _pool,
    (NCHWC, "GlobalMaxPool"): _global_pool,
    (NCHWC, "GlobalAveragePool"): _global_pool,
    (NCHWC, "ReorderInput"): moves_data,
    (NCHWC, "ReorderOutput"): moves_data,
    (NCHWC, "Upsample"): moves_data,
    (MS, "Tokenizer"): moves_data,
}
