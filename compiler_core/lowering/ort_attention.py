"""A fused Attention node as one of onnxruntime's attention operators, when one fits exactly.

- ``com.microsoft:Attention`` computes softmax(scale · Q·Kᵀ + attention_bias) · V per head from
  the hidden states and one packed [H_in, 3H] projection: what GraphLab's Attention bodies hold
  for BERT- and GPT-2-style self-attention once horizontal fusion has packed the Q, K, V
  weights.  The additive mask becomes attention_bias, expanded to [B or 1, 1, S, S] unless
  its shape already is such.
- ``com.microsoft:GroupQueryAttention`` for fewer K/V heads than Q heads (grouped- and
  multi-query): Q, K, V as [B, S, N·H] (rotary applied before, by the body's own rotary
  nodes), K/V heads repeated as repeat_interleave does (the Expand of an Unsqueeze at axis 2,
  or Q reshaped to [B, N_kv, rep·S, H]), the past K/V in [B, N_kv, P, H] and the present ones
  as outputs.  onnxruntime's CPU kernel needs head_size a multiple of 8, the new K/V as long
  as Q (self-attention), and, with a past, one query token or one sequence.
- ``com.microsoft:MultiHeadAttention`` for as many K/V heads as Q heads, self or cross: Q, K,
  V as [B, S, N·H] (sequence-first layouts transposed in and out), past and present K/V.

Exactness: the mask is passed as attention_bias, the same tensor the body adds (a selecting
Where with a −inf or float32-minimum fill becomes the equal additive mask), and no causal
flag is set, so nothing is inferred about what the mask holds.  SDPA's NaN guard (rows whose
every key is masked give 0, not NaN) is applied to the operator's output, which is NaN on
exactly those rows.  A float16 block that computes part of attention in float32 (Casts up
around the scores, the softmax or ·V, as eager attention does) becomes the float16 operator,
its result cast to the block's output type and a float32 mask cast to float16 when that is
exact (0 and −inf): the kernel rounds its own way, which the export's float16 tolerance covers.
Casts of any other kind keep the block inline.  Anything else that does not fit is written
inline with the reason.
"""

from __future__ import annotations

import numpy as np
import onnx

from ..ir import Graph, Node, Value
from ..passes.framework.base import PassContext
from ..passes.fusion.attention.layout import source_of
from ..passes.framework.rewrite import open_fused_node
from .attention_block import Block, read_block
from .ort_ops import MS_DOMAIN, add_before, replace_fused

_FLOAT, _FLOAT16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16
# Ops whose output elements are elements of their first input (no arithmetic)
_MOVES_ELEMENTS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                             "Transpose", "Expand", "Slice", "Tile", "Gather"})
_ABSORBING_FILL = -1e30  # s + fill == fill in float32 for any finite score |s| < 1e30


def lower_attention(graph: Graph, node: Node) -> Node | str:
    """Replace ``node`` by the onnxruntime operator that computes it exactly, or say why none
    does (the caller writes the body inline)."""
    block = read_block(node)
    if isinstance(block, str):
        return block
    heads, kv_heads, head_size = (block.attr(k) for k in ("num_heads", "kv_num_heads",
                                                          "head_size"))
    if heads is None or kv_heads is None or head_size is None:
        return "the number of heads or the head size is unknown"
    if kv_heads < heads:
        return _group_query(graph, block)
    packed = _packed_attention(graph, block)
    if isinstance(packed, Node):
        return packed
    return _multi_head(graph, block)


