"""No-op elimination: nodes that return their input unchanged, recognised from types and shapes."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...ir import Graph, Node, Value
from ...ir.dtypes import to_numpy
from ..framework.base import Pass, PassContext, PassResult
from ..analyses.constants import INT64_MAX, constant_ints, ints_input_or_attr
from ..framework.rewrite import NodeRule, bypass_or_decline, replace_node, sweep_by_op
from ..framework.pass_registry import register_pass
from .reshapes import reshape_is_noop


def _cast_is_noop(node: Node) -> bool:
    source = node.inputs[0]
    return source.elem_type is not None and node.attr("to") == source.elem_type


def _cast_like_is_noop(node: Node) -> bool:
    source, like = node.inputs[0], node.inputs[1]
    return source.elem_type is not None and source.elem_type == like.elem_type


def _expand_is_noop(node: Node) -> bool:
    """Expand to a shape the input already has (every target dim is 1 or the same size)."""
    shape, target = node.inputs[0].shape, constant_ints(node.input(1))
    if shape is None or target is None or len(target) > len(shape):
        return False
    return all(want == 1 or (isinstance(dim, int) and dim == want)
               for dim, want in zip(shape[len(shape) - len(target):], target))


def _reshape_is_noop(node: Node) -> bool:
    target = constant_ints(node.input(1))
    return target is not None and reshape_is_noop(node.inputs[0].shape, target,
                                                  bool(node.attr("allowzero", 0)))


def _slice_is_noop(node: Node) -> bool:
    """A Slice whose every sliced axis runs from the first element to the last, step 1."""
    shape = node.inputs[0].shape
    starts = ints_input_or_attr(node, 1, "starts")
    ends = ints_input_or_attr(node, 2, "ends")
    if shape is None or starts is None or ends is None:
        return False
    axes = _optional_ints(node, 3, "axes", tuple(range(len(starts))))
    steps = _optional_ints(node, 4, None, (1,) * len(starts))
    if axes is None or steps is None:
        return False
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step != 1 or not -len(shape) <= axis < len(shape):
            return False
        dim = shape[axis]
        if isinstance(dim, int):
            if not (start == 0 or start <= -dim) or (end + dim if end < 0 else end) < dim:
                return False
        elif start != 0 or end < INT64_MAX:
            return False  # unknown size: only "from 0 to the end" is provably everything
    return True


def _optional_ints(node: Node, index: int, attr: str | None,
                   default: tuple[int, ...]) -> tuple[int, ...] | None:
    if (attr is None or attr not in node.attrs) and node.input(index) is None:
        return default
    return ints_input_or_attr(node, index, attr) if attr else constant_ints(node.input(index))


def _single_input_concat(node: Node) -> bool:
    return len([v for v in node.inputs if v is not None]) == 1


def _bypassed_when(is_noop: Callable[[Node], bool]) -> NodeRule:
    """A rule that bypasses a node ``is_noop`` says returns its input unchanged."""
    def rule(graph: Graph, ctx: PassContext, node: Node, result: PassResult) -> bool:
        if not is_noop(node):
            return False
        bypass_or_decline(graph, node, node.inputs[0], f"noop_{node.op_type.lower()}", result)
        return True
    return rule


def _squeeze_pair_source(node: Node) -> Value | None:
    """x when ``node`` undoes its producer: Squeeze(Unsqueeze(x, a), a) or the reverse."""
    inner = node.inputs[0].producer
    pairs = {("Squeeze", "Unsqueeze"), ("Unsqueeze", "Squeeze")}
    if inner is None or inner.domain or (node.op_type, inner.op_type) not in pairs:
        return None
    source = inner.inputs[0]
    outer_axes = ints_input_or_attr(node, 1, "axes")
    inner_axes = ints_input_or_attr(inner, 1, "axes")
    if outer_axes is None or inner_axes is None or source.rank is None:
        return None  # Squeeze without axes depends on which dims happen to be 1
    # Unsqueeze's axes count in its output's rank, Squeeze's in its input's: the larger rank.
    rank = source.rank + (len(inner_axes) if inner.op_type == "Unsqueeze" else 0)
    if sorted(a % rank for a in outer_axes) != sorted(a % rank for a in inner_axes):
        return None
    return source


def _squeeze_pair(graph: Graph, ctx: PassContext, node: Node, result: PassResult) -> None:
    source = _squeeze_pair_source(node)
    if source is not None:
        bypass_or_decline(graph, node, source, "squeeze_pair_cancels", result)


def _cast_round_trip_source(node: Node) -> Value | None:
    """x when ``node`` casts back a lossless widening of it: Cast(Cast(x: T -> W), to=T) with
    every T value exactly representable in W (float32 -> float64 -> float32).

    Besides saving two nodes, this keeps onnxruntime (1.32) from misfusing the pair into a
    LayerNorm behind it: from its basic level on it builds a LayerNormalization whose input
    and scale types differ, and the model no longer loads."""
    inner = node.inputs[0].producer
    if inner is None or inner.domain or inner.op_type != "Cast":
        return None
    source = inner.inputs[0]
    if source.elem_type is None or node.attr("to") != source.elem_type:
        return None
    try:
        widened = np.can_cast(to_numpy(source.elem_type), to_numpy(inner.attr("to")), "safe")
    except (KeyError, TypeError, ValueError):
        return None  # a type numpy does not know (bfloat16, float8): say nothing
    return source if widened else None


def _cast_round_trip(graph: Graph, ctx: PassContext, node: Node, result: PassResult) -> None:
    source = _cast_round_trip_source(node)
    if source is not None:
        bypass_or_decline(graph, node, source, "cast_round_trip", result)


def _absorb_relu_into_clip(graph: Graph, ctx: PassContext, clip: Node,
                           result: PassResult) -> None:
    """Clip(Relu(x), lo, hi) -> Clip(x, max(lo, 0), hi): max is associative, so this is exact
    for every lo and hi (no lo: 0).  It also keeps onnxruntime's own Relu+Clip fusion away
    from the pair: in float64 models that fusion fails to load (onnxruntime 1.32)."""
    relu = clip.inputs[0].producer
    if relu is None or relu.domain or relu.op_type != "Relu" or relu.outputs[0].is_graph_output:
        return
    bounds_as_inputs = "min" not in clip.attrs and "max" not in clip.attrs and \
        graph.opset_imports.get("", 11) >= 11
    lower = _clip_lower_bound(clip, bounds_as_inputs, relu.inputs[0])
    if lower is None:
        return  # a bound computed at run time: its sign is unknown
    raised = np.maximum(lower, 0).astype(lower.dtype)
    if bounds_as_inputs:
        bound = graph.add_initializer(graph.unique_name(f"{clip.name}_min"), raised)
        inputs, attrs = [relu.inputs[0], bound, clip.input(2)], {}
    else:
        inputs, attrs = [relu.inputs[0]], {**clip.attrs, "min": float(raised)}
    replace_node(graph, ctx, "relu_into_clip", clip, "Clip", inputs, attrs, absorbed=[relu])
    result.rewrites += 1


def _clip_lower_bound(clip: Node, bounds_as_inputs: bool, x: Value) -> np.ndarray | None:
    """Clip's lower bound as a scalar array of x's type (absent: minus infinity), or None."""
    if not bounds_as_inputs:
        return np.asarray(clip.attr("min", -np.inf), dtype=np.float32)
    if clip.input(1) is None:
        if x.elem_type is None:
            return None
        return np.asarray(-np.inf if to_numpy(x.elem_type).kind == "f"
                          else np.iinfo(to_numpy(x.elem_type)).min, to_numpy(x.elem_type))
    value = clip.input(1).constant_value()
    return None if value is None else np.asarray(value).reshape(())


_RULES: dict[str, tuple[NodeRule, ...]] = {
    "Cast": (_bypassed_when(_cast_is_noop), _cast_round_trip),
    "CastLike": (_bypassed_when(_cast_like_is_noop),),
    "Expand": (_bypassed_when(_expand_is_noop),),
    "Reshape": (_bypassed_when(_reshape_is_noop),),
    "Slice": (_bypassed_when(_slice_is_noop),),
    "Concat": (_bypassed_when(_single_input_concat),),
    "Squeeze": (_squeeze_pair,),
    "Unsqueeze": (_squeeze_pair,),
    "Clip": (_absorb_relu_into_clip,),
}


@register_pass
class EliminateNoop(Pass):
    """Remove operations that provably return their input unchanged.

    Exporters emit many: a Cast to the type the tensor already has, an Expand or Reshape to the
    shape it already has, a Slice from the first element to the last, a Concat of one tensor,
    an Unsqueeze undone by the Squeeze right after it, a Cast back from a lossless widening
    (float32 -> float64 -> float32).  Each is recognised from the input's known type and shape
    and the op's constant parameters, then bypassed.  A Relu under a Clip is absorbed into the
    Clip's lower bound (Clip(Relu(x), lo, hi) = Clip(x, max(lo, 0), hi)).
    """

    name = "eliminate_noop"
    family = "cleanup"
    fixed_point = True

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        return sweep_by_op(graph, ctx, _RULES)

