"""Horizontal fusion: sibling MatMuls/Gemms that read the same activation become one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir import Graph, Node, Provenance, Value
from ...ir.computed_tensors import ConcatenatedTensor
from ...ir.lazy_tensors import LazyTensor, values_of
from ..framework.base import Pass, PassContext, PassResult
from ..framework.pass_registry import register_pass

RULE = "fuse_sibling_matmuls"


@dataclass
class _Member:
    """One sibling, with its weight laid out as [K, N] and its bias (if any) as [N]."""

    node: Node
    weight: np.ndarray | LazyTensor   # not read: the merged weight is concatenated lazily
    bias: np.ndarray | None
    bias_add: Node | None   # the MatMul's `+ bias` node, absorbed with it

    @property
    def columns(self) -> int:
        return self.weight.shape[1]

    @property
    def result(self) -> Value:
        """The value the rest of the graph reads: after the bias when the bias is absorbed."""
        return (self.bias_add or self.node).outputs[0]


@register_pass
class FuseSiblingMatMuls(Pass):
    """Merge MatMuls (or Gemms) that multiply the same activation by different constant weights
    into one wider MatMul whose result a Split hands back to each consumer.

    An attention layer multiplies its input by three weight matrices (query, key, value): three
    reads of the activation and three small kernels.  Concatenating the weights column-wise
    ([K, N1] | [K, N2] | [K, N3] -> [K, N1+N2+N3]) computes the same numbers in one bigger,
    better-utilised matrix multiply (GPT-2's `c_attn` is exactly this, done by hand).  Biases
    added right after each MatMul are concatenated too when every sibling has a constant one.
    Siblings whose weight is computed at run time, or whose dtype or shape differs, are left
    alone and the reason is recorded.
    """

    name = "fuse_sibling_matmuls"
    family = "fusion"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        fused_nodes = 0
        sibling_sets = _sibling_sets(graph)
        for siblings in sibling_sets:
            members = _classify(siblings, result)
            for group in _compatible_groups(members, result):
                _fuse(graph, ctx, group)
                result.rewrites += 1
                fused_nodes += len(group)
        if result.rewrites:
            wider = "a wider one" if result.rewrites == 1 else f"{result.rewrites} wider ones"
            result.notes.append(f"merged {fused_nodes} sibling MatMul/Gemm nodes into {wider}")
        elif not sibling_sets:
            result.notes.append("no two MatMul (or Gemm) nodes read the same input")
        return result


def _sibling_sets(graph: Graph) -> list[list[Node]]:
    """MatMul (and, separately, Gemm) nodes grouped by the activation they read, 2+ per group."""
    groups: dict[tuple[str, str], list[Node]] = {}
    for node in graph.nodes:
        if node.domain == "" and node.op_type in ("MatMul", "Gemm") and node.inputs[0] is not None:
            groups.setdefault((node.op_type, node.inputs[0].name), []).append(node)
    return [nodes for nodes in groups.values() if len(nodes) > 1]


def _classify(siblings: list[Node], result: PassResult) -> list[_Member]:
    """The siblings that can be merged with someone; the others are recorded as declined."""
    members = []
    for node in siblings:
        member_or_reason = _member(node)
        if isinstance(member_or_reason, str):
            result.decline(node, RULE, member_or_reason)
        else:
            members.append(member_or_reason)
    return members


def _member(node: Node) -> _Member | str:
    """The sibling's weight and bias in canonical form, or why it cannot be merged."""
    weight_value = node.inputs[1]
    weight = weight_value.constant_data()
    if weight is None:
        return (f"its weight {weight_value.name} is computed at run time; only constant weights "
                f"can be concatenated ahead of time")
    if weight.ndim != 2:
        return f"its weight {weight_value.name} has shape {list(weight.shape)}, not [K, N]"
    if node.op_type == "MatMul":
        bias_add, bias = _bias_after(node, weight)
        return _Member(node, weight, bias, bias_add)
    if node.attr("transB", 0):
        weight = values_of(weight).T
    bias_value = node.input(2)
    if bias_value is None:
        return _Member(node, weight, np.zeros(weight.shape[1], weight.dtype), None)
    bias = bias_value.constant_value()
    if bias is None:
        return f"its bias {bias_value.name} is computed at run time"
    columns = weight.shape[1]
    if bias.dtype != weight.dtype or not (bias.size == 1 or bias.shape[-1:] == (columns,)
                                          and bias.size == columns):
        return (f"its bias {bias_value.name} ({bias.dtype}{list(bias.shape)}) is not one value "
                f"per output column")
    return _Member(node, weight, np.broadcast_to(bias.reshape(-1), columns), None)


def _bias_after(matmul: Node, weight: np.ndarray) -> tuple[Node | None, np.ndarray | None]:
    """The `Add(matmul, constant[N])` that is the MatMul's only reader, and its bias."""
    out = matmul.outputs[0]
    readers = out.users()
    if out.is_graph_output or len(readers) != 1 or len(out.uses) != 1:
        return None, None
    add = readers[0]
    if add.op_type != "Add" or add.domain != "":
        return None, None
    other = add.inputs[1 - out.uses[0][1]]
    bias = other.constant_value() if other is not None else None
    columns = weight.shape[1]
    if (bias is None or bias.dtype != weight.dtype or bias.size != columns
            or bias.shape[-1:] != (columns,) or out.rank is None or bias.ndim > out.rank):
        return None, None
    return add, bias.reshape(columns)


def _compatible_groups(members: list[_Member], result: PassResult) -> list[list[_Member]]:
    """Split members into groups that can share one weight matrix; record the odd ones out."""
    classes: dict[tuple, list[_Member]] = {}
    for member in members:
        classes.setdefault(_compatibility_key(member), []).append(member)
    ranked = sorted(classes.values(), key=len, reverse=True)
    for group in ranked:
        if len(group) > 1:
            continue
        loner = group[0]
        other = next((g[0] for g in ranked if g[0] is not loner), None)
        reason = (_mismatch(loner, other) if other is not None
                  else "none of its siblings has a constant weight")
        result.decline(loner.node, RULE, reason)
    return [group for group in ranked if len(group) > 1]


def _compatibility_key(member: _Member) -> tuple:
    node = member.node
    key = (str(member.weight.dtype), member.weight.shape[0])
    if node.op_type == "Gemm":
        key += (node.attr("transA", 0), node.attr("alpha", 1.0), node.attr("beta", 1.0))
    return key


def _mismatch(member: _Member, reference: _Member) -> str:
    """Why ``member`` cannot share a weight matrix with ``reference``."""
    name = reference.node.name
    if member.weight.dtype != reference.weight.dtype:
        return (f"its weight is {member.weight.dtype}, sibling {name}'s is "
                f"{reference.weight.dtype}")
    if member.weight.shape[0] != reference.weight.shape[0]:
        return (f"its weight has {member.weight.shape[0]} rows (K), sibling {name}'s has "
                f"{reference.weight.shape[0]}")
    return f"its transA/alpha/beta differ from sibling {name}'s"


def _fuse(graph: Graph, ctx: PassContext, group: list[_Member]) -> None:
    """One wide MatMul/Gemm (plus one bias Add) and a Split that gives each sibling's readers
    their slice; the Split produces the siblings' original values, so names and shapes stay."""
    first = group[0].node
    scope = _common_scope([m.node.name for m in group])
    absorb_bias = first.op_type == "MatMul" and all(m.bias_add is not None for m in group)
    results = [m.result if absorb_bias else m.node.outputs[0] for m in group]
    old_weights = [m.node.inputs[1] for m in group]
    for member in reversed(group):
        if absorb_bias:
            graph.remove_node(member.bias_add)
        graph.remove_node(member.node)
    columns = [m.columns for m in group]
    wide = _wide_node(graph, ctx, group, scope, results[0])
    if absorb_bias:
        bias = graph.add_initializer(f"{scope}concat_bias", _concat_biases(group))
        wide = _add_like(graph, "Add", [wide, bias], f"{scope}Add_horizontal", results[0],
                         sum(columns),
                         ctx.provenance("concat_biases", [m.bias_add for m in group]),
                         first.order)
    sources = [m.node for m in group] + [m.bias_add for m in group if absorb_bias]
    _add_split(graph, wide, results, columns, f"{scope}Split_horizontal",
               ctx.provenance("split_outputs", sources), first.order)
    for value in old_weights:
        if value.is_initializer and not value.uses and not value.is_graph_output:
            graph.remove_initializer(value)


def _wide_node(graph: Graph, ctx: PassContext, group: list[_Member], scope: str,
               like: Value) -> Value:
    """The MatMul (or Gemm, biases included) with the siblings' weights side by side."""
    first = group[0].node
    weight = graph.add_initializer(f"{scope}concat_weight", ConcatenatedTensor(
        f"{scope}concat_weight", [m.weight for m in group], axis=1))
    inputs, attrs = [first.inputs[0], weight], None
    if first.op_type == "Gemm":  # weights are [K, N] now, so transB is dropped
        inputs.append(graph.add_initializer(f"{scope}concat_bias", _concat_biases(group)))
        attrs = {name: first.attrs[name] for name in ("transA", "alpha", "beta")
                 if name in first.attrs}
    return _add_like(graph, first.op_type, inputs, f"{scope}{first.op_type}_horizontal", like,
                     sum(m.columns for m in group),
                     ctx.provenance("concat_weights", [m.node for m in group]), first.order,
                     attrs)


def _add_like(graph: Graph, op_type: str, inputs: list[Value], name: str, like: Value,
              columns: int, provenance: Provenance, order: float,
              attrs: dict | None = None) -> Value:
    """Add a node whose result is typed like ``like`` but ``columns`` wide."""
    node = graph.add_node(op_type, inputs, 1, attrs=attrs, name=name, provenance=provenance,
                          order=order)
    result = node.outputs[0]
    result.elem_type = like.elem_type
    result.shape = None if like.shape is None else like.shape[:-1] + (columns,)
    return result


def _concat_biases(group: list[_Member]) -> np.ndarray:
    return np.concatenate([m.bias for m in group])


def _add_split(graph: Graph, wide: Value, results: list[Value], sizes: list[int], name: str,
               provenance: Provenance, order: float) -> None:
    """Split the wide result along its last axis back into the siblings' original values."""
    inputs, attrs = [wide], {"axis": wide.rank - 1 if wide.rank else -1}  # -1 needs opset 11
    if graph.opset_imports.get("", 1) >= 13:
        inputs.append(graph.add_initializer(f"{name}_sizes", np.array(sizes, np.int64)))
    else:
        attrs["split"] = sizes
    graph.add_node("Split", inputs, results, attrs=attrs, name=name, provenance=provenance,
                   order=order)


def _common_scope(names: list[str]) -> str:
    """The longest common '/'-scope of the names, with a trailing '/', or ''."""
    parts = [name.split("/")[:-1] for name in names]
    common: list[str] = []
    for level in zip(*parts):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return "/".join(common) + "/" if common else ""