# ------------------------------------------------------------ com.microsoft:Attention
def _packed_attention(graph: Graph, block: Block) -> Node | str:
    """The whole block, projections included, as onnxruntime's Attention."""
    node = block.node
    if len(node.outputs) != 1:
        return "it also returns its present keys and values"
    if block.attr("qkv") != "packed" or block.attr("past") or block.attr("rotary") or (
            block["q_grouped"] or block.attr("layout") != "batch-first"):
        return ("onnxruntime's Attention takes one packed projection of batch-first hidden "
                "states, without rotary or a KV cache")
    projection = _packed_projection(block)
    if isinstance(projection, str):
        return projection
    x, weights, bias, sizes = projection
    if x.rank != 3 or x.elem_type != _FLOAT:
        return "onnxruntime's Attention takes float32 hidden states [B, S, H]"
    precision = _precision_reason(block)  # a float32 block: any Cast inside is one too many
    if precision:
        return precision
    heads = int(block.attr("num_heads"))
    if sizes[0] != sizes[1] or sizes[0] % heads or sizes[2] % heads:
        return f"Q, K, V sizes {sizes} do not split into {heads} heads of equal Q/K size"
    attention_bias = _shared_bias(graph, block, x)
    if isinstance(attention_bias, str):
        return attention_bias
    attrs = {"num_heads": heads, "scale": float(block.attr("scale"))}
    if len(set(sizes)) > 1:
        attrs["qkv_hidden_sizes"] = [int(s) for s in sizes]
    merged = node.outputs[0]
    rows = merged.rank == 2  # GPT-2's Conv1D projections read the heads merged into rows
    made = replace_fused(graph, node, "Attention",
                         [x, _initializer(graph, node, weights, "qkv_weight"),
                          _initializer(graph, node, bias, "qkv_bias"), None, None,
                          attention_bias], attrs,
                         outputs=[f"{node.name}/attention"] if rows else None)
    if rows:
        shape = graph.add_initializer(f"{node.name}/rows", np.array([-1, sizes[2]], np.int64))
        graph.add_node("Reshape", [made.outputs[0], shape], [merged],
                       name=f"{node.name}/Reshape", provenance=made.provenance,
                       order=made.order + 0.5)
    return made


def _packed_projection(block: Block) -> tuple[Value, object, object, list[int]] | str:
    """(hidden states outside, weights [H_in, q+k+v], bias, [q, k, v] sizes)."""
    split = block["q_in"].producer
    if split is None or split.op_type != "Split" or any(
            block[f"{r}_in"].producer is not split for r in "kv"):
        return "its Q, K, V do not come from one Split of a packed projection"
    source = split.inputs[0].producer
    bias = None
    if source is not None and source.op_type == "Reshape":  # GPT-2: Gemm on 2-D hidden states
        gemm = source.inputs[0].producer
        if gemm is None or gemm.op_type != "Gemm" or any(
                gemm.attrs.get(k, d) != d for k, d in (("alpha", 1.0), ("beta", 1.0),
                                                       ("transA", 0))):
            return "its packed projection is not a plain Gemm or MatMul"
        weight, bias, transposed = gemm.inputs[1], gemm.input(2), bool(gemm.attrs.get("transB"))
    elif source is not None and source.op_type in ("Add", "MatMul"):
        matmul = source
        if source.op_type == "Add":
            matmul = next((v.producer for v in source.inputs if v.producer is not None
                           and v.producer.op_type == "MatMul"), None)
            if matmul is None:
                return "its packed projection is not a MatMul plus bias"
            bias = next(v for v in source.inputs if v is not matmul.outputs[0])
        weight, transposed = matmul.inputs[1], False
    else:
        return "its packed projection is not a MatMul (+ bias) or Gemm"
    x_inner = source_of(block["q_in"])
    if x_inner.producer is not None:
        return "its packed projection does not read the hidden states from outside the block"
    weight_data = block.constant(weight)
    if weight_data is None or weight_data.ndim != 2:
        return "its packed projection weight is not a 2-D constant"
    bias_data = block.constant(bias)
    if bias is not None and (bias_data is None or bias_data.ndim != 1):
        return "its packed projection bias is not a constant vector"
    total = weight_data.shape[0 if transposed else 1]
    sizes = _split_sizes(split, block, total)
    if sizes is None:
        return "the packed projection's Split sizes are not known"
    weights = weight_data.T if transposed else block.constant_of.get(weight.name, weight_data)
    biases = (block.constant_of.get(bias.name, bias_data) if bias is not None
              else np.zeros(total, dtype=weight_data.dtype))
    order = [block[f"{role}_in"].output_index for role in "qkv"]
    if order != [0, 1, 2]:  # the siblings were packed in another order (K before Q, ...)
        weights, biases, sizes = _in_qkv_order(weight_data.T if transposed else weight_data,
                                               biases if bias is None else bias_data,
                                               sizes, order)
    outer_x = block.outer_inputs[list(block.probe.inputs).index(x_inner)]
    return outer_x, weights, biases, sizes


