"""Attention blocks as today's exporters write them, built with onnx.helper for the tests.

``decoder_attention`` is an LLM decoder's self-attention (grouped- or multi-query, rotary,
KV cache, causal / sliding-window / padding masks, float32 or float16, any opset from 14);
``cross_attention`` reads K and V from an encoder output; ``sequence_first_attention`` is
PyTorch's nn.MultiheadAttention (one packed in-projection, [seq, batch, hidden]);
``conv1d_attention`` is GPT-2 as the dynamo exporter writes it (projections as Gemm on rows).
Rotary is written out, as exporters write it; the recognize_rotary pass makes it the one
RotaryEmbedding node the attention pattern accepts.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from compiler_core.ir import Graph
from passes_helpers import build, tensor

F, F16, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
BIG = np.iinfo(np.int64).max


class _Builder:
    """Nodes, initializers and graph inputs of one test model."""

    def __init__(self, dtype: int, seed: int = 0):
        self.dtype, self.np_dtype = dtype, np.float16 if dtype == F16 else np.float32
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.inputs, self.outputs = [], {}, [], []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, data, hint: str = "c") -> str:
        name = self.name(hint)
        self.inits[name] = np.asarray(data)
        return name

    def floats(self, data, hint: str = "c") -> str:
        return self.const(np.asarray(data, dtype=self.np_dtype), hint)

    def ints(self, values, hint: str = "shape") -> str:
        return self.const(np.asarray(values, dtype=np.int64), hint)

    def add(self, op_type: str, inputs: list, hint: str | None = None, **attrs) -> str:
        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def linear(self, x: str, width_in: int, width_out: int, hint: str) -> str:
        weight = self.floats(self.rng.standard_normal((width_in, width_out)) / width_in ** 0.5,
                             f"{hint}_w")
        bias = self.floats(self.rng.standard_normal(width_out) * 0.1, f"{hint}_b")
        return self.add("Add", [self.add("MatMul", [x, weight]), bias], hint)

    def heads(self, projected: str, head: int, rotary: tuple[str, str] | None = None,
              perm: tuple[int, ...] = (0, 2, 1, 3), norm: str | None = None,
              width: int = 0) -> str:
        """[B, S, N·H] → [B, N, S, H] (or [B, N, H, S] with ``perm`` (0, 2, 3, 1)); with
        ``rotary`` (cos, sin) the [B, S, N, H] heads are rotated before they move forward
        (GPT-J style); ``norm`` an RMSNorm on the projection ("projection", OLMo2: ``width``
        features), on each head before the heads move forward ("before_split", Qwen3) or
        after ("after_split", Gemma-3)."""
        if norm == "projection":
            projected = self.rms_norm(projected, width)
        split = self.add("Reshape", [projected, self.ints([0, 0, -1, head])])
        if norm == "before_split":
            split = self.rms_norm(split, head)
        if rotary is not None:
            split = self.rotary(split, head, *rotary)
        moved = self.add("Transpose", [split], perm=list(perm))
        return self.rms_norm(moved, head) if norm == "after_split" else moved

    def rms_norm(self, x: str, width: int) -> str:
        """x / √(mean(x²) + ε) · w over the last axis (w around 1, as trained norms are)."""
        mean = self.add("ReduceMean", [self.add("Mul", [x, x])], axes=[-1], keepdims=1)
        std = self.add("Sqrt", [self.add("Add", [mean, self.floats(1e-6)])])
        weight = self.floats(1 + 0.1 * self.rng.standard_normal(width), "norm_w")
        return self.add("Mul", [self.add("Div", [x, std]), weight], "normed")

    def partial_rotary(self, x: str, head: int, cos: str, sin: str, rotated: int) -> str:
        """The first ``rotated`` head dims rotated, the rest concatenated back (GPT-NeoX; Phi-3
        writes it so even when every dim is rotated and the rest is empty)."""
        axis = self.ints([3])
        first = self.add("Slice", [x, self.ints([0]), self.ints([rotated]), axis])
        rest = self.add("Slice", [x, self.ints([rotated]), self.ints([BIG]), axis])
        return self.add("Concat", [self.rotary(first, rotated, cos, sin), rest], axis=-1)

    def rotary(self, x: str, head: int, cos: str, sin: str) -> str:
        """x·cos + rotate_half(x)·sin (the half-split form, as HF Llama writes it)."""
        half = head // 2
        axis = self.ints([3])
        first = self.add("Slice", [x, self.ints([0]), self.ints([half]), axis])
        second = self.add("Slice", [x, self.ints([half]), self.ints([BIG]), axis])
        rotated = self.add("Concat", [self.add("Neg", [second]), first], axis=-1)
        return self.add("Add", [self.add("Mul", [x, cos]), self.add("Mul", [rotated, sin])],
                        "rotary")

    def input(self, name: str, elem_type: int, shape) -> str:
        self.inputs.append(tensor(name, elem_type, shape))
        return name

    def output(self, value: str, name: str, elem_type: int, shape) -> None:
        self.nodes.append(helper.make_node("Identity", [value], [name], name=f"{name}_out"))
        self.outputs.append(tensor(name, elem_type, shape))

    def graph(self, opset: int) -> Graph:
        return build(self.nodes, self.inputs, self.outputs, self.inits, opset=opset)


def decoder_attention(*, heads: int = 4, kv_heads: int = 2, head: int = 8, past: bool = False,
                      rotary: bool | str = False, mask: str = "causal", fill: float = -np.inf,
                      window: int = 2, nan_guard: bool = False, grouped_query: bool = False,
                      dtype: int = F, opset: int = 17, seq: int | str = "seq",
                      packed_heads: bool = False, key_split_transposed: bool = False,
                      upcast: str | None = None, qk_norm: str | None = None) -> Graph:
    """One decoder self-attention block: separate Q/K/V projections of ``x`` [batch, seq,
    hidden], head split, rotary (written out, for recognize_rotary; applied
    to [B, N, S, H], or to [B, S, N, H] before the heads move forward when ``rotary`` is
    "before_split"; only the first half of each head with "partial"; every dim, then
    concatenated with an empty rest, with "empty_rest"), KV cache
    (``past``: inputs past_key/past_value [batch, kv_heads, past, head], outputs
    present_key/present_value), repeat-kv (Unsqueeze at axis 2, Expand, Reshape) or, with
    ``grouped_query``, Q reshaped to [B, N_kv, rep·S, H] (one query token); with
    ``packed_heads`` one projection viewed as [B, S, N, 3·H] and split after the heads move
    forward (GPT-NeoX; as many K/V heads as Q heads); with ``key_split_transposed`` Kᵀ made
    in the Transpose that moves the heads forward (eager BERT, GPT-J), Q·Kᵀ scaled,
    ``mask`` ("causal", "window", "trilu" (SDPA's is_causal, built from Q's and K's shapes),
    "padding" (an attention_mask input), "additive" (a float mask input), "select",
    "select_masked", "none"), Softmax, NaN guard, ·V, head merge, output projection.  A
    float16 block may compute part of it in float32 (``upcast``): "softmax" casts the masked
    scores up and the probabilities back (HF's eager attention), "context" casts the scores
    and V up, masks in float32 and casts the merged heads back (PyTorch's math SDPA as the
    TorchScript exporter writes it).  ``qk_norm`` normalizes Q and K (RMSNorm) where Gemma-3
    ("after_split"), Qwen3 ("before_split") or OLMo2 ("projection") do, before rotary."""
    b = _Builder(dtype)
    hidden, rep = heads * head, heads // kv_heads
    x = b.input("x", dtype, ["batch", seq, hidden])
    early = None
    if rotary == "before_split":
        early = tuple(b.input(n, dtype, [1, seq, 1, head]) for n in ("cos", "sin"))
    if packed_heads:
        packed = b.add("Reshape", [b.linear(x, hidden, 3 * hidden, "qkv_proj"),
                                   b.ints([0, 0, heads, 3 * head])])
        moved = b.add("Transpose", [packed], perm=[0, 2, 1, 3])
        q, k, v = (f"qkv_{i}" for i in range(3))
        b.nodes.append(helper.make_node("Split", [moved, b.ints([head] * 3)], [q, k, v],
                                        axis=-1, name="split_heads"))
    else:
        q = b.heads(b.linear(x, hidden, heads * head, "q_proj"), head, early, norm=qk_norm,
                    width=heads * head)
        k = b.heads(b.linear(x, hidden, kv_heads * head, "k_proj"), head, early,
                    (0, 2, 3, 1) if key_split_transposed else (0, 2, 1, 3), norm=qk_norm,
                    width=kv_heads * head)
        v = b.heads(b.linear(x, hidden, kv_heads * head, "v_proj"), head)
    if rotary and early is None:
        width = head // 2 if rotary == "partial" else head
        cos, sin = (b.input(n, dtype, [1, 1, seq, width]) for n in ("cos", "sin"))
        if rotary in ("partial", "empty_rest"):
            q, k = (b.partial_rotary(t, head, cos, sin, width) for t in (q, k))
        else:
            q, k = b.rotary(q, head, cos, sin), b.rotary(k, head, cos, sin)
    if past:
        past_k, past_v = (b.input(n, dtype, ["batch", kv_heads, "past", head])
                          for n in ("past_key", "past_value"))
        k = b.add("Concat", [past_k, k], "present_k", axis=2)
        v = b.add("Concat", [past_v, v], "present_v", axis=2)
    cache_k, cache_v = k, v
    if grouped_query:
        q = b.add("Reshape", [q, b.ints([0, kv_heads, -1, head])])
    elif rep > 1:
        k, v = (b.add("Reshape", [b.add("Expand", [b.add("Unsqueeze", [t, b.ints([2])]),
                                                   b.ints([1, 1, rep, 1, 1])]),
                                  b.ints([0, heads, -1, head])]) for t in (k, v))
    keys = k if key_split_transposed else b.add("Transpose", [k], perm=[0, 1, 3, 2])
    scores = b.add("MatMul", [q, keys], "qk")
    if upcast == "context":  # from here on in float32: scores, mask, softmax, ·V
        scores, v = (b.add("Cast", [t], to=F) for t in (scores, v))
        b.dtype, b.np_dtype = F, np.float32
    scores = b.add("Mul", [scores, b.floats(head ** -0.5)], "scaled")
    total = "total" if past else seq
    scores = _apply_mask(b, mask, scores, q, k, x, (seq, total), past, fill, window)
    if upcast == "softmax":
        scores = b.add("Cast", [scores], to=F)
    probs = b.add("Softmax", [scores], "softmax", axis=-1)
    if nan_guard:
        probs = b.add("Where", [b.add("IsNaN", [probs]), b.floats(0.0), probs])
    if upcast == "softmax":
        probs = b.add("Cast", [probs], to=F16)
    context = b.add("MatMul", [probs, v], "context")
    if grouped_query:
        context = b.add("Reshape", [context, b.ints([0, heads, -1, head])])
    merged = b.add("Reshape", [b.add("Transpose", [context], perm=[0, 2, 1, 3]),
                               b.ints([0, 0, -1])], "merge")
    if upcast == "context":
        merged = b.add("Cast", [merged], to=F16)
        b.dtype, b.np_dtype = F16, np.float16
    out = b.add("MatMul", [merged, b.floats(b.rng.standard_normal((hidden, hidden)) / 8)])
    b.output(out, "y", dtype, ["batch", seq, hidden])
    if past:
        for value, name in ((cache_k, "present_key"), (cache_v, "present_value")):
            b.outputs.append(tensor(value, dtype, ["batch", kv_heads, "total", head]))
    return b.graph(opset)


def _apply_mask(b: _Builder, mask: str, scores: str, q: str, k: str, x: str, dims: tuple,
                past: bool, fill: float, window: int) -> str:
    seq, total = dims
    if mask == "none":
        return scores
    if mask == "additive":
        return b.add("Add", [scores, b.input("mask", b.dtype, ["batch", 1, seq, total])],
                     "masked")
    if mask == "padding":  # keys where attention_mask is 0 are hidden: [B, 1, 1, T]
        keep = b.add("Cast", [b.input("attention_mask", I64, ["batch", total])],
                     to=TensorProto.BOOL)
        hide = b.add("Where", [keep, b.floats(0.0), b.floats(fill)])
        return b.add("Add", [scores, b.add("Unsqueeze", [hide, b.ints([1, 2])])], "masked")
    if mask == "trilu":  # SDPA is_causal: ones(L, S).tril() from Q's and K's shapes
        size = b.add("Concat", [b.add("Slice", [b.add("Shape", [t]), b.ints([-2]),
                                                b.ints([-1])]) for t in (q, k)], axis=0)
        ones = b.add("Expand", [b.floats(1.0), size])
        tril = b.add("Trilu", [ones], upper=0)
        bias = b.add("Where", [b.add("Equal", [tril, b.floats(0.0)]), b.floats(-np.inf),
                               b.floats(0.0)])
        return b.add("Add", [scores, bias], "masked")
    allowed = _causal_positions(b, x, past, window if mask == "window" else 0)
    if mask == "select":
        return b.add("Where", [allowed, scores, b.floats(fill)], "masked")
    if mask == "select_masked":
        return b.add("Where", [b.add("Not", [allowed]), b.floats(fill), scores], "masked")
    bias = b.add("Where", [allowed, b.floats(0.0), b.floats(fill)], "causal_bias")
    return b.add("Add", [scores, bias], "masked")


def _causal_positions(b: _Builder, x: str, past: bool, window: int) -> str:
    """Which keys each query may see, from run-time positions (key ≤ query; with a window,
    also key > query − window), as HF's mask functions compute it: [S, T] booleans."""
    seq = b.add("Squeeze", [b.add("Slice", [b.add("Shape", [x]), b.ints([1]), b.ints([2])])])
    start = b.const(np.array(0, dtype=np.int64))
    if past:
        start = b.add("Squeeze", [b.add("Slice", [b.add("Shape", ["past_key"]),
                                                  b.ints([2]), b.ints([3])])])
    total = b.add("Add", [start, seq])
    one = b.const(np.array(1, dtype=np.int64))
    query = b.add("Unsqueeze", [b.add("Range", [start, total, one]), b.ints([1])])
    key = b.add("Unsqueeze", [b.add("Range", [b.const(np.array(0, dtype=np.int64)), total, one]),
                              b.ints([0])])
    allowed = b.add("LessOrEqual", [key, query])
    if window:
        lowest = b.add("Sub", [query, b.const(np.array(window, dtype=np.int64))])
        allowed = b.add("And", [allowed, b.add("Greater", [key, lowest])])
    return allowed


def cross_attention(*, layers: int = 1, heads: int = 4, head: int = 8, opset: int = 17) -> Graph:
    """``layers`` decoder cross-attention blocks over one encoder output ``memory`` [batch,
    mem, hidden]: Q from ``x``, K and V from ``memory`` (horizontal fusion packs the K/V
    projections of every layer into one), an additive key-padding mask."""
    b = _Builder(F)
    hidden = heads * head
    x = b.input("x", F, ["batch", "seq", hidden])
    memory = b.input("memory", F, ["batch", "mem", hidden])
    mask = b.input("mask", F, ["batch", 1, 1, "mem"])
    for _ in range(layers):
        q = b.heads(b.linear(x, hidden, hidden, "q_proj"), head)
        k = b.heads(b.linear(memory, hidden, hidden, "k_proj"), head)
        v = b.heads(b.linear(memory, hidden, hidden, "v_proj"), head)
        scores = b.add("Mul", [b.add("MatMul", [q, b.add("Transpose", [k], perm=[0, 1, 3, 2])]),
                               b.floats(head ** -0.5)])
        probs = b.add("Softmax", [b.add("Add", [scores, mask])], axis=-1)
        context = b.add("MatMul", [probs, v])
        merged = b.add("Reshape", [b.add("Transpose", [context], perm=[0, 2, 1, 3]),
                                   b.ints([0, 0, -1])], "merge")
        x = b.add("Add", [x, merged], "residual")
    b.output(x, "y", F, ["batch", "seq", hidden])
    return b.graph(opset)


def sequence_first_attention(*, heads: int = 4, head: int = 8, four_d: bool = True,
                             opset: int = 17) -> Graph:
    """nn.MultiheadAttention as the exporters write it: src [seq, batch, hidden] → one packed
    in-projection → [S, B, 3, E] → Unsqueeze/Transpose/Squeeze → Gather Q, K, V → [S, B·N, H]
    → [B·N, S, H] (then [B, N, S, H] when ``four_d``; else the 3-D form of need_weights
    exports) → attention → [S, B, N, H] → [S·B, E] → out-projection Gemm → [S, B, E]."""
    b = _Builder(F)
    hidden = heads * head
    src = b.input("src", F, ["seq", "batch", hidden])
    packed = b.linear(src, hidden, 3 * hidden, "in_proj")
    packed = b.add("Reshape", [packed, b.ints([0, 0, 3, hidden])])
    packed = b.add("Transpose", [b.add("Unsqueeze", [packed, b.ints([0])])], perm=[3, 1, 2, 0, 4])
    packed = b.add("Squeeze", [packed, b.ints([3])])
    parts = []
    for index in range(3):
        part = b.add("Gather", [packed, b.const(np.array(index, dtype=np.int64))], axis=0)
        part = b.add("Transpose", [b.add("Reshape", [part, b.ints([0, -1, head])])],
                     perm=[1, 0, 2])
        if four_d:
            seq = b.add("Slice", [b.add("Shape", [src]), b.ints([0]), b.ints([1])])
            target = b.add("Concat", [b.ints([-1, heads]), seq, b.ints([head])], axis=0)
            part = b.add("Reshape", [part, target])
        parts.append(part)
    q, k, v = parts
    root = b.floats(head ** -0.25)
    q = b.add("Mul", [q, root])
    k = b.add("Mul", [b.add("Transpose", [k], perm=[0, 1, 3, 2] if four_d else [0, 2, 1]), root])
    probs = b.add("Softmax", [b.add("MatMul", [q, k])], axis=-1)
    context = b.add("MatMul", [probs, v])
    merged = b.add("Transpose", [context], perm=[2, 0, 1, 3] if four_d else [1, 0, 2])
    flat = b.add("Reshape", [merged, b.ints([-1, hidden])], "merge")
    out = b.add("Gemm", [flat, b.floats(b.rng.standard_normal((hidden, hidden)) / 8),
                         b.floats(np.zeros(hidden))], transB=1)
    y = b.add("Reshape", [out, b.add("Shape", [src])])
    b.output(y, "y", F, ["seq", "batch", hidden])
    return b.graph(opset)


def conv1d_attention(*, heads: int = 2, head: int = 8, opset: int = 18) -> Graph:
    """GPT-2's attention as the dynamo exporter writes it: x [B, S, E] → rows [B·S, E] → one
    Gemm making Q, K and V → [B, S, 3E] → Split → heads → attention → [B, S, N, H] → rows
    [B·S, E] (the block's output is a matrix) → the out-projection Gemm → [B, S, E]."""
    b = _Builder(F)
    hidden = heads * head
    x = b.input("x", F, ["batch", "seq", hidden])
    rows = b.add("Reshape", [x, b.ints([-1, hidden])])
    packed = b.add("Gemm", [rows, b.floats(b.rng.standard_normal((hidden, 3 * hidden)) / 4),
                            b.floats(b.rng.standard_normal(3 * hidden) * 0.1)])
    batch_seq = b.add("Slice", [b.add("Shape", [x]), b.ints([0]), b.ints([2])])
    packed = b.add("Reshape", [packed, b.add("Concat", [batch_seq, b.ints([3 * hidden])],
                                             axis=0)])
    q, k, v = (f"split_{i}" for i in range(3))
    b.nodes.append(helper.make_node("Split", [packed, b.ints([hidden] * 3, "sizes")],
                                    [q, k, v], name="split", axis=2))
    q, k, v = (b.heads(t, head) for t in (q, k, v))
    scores = b.add("Mul", [b.add("MatMul", [q, b.add("Transpose", [k], perm=[0, 1, 3, 2])]),
                           b.floats(head ** -0.5)])
    context = b.add("MatMul", [b.add("Softmax", [scores], axis=-1), v])
    merged = b.add("Reshape", [b.add("Transpose", [context], perm=[0, 2, 1, 3]),
                               b.ints([-1, hidden])], "merge")
    out = b.add("Gemm", [merged, b.floats(b.rng.standard_normal((hidden, hidden)) / 4),
                         b.floats(np.zeros(hidden))])
    b.output(b.add("Reshape", [out, b.add("Shape", [x])]), "y", F, ["batch", "seq", hidden])
    return b.graph(opset)
