"""The GEMMs inside an attention operator (onnxruntime's Attention, MultiHeadAttention,
GroupQueryAttention; ONNX's Attention), in the systolic simulator's terms.

Each is (label, M, N, K, instances): the Q/K/V projection of onnxruntime's Attention
([B·S, in] · [in, q+k+v]), then per batch entry and head the scores Q·Kᵀ (S × L × head) and
the weighted sum softmax·V (S × head_v × L), B·heads independent GEMMs each.  The shapes are
those `contrib_flops` counts, so the simulator's MACs and the roofline's FLOPs agree.
"""

from __future__ import annotations

Gemm = tuple[str, int, int, int, int]    # label, M, N, K, instances


def _core(batch: int, heads: int, seq: int, total: int, head: int, v_head: int) -> list[Gemm]:
    pairs = batch * heads
    return [("scores Q·Kᵀ", seq, total, head, pairs),
            ("softmax·V", seq, v_head, total, pairs)]


def _at(items: list, index: int):
    return items[index] if index < len(items) else None


def ms_attention(attrs: dict, ins: list, outs: list) -> list[Gemm] | None:
    x, w = _at(ins, 0), _at(ins, 1)
    heads = int(attrs.get("num_heads", 0))
    if x is None or w is None or len(x) != 3 or not heads:
        return None
    batch, seq, hidden_in = x
    sizes = attrs.get("qkv_hidden_sizes") or (w[-1] // 3,) * 3
    q_hidden, _, v_hidden = (int(s) for s in sizes)
    past = _at(ins, 4)
    total = seq + (past[3] if past is not None and len(past) == 5 else 0)
    return [("Q/K/V projection", batch * seq, w[-1], hidden_in, 1),
            *_core(batch, heads, seq, total, q_hidden // heads, v_hidden // heads)]


def _sizes_from_output(attrs: dict, ins: list, outs: list, heads_attr: str
                       ) -> tuple[int, int, int, int, int] | None:
    """(batch, heads, seq, total, head) of attention given Q [B, S, hidden] and present K
    [B, kv_heads, total, head] or K [B, L, ...]."""
    query, out = _at(ins, 0), _at(outs, 0)
    heads = int(attrs.get(heads_attr, 0))
    if query is None or out is None or not heads or len(query) < 3:
        return None
    batch, seq = query[0], query[1]
    head = out[-1] // heads
    present = _at(outs, 1)
    if present is not None and len(present) == 4:
        total = present[2]
    else:
        key = _at(ins, 1)
        total = key[1] if key is not None and len(key) in (3, 5) else \
            key[2] if key is not None and len(key) == 4 else seq
    return batch, heads, seq, total, head


def multi_head_attention(attrs: dict, ins: list, outs: list) -> list[Gemm] | None:
    sizes = _sizes_from_output(attrs, ins, outs, "num_heads")
    return None if sizes is None else _core(*sizes, sizes[-1])


def group_query_attention(attrs: dict, ins: list, outs: list) -> list[Gemm] | None:
    sizes = _sizes_from_output(attrs, ins, outs, "num_heads")
    return None if sizes is None else _core(*sizes, sizes[-1])


def onnx_attention_sizes(attrs: dict, ins: list) -> tuple[int, ...] | None:
    """ONNX's Attention, Q, K, V already projected ([B, heads, S, head] or [B, S, hidden]):
    (batch, heads, seq, total keys with the past, head, value head), or None if unknown."""
    q, k, v = _at(ins, 0), _at(ins, 1), _at(ins, 2)
    if q is None or k is None or v is None:
        return None
    if len(q) == 4:
        batch, heads, seq, head = q
        total, v_head = k[2], v[3]
    else:
        heads, kv_heads = int(attrs.get("q_num_heads", 0)), int(attrs.get("kv_num_heads", 0))
        if not heads or not kv_heads:
            return None
        batch, seq, head = q[0], q[1], q[2] // heads
        total, v_head = k[1], v[2] // kv_heads
    past = _at(ins, 4)
    total += past[2] if past is not None and len(past) == 4 else 0
    return batch, heads, seq, total, head, v_head


def onnx_attention(attrs: dict, ins: list, outs: list) -> list[Gemm] | None:
    sizes = onnx_attention_sizes(attrs, ins)
    return None if sizes is None else _core(*sizes)


MAPPERS = {
    ("com.microsoft", "Attention"): ms_attention,
    ("com.microsoft", "MultiHeadAttention"): multi_head_attention,
    ("com.microsoft", "GroupQueryAttention"): group_query_attention,
    ("", "Attention"): onnx_attention,
}