def _in_qkv_order(weights: np.ndarray, biases: np.ndarray, sizes: list[int], order: list[int]
                  ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The packed weight's columns and the bias rearranged so Q, K, V come in that order
    (onnxruntime's Attention reads them so), from the Split outputs ``order`` names."""
    starts = np.concatenate([[0], np.cumsum(sizes)])
    parts = [slice(int(starts[i]), int(starts[i + 1])) for i in order]
    return (np.concatenate([weights[:, part] for part in parts], axis=1),
            np.concatenate([biases[part] for part in parts]), [sizes[i] for i in order])


def _split_sizes(split: Node, block: Block, total: int) -> list[int] | None:
    sizes = block.constant(split.input(1))
    if sizes is None and "split" in split.attrs:
        sizes = split.attrs["split"]
    if sizes is None:
        return [total // 3] * 3 if total % 3 == 0 and len(split.outputs) == 3 else None
    sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
    return sizes if len(sizes) == 3 and sum(sizes) == total else None


def _shared_bias(graph: Graph, block: Block, x: Value) -> Value | None | str:
    """The additive mask as attention_bias [B or 1, 1, S, S]: as it is when it has that shape,
    else through one Expand per model."""
    kind = block["mask_kind"]
    if kind == "none":
        return None
    if kind != "additive":
        return ("its mask selects (Where) instead of adding; onnxruntime's Attention adds its "
                "bias")
    inner = block["mask"]
    if inner.producer is not None:
        return "its mask is computed inside the block; onnxruntime's Attention reads it as input"
    mask = block.outer(graph, inner)
    if _adds_zero(mask):
        return None
    if mask.elem_type != _FLOAT or mask.rank is None or mask.rank > 4:
        return (f"its additive mask {mask.name!r} ({mask.describe_type()}) is not a float32 "
                f"tensor of rank 4 or less")
    batch, sequence = (x.shape or (None, None))[:2]
    if _bias_shape_fits(mask, batch, block.attr("num_heads"), sequence, sequence):
        return mask
    shared = graph.node_by_name(f"{mask.name}/attention_bias")
    if shared is not None:  # one broadcast serves every layer
        return shared.outputs[0]
    node = block.node
    sequence = add_before(graph, node, "Slice", [
        add_before(graph, node, "Shape", [x]), _initializer(graph, node, np.array([1]), "one"),
        _initializer(graph, node, np.array([2]), "two")])
    target = add_before(graph, node, "Concat", [
        _initializer(graph, node, np.array([1, 1], dtype=np.int64), "ones"), sequence,
        sequence], {"axis": 0})
    made = graph.add_node("Expand", [mask, target], 1, name=f"{mask.name}/attention_bias",
                          provenance=node.provenance, order=node.order - 0.25)
    return made.outputs[0]


# --------------------------------------------- MultiHeadAttention, GroupQueryAttention
def _multi_head(graph: Graph, block: Block) -> Node | str:
    reason = _common_reason(graph, block)
    if reason:
        return reason
    return _emit(graph, block, "MultiHeadAttention")


def _group_query(graph: Graph, block: Block) -> Node | str:
    reason = _common_reason(graph, block)
    if reason:
        return reason
    head_size = int(block.attr("head_size"))
    if head_size % 8:
        return f"onnxruntime's GroupQueryAttention needs head_size a multiple of 8, not {head_size}"
    if block.attr("cross"):
        return ("onnxruntime's GroupQueryAttention needs K and V as long as Q "
                "(self-attention); here they come from another tensor")
    if block["past_key"] is not None and not _one_token_or_sequence(block):
        return ("onnxruntime's GroupQueryAttention with a past needs one query token or one "
                "sequence (batch 1), which the model's sizes do not fix")
    return _emit(graph, block, "GroupQueryAttention")


def _common_reason(graph: Graph, block: Block) -> str | None:
    """Why the block does not fit MultiHeadAttention / GroupQueryAttention, or None."""
    q_in = block["q_in"]
    if q_in.elem_type not in (_FLOAT, _FLOAT16) or q_in.rank != 3:
        return f"its Q input is {q_in.describe_type()}; the operators take float [B, S, N·H]"
    precision = _precision_reason(block)
    if precision:
        return precision
    layouts = {block[f"{r}_layout"] for r in "qkv"}
    if len(layouts) != 1:
        return f"its Q, K, V layouts differ ({', '.join(sorted(map(str, layouts)))})"
    if (block["past_key"] is None) != (block["past_value"] is None):
        return "only one of K and V has a past"
    if block["repeat_kv"] and not _repeats_interleaved(block):
        return ("its K/V heads are repeated in another order than the operator's "
                "(each K/V head read by consecutive query heads)")
    if block.attr("rotary") and _rank(block["q_rotated"]) != 4:
        return "its rotary works on a layout other than [B, N, S, H] or [B, S, N, H]"
    bias = _bias_reason(graph, block)
    if bias:
        return bias
    root = block.match.root.outputs[0]
    if block.attr("layout") == "batch-first" and root.rank != 3:
        return "its merged heads are not [B, S, N·H]"
    return None


def _rank(value: Value | None) -> int | None:
    return value.rank if value is not None else None


def _repeats_interleaved(block: Block) -> bool:
    """K/V heads repeated by Unsqueeze at axis 2 then Expand: query head h reads K/V head
    h // rep, as the operators do."""
    for node in block.match.nodes:
        if node.op_type == "Unsqueeze":
            axes = node.attrs.get("axes")
            if axes is None and node.input(1) is not None:
                axes = block.constant(node.input(1))
            if axes is None or [int(a) for a in np.asarray(axes).reshape(-1)] != [2]:
                return False
    return True


def _one_token_or_sequence(block: Block) -> bool:
    shape = block["q_in"].shape or ()
    seq_axis, batch_axis = (1, 0) if block.attr("layout") == "batch-first" else (0, 1)
    return len(shape) == 3 and (shape[seq_axis] == 1 or shape[batch_axis] == 1)


def _precision_reason(block: Block) -> str | None:
    """Why the block's Casts keep it from the operators (which compute in their input type),
    or None: it has none, or it is float16 computing parts in float32 (Casts between the
    two only), which the float16 operator computes to float16 precision."""
    casts = [n for n in block.match.nodes if n.op_type == "Cast"]
    if not casts:
        return None
    operands = {block[f"{role}_in"].elem_type for role in "qkv"}
    if operands == {_FLOAT16} and all({n.inputs[0].elem_type, n.attrs.get("to")} <= {
            _FLOAT16, _FLOAT} for n in casts):
        return None
    return ("it computes part of attention in another precision (Casts inside, other than "
            "float16 Q, K, V computed on in float32); onnxruntime's operators compute in "
            "their input type")


def _bias_reason(graph: Graph, block: Block) -> str | None:
    kind, mask = block["mask_kind"], block["mask"]
    if kind == "none":
        return None
    if kind in ("select", "select_masked"):
        fill = block["mask_fill"]
        dtype = block["q_in"].elem_type
        if not (fill == -np.inf or (dtype == _FLOAT and fill <= _ABSORBING_FILL)):
            return (f"its mask selects a fill value of {fill:g} with Where; adding it instead "
                    f"would change rows with every key masked")
    elif mask.elem_type != block["q_in"].elem_type and not _casts_exactly(
            mask if mask.producer is not None else block.outer(graph, mask),
            block["q_in"].elem_type):
        return ("its additive mask has another type than Q and values that type cannot hold "
                "exactly")
    if mask.rank is None or mask.rank > 4:
        return "its mask is not a tensor of rank 4 or less"
    if block["q_grouped"] and (mask.shape is None or mask.rank < 2 or mask.shape[-2] != 1) \
            and not _one_token_or_sequence(block):
        return "its mask's query rows do not broadcast over the grouped query rows"
    heads_3d = block["q_heads"] is not None and block["q_heads"].rank == 3
    if heads_3d and mask.rank > 2:
        return "its mask is per (batch · head); the operators take it per batch and head"
    return None


def _emit(graph: Graph, block: Block, op_type: str) -> Node:
    """Write the body inline and put ``op_type`` in place of its core, reading the inlined
    projections (and rotary, mask) and producing the block's outputs."""
    node, match = block.node, block.match
    present_inner = [block[name] for name in ("key_cache", "value_cache")]
    taken = [v if block["past_key"] is not None and block.is_output(v) and v.producer is not None
             and v.producer.op_type == "Concat" else None for v in present_inner]
    open_fused_node(graph, PassContext(pass_name="lower_onnxruntime"), node,
                    "inline_for_onnxruntime")
    emit = _Emitter(graph, node)
    seq_first = block.attr("layout") != "batch-first"
    query, key, value = (emit.operand(block, role, seq_first) for role in "qkv")
    past = [block.outer(graph, block[n]) if block[n] is not None else None
            for n in ("past_key", "past_value")]
    bias = emit.bias(block)
    attrs = {"num_heads": int(block.attr("num_heads")), "scale": float(block.attr("scale"))}
    if op_type == "GroupQueryAttention":
        attrs.update(kv_num_heads=int(block.attr("kv_num_heads")), causal=0)
        lengths, total = emit.sequence_lengths(block)
        inputs = [query, key, value, *past, lengths, total, None, None, None, bias]
    else:
        inputs = [query, key, value, None, None, bias, *past]
    presents = []
    for inner in taken:
        outer = block.outer(graph, inner) if inner is not None else None
        if outer is not None:
            graph.remove_node(outer.producer)
        presents.append(outer)
    root = block.outer(graph, match.root.outputs[0])
    graph.remove_node(root.producer)
    result = emit.op(op_type, inputs, attrs, outputs=[f"{node.name}/attention", *presents],
                     domain=MS_DOMAIN)
    made = result.producer
    if block["nan_guard"] and _may_hide_a_whole_row(graph, block):
        zero = emit.scalar(0.0, block["q_in"].elem_type)
        result = emit.op("Where", [emit.op("IsNaN", [result]), zero, result])
    if root.elem_type and root.elem_type != block["q_in"].elem_type:  # float16 cast up after
        result = emit.op("Cast", [result], {"to": root.elem_type})
    if seq_first:
        result = emit.op("Transpose", [result], {"perm": [1, 0, 2]})
    if root.rank == 2:  # the heads merged into rows of a matrix (GPT-2's Conv1D projections)
        result = emit.op("Reshape", [result, emit.ints([-1, int(block.attr("num_heads"))
                                                        * int(block.attr("head_size"))])])
    emit.take_over(result, root)
    return made


def _bias_shape_fits(mask: Value, batch, heads, rows, columns) -> bool:
    """Whether ``mask`` already has the operators' attention_bias shape [B or 1, N or 1, S, T]:
    rank 4, its last two dims the query and key lengths (the same number or the same named
    dim), so it is passed as it is instead of through an Expand and the shape arithmetic
    that Expand needs.  Unknown dims never fit."""
    shape = mask.shape
    if shape is None or len(shape) != 4 or rows is None or columns is None:
        return False
    first, second, third, fourth = shape
    return (first == 1 or (batch is not None and first == batch)) and (
        second == 1 or (heads is not None and second == heads)) and (
        third == rows and fourth == columns)


def _casts_exactly(mask: Value, elem_type: int) -> bool:
    """Whether every value ``mask`` can hold is the same once cast to ``elem_type``: constant
    data, or a Where choosing between constants (a 0 / −inf mask), that survives the cast,
    maybe reshaped, broadcast or sliced on the way."""
    node = mask.producer
    while node is not None and node.op_type in _MOVES_ELEMENTS:
        mask, node = node.inputs[0], node.inputs[0].producer
    choices = [mask] if node is None or node.op_type != "Where" else node.inputs[1:]
    datas = [v.constant_value() for v in choices]
    if any(d is None for d in datas):
        return False
    dtype = np.float16 if elem_type == _FLOAT16 else np.float32
    with np.errstate(over="ignore"):
        return all(np.array_equal(d.astype(dtype).astype(d.dtype), d, equal_nan=True)
                   for d in datas)


def _adds_zero(mask: Value) -> bool:
    """Whether an additive mask is zero everywhere (dynamo's SDPA without a mask: Where of an
    all-true condition, broadcast to the scores' shape, selecting 0)."""
    data = mask.constant_value()
    if data is not None:
        return not data.any()
    node = mask.producer
    if node is None or node.op_type != "Where":
        return False
    condition, chosen = node.inputs[0], node.inputs[1].constant_value()
    if chosen is None or chosen.any():
        return False
    if condition.producer is not None and condition.producer.op_type == "Expand":
        condition = condition.producer.inputs[0]
    data = condition.constant_value()
    return data is not None and bool(data.all())


def _may_hide_a_whole_row(graph: Graph, block: Block) -> bool:
    """Whether the mask may hide every key of a query with −inf (the operators then give NaN,
    which SDPA's guard turns into 0): not when it selects or adds only finite values."""
    kind = block["mask_kind"]
    if kind == "none":
        return False
    if kind != "additive":
        return block["mask_fill"] == -np.inf
    mask = block.outer(graph, block["mask"])
    data = mask.constant_value()
    if data is not None:
        return bool(np.isneginf(data).any())
    node = mask.producer
    if node is not None and node.op_type == "Where":
        branches = [v.constant_value() for v in node.inputs[1:]]
        return any(b is None or not np.isfinite(b).all() for b in branches)
    return True


class _Emitter:
    """Small ops written where the fused node was, named after it.  Sizes the model's inputs
    fix (a dim named like an input's) are read from that input once per model, so every
    layer's operator shares them."""

    SIZES = "attention_sizes"  # the prefix of the shared size nodes

    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node, self.count = graph, node, 0
        self.made: dict[tuple, Value] = {}  # sizes already read in this block

    def op(self, op_type: str, inputs: list, attrs: dict | None = None,
           outputs: list | None = None, domain: str = "") -> Value:
        self.count += 1
        made = self.graph.add_node(op_type, inputs, outputs or 1, attrs=attrs, domain=domain,
                                   name=f"{self.node.name}/{op_type}_{self.count}",
                                   provenance=self.node.provenance,
                                   order=self.node.order + self.count * 1e-3)
        return made.outputs[0]

    def ints(self, values: list[int]) -> Value:
        self.count += 1
        return self.graph.add_initializer(f"{self.node.name}/ints_{self.count}",
                                          np.array(values, dtype=np.int64))

    def scalar(self, number: float, elem_type: int) -> Value:
        self.count += 1
        dtype = np.float16 if elem_type == _FLOAT16 else np.float32
        return self.graph.add_initializer(f"{self.node.name}/scalar_{self.count}",
                                          np.array(number, dtype=dtype))

    def from_input(self, value: Value, seq_first: bool) -> Value:
        """A [B, S, N·H] operand from the tensor the head split read ([S, B, N·H] if
        sequence first)."""
        return self.op("Transpose", [value], {"perm": [1, 0, 2]}) if seq_first else value

    def operand(self, block: Block, role: str, seq_first: bool) -> Value:
        """Q, K or V as [B, S, N·H]: the tensor the head split read (transposed when sequence
        first), or, after rotary or a cut of packed heads, the per-head tensor made flat
        again — from [B, S, N, H] (rotary before the heads move forward) or [B, N, S, H]
        (after rotary, or after a per-head norm: the norm stays inline, before the op)."""
        if block[f"{role}_rotary"] and block[f"{role}_rotated_before_split"] is not None:
            return self.flat(block.outer(self.graph, block[f"{role}_rotated_before_split"]))
        if block[f"{role}_rotary"] or block["heads_packed"] or block[f"{role}_norm"]:
            heads = block[f"{role}_rotated"] if block[f"{role}_rotary"] else (
                block[f"{role}_heads"])
            moved = self.op("Transpose", [block.outer(self.graph, heads)], {"perm": [0, 2, 1, 3]})
            return self.flat(moved)
        return self.from_input(block.outer(self.graph, block[f"{role}_in"]), seq_first)

    def flat(self, value: Value) -> Value:
        """[B, S, N, H] → [B, S, N·H]."""
        return self.op("Reshape", [value, self.ints([0, 0, -1])])

    def dim(self, value: Value, axis: int, known=None) -> Value:
        """``value``'s size along ``axis`` as a 1-element int64 tensor: a constant when the
        shape ``known`` fixes it, read once per model from an input with the same named dim,
        else read from ``value``."""
        if isinstance(known, int) and known > 0:
            return self.ints([known])
        shared = self._input_dim(known) if isinstance(known, str) else None
        if shared is not None:
            return shared
        key = ("dim", value.name, axis)
        if key not in self.made:
            self.made[key] = self.op("Slice", [self.op("Shape", [value]), self.ints([axis]),
                                               self.ints([axis + 1])])
        return self.made[key]

    def _input_dim(self, name: str) -> Value | None:
        """The size of dim ``name`` read from the first model input that has it, one node per
        model (found again by its name)."""
        made = self.graph.node_by_name(f"{self.SIZES}/{name}")
        if made is not None:
            return made.outputs[0]
        for value in self.graph.inputs:
            if value.shape and name in value.shape:
                axis = list(value.shape).index(name)
                shape = self.graph.add_node("Shape", [value], 1, name=f"{self.SIZES}/{name}/shape",
                                            provenance=self.node.provenance, order=-1.0)
                bounds = [self.graph.add_initializer(f"{self.SIZES}/{name}/{end}",
                                                     np.array([a], dtype=np.int64))
                          for end, a in (("start", axis), ("end", axis + 1))]
                return self.graph.add_node("Slice", [shape.outputs[0], *bounds], 1,
                                           name=f"{self.SIZES}/{name}",
                                           provenance=self.node.provenance,
                                           order=-1.0).outputs[0]
        return None

    def length(self, block: Block, role: str) -> Value:
        """Tokens in Q (role "q") or in the new K/V ("k"), from the tensor the head split read."""
        inner = block[f"{role}_in"]
        axis = 1 if block.attr("layout") == "batch-first" else 0
        return self.dim(block.outer(self.graph, inner), axis, (inner.shape or (None,) * 3)[axis])

    def total_length(self, block: Block) -> Value:
        """Keys seen by each query: the new ones plus the past ones."""
        new, past = self.length(block, "k"), block["past_key"]
        if past is None:
            return new
        key = ("total", new.name)
        if key not in self.made:
            past_length = self.dim(block.outer(self.graph, past), 2, (past.shape or (None,) * 4)[2])
            self.made[key] = self.op("Add", [new, past_length])
        return self.made[key]

    def bias(self, block: Block) -> Value | None:
        """The mask as attention_bias [B or 1, N or 1, S, T]: the tensor the body adds (a
        selecting Where made additive), expanded over the query and key axes unless its
        shape already is [B or 1, N or 1, S, T]."""
        kind = block["mask_kind"]
        mask = block.outer(self.graph, block["mask"]) if kind != "none" else None
        if mask is None or (kind == "additive" and _adds_zero(mask)):
            return None
        fits = _bias_shape_fits(mask, *self.sizes_named(block))
        if kind != "additive":
            dtype = block["q_in"].elem_type
            fill, zero = self.scalar(block["mask_fill"], dtype), self.scalar(0.0, dtype)
            mask = self.op("Where", [mask, zero, fill] if kind == "select" else
                           [mask, fill, zero])
        elif mask.elem_type != block["q_in"].elem_type:  # exact: _bias_reason checked it
            mask = self.op("Cast", [mask], {"to": block["q_in"].elem_type})
        if fits:
            return mask
        target = self.op("Concat", [self.ints([1, 1]), self.length(block, "q"),
                                    self.total_length(block)], {"axis": 0})
        return self.op("Expand", [mask, target])

    @staticmethod
    def sizes_named(block: Block) -> tuple:
        """The batch, heads, query length and total key length as the block's shapes name
        them (an int, a dim name, or None when unknown; the total is unknown with a past)."""
        axis = 1 if block.attr("layout") == "batch-first" else 0
        q_shape, k_shape = (block[f"{role}_in"].shape or (None,) * 3 for role in "qk")
        total = k_shape[axis] if block["past_key"] is None else None
        return q_shape[1 - axis], block.attr("num_heads"), q_shape[axis], total

    def sequence_lengths(self, block: Block) -> tuple[Value, Value]:
        """GroupQueryAttention's seqlens_k (total length − 1 per sequence, int32 [B]) and
        total_sequence_length (int32 scalar): every sequence uses the whole cache."""
        total = self.total_length(block)
        q_in = block["q_in"]
        axis = 0 if block.attr("layout") == "batch-first" else 1
        batch = self.dim(block.outer(self.graph, q_in), axis, (q_in.shape or (None,) * 3)[axis])
        lengths = self.op("Expand", [self.op("Sub", [total, self.ints([1])]), batch])
        to_int32 = {"to": onnx.TensorProto.INT32}
        return (self.op("Cast", [lengths], to_int32),
                self.op("Cast", [self.op("Squeeze", [total, self.ints([0])])], to_int32))

    def take_over(self, made: Value, root: Value) -> None:
        """``root`` (the fused node's output, maybe a graph output) now computed by ``made``'s
        producer."""
        producer = made.producer
        index = made.output_index
        inputs, attrs, domain = list(producer.inputs), dict(producer.attrs), producer.domain
        outputs = list(producer.outputs)
        outputs[index] = root
        self.graph.remove_node(producer)
        self.graph.add_node(producer.op_type, inputs, outputs, attrs=attrs, domain=domain,
                            name=producer.name, provenance=producer.provenance,
                            order=producer.order)


def _initializer(graph: Graph, node: Node, data, hint: str) -> Value | None:
    """``data`` as a graph value: a value already in the graph as is, an array as a new
    initializer named after the node."""
    if data is None or isinstance(data, Value):
        return data
    if data.dtype.kind == "i":
        data = data.astype(np.int64)
    return graph.add_initializer(f"{node.name}/{hint}", np.ascontiguousarray(data))
