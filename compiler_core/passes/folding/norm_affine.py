"""Folding a normalization's trailing scale and shift into the linear layer that reads it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...ir import Graph, Node, Value
from ...patterns import Pattern
from ...wording import plural
from ..analyses.affine import batchnorm_affine, gemm_weight_axes, new_weight, scale_axis
from ..framework.base import Pass, PassContext, PassResult
from ..framework.pattern_pass import find_matches
from ..framework.pass_registry import register_pass
from ..framework.rewrite import bypass_node, replace_by_op
from ..recognition.normalization_gelu import LAYERNORM

RULE = "fold_norm_affine"


@dataclass
class _Affine:
    """y = x̂·scale + shift over the last axis, at the end of a normalization."""

    site: Node                        # named in declines
    output: Value                     # y
    scale: np.ndarray                 # [K], float64
    shift: np.ndarray                 # [K], float64
    strip: Callable[[Graph], None]    # removes the affine once the linear layer applies it
    blocker: str | None = None        # why the affine cannot move into a last-axis layer
    nodes: tuple[Node, ...] = ()      # what the fold would take (named in declines)


@dataclass
class _Refusal:
    """Why the linear layer reading an affine cannot take it, and the node that refuses."""

    reason: str
    blocking: Node | None = None


@dataclass
class _Linear:
    """The one MatMul/Gemm reading an affine's output, and where its bias lives."""

    node: Node
    weight: Value
    in_axis: int              # the weight axis that meets the normalized channels
    bias_add: Node | None     # a MatMul's constant-bias Add


@register_pass
class FoldNormAffine(Pass):
    """Move a normalization's trailing scale and shift (γ, β) into the MatMul or Gemm that
    reads it: W' = diag(γ)·W and b' = β·W + b.

    A LayerNorm (decomposed, or the LayerNormalization op) ends with y = x̂·γ + β, and an
    inference BatchNormalization on a [N, C] tensor is entirely such a map.  When the only
    reader of y is a linear layer with a constant weight, that layer can apply γ and β for
    free, by rescaling its weight's rows and adding β·W to its bias: the decomposed LayerNorm
    loses its Mul and Add, the LayerNormalization op gets scale 1 and no bias, and the
    BatchNormalization disappears.  The fold is declined, with the reason, when y has another
    reader (that reader needs y with γ and β applied), when the weight is shared with another
    layer (folding would need a second copy), when a MatMul has no bias to take β (adding an
    Add would not save a node), or when a BatchNormalization's channel axis is not the axis
    the layer contracts.  Readers that only ask for y's shape do not count.
    """

    name = "fold_norm_affine"
    family = "folding"

    def patterns(self) -> list[Pattern]:
        return [LAYERNORM.named_pattern()]

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        affines = (_decomposed_layernorms(graph, ctx, result) + _layernorm_ops(graph)
                   + _batchnorms(graph))
        for affine in affines:
            linear = _linear_reader(affine.output, affine.scale.size)
            if linear is None:
                continue
            blocking = linear.blocking if isinstance(linear, _Refusal) else None
            reason = affine.blocker or (linear.reason if isinstance(linear, _Refusal)
                                        else _no_bias_home(linear, affine))
            if reason is not None:
                result.decline(affine.site, RULE, reason,
                               blocking=None if affine.blocker else blocking,
                               nodes=affine.nodes)
                continue
            _fold(graph, ctx, affine, linear)
            result.rewrites += 1
        if result.rewrites:
            result.notes.append(f"moved the scale/shift of "
                                f"{plural(result.rewrites, 'normalization')} "
                                f"into the linear layer after them")
        return result


# --------------------------------------------------------------------------- where affines end
def _decomposed_layernorms(graph: Graph, ctx: PassContext, result: PassResult) -> list[_Affine]:
    affines = []
    for match in find_matches(graph, LAYERNORM.named_pattern(), ctx, result):
        scale, shift = match["scale"].constant_value(), match["shift"].constant_value()
        if scale is None or shift is None:
            continue
        affines.append(_Affine(match["shift_add"], match["shift_add"].outputs[0],
                               _vector(scale), _vector(shift),
                               _bypass_decomposed(match["div"], match["scale_mul"],
                                                  match["shift_add"]),
                               nodes=(match["scale_mul"], match["shift_add"])))
    return affines


def _bypass_decomposed(div: Node, scale_mul: Node, shift_add: Node) -> Callable[[Graph], None]:
    def strip(graph: Graph) -> None:
        bypass_node(graph, shift_add, div.outputs[0])
        graph.remove_node(scale_mul)
    return strip


def _layernorm_ops(graph: Graph) -> list[_Affine]:
    affines = []
    for node in graph.nodes_of_type("LayerNormalization"):
        x, scale, shift = node.inputs[0], node.input(1), node.input(2)
        gamma = scale.constant_value() if scale is not None else None
        beta = shift.constant_value() if shift is not None else np.zeros(1)
        axis = node.attrs.get("axis", -1)
        if gamma is None or beta is None or not (axis == -1 or axis == (x.rank or 0) - 1):
            continue
        if np.all(gamma == 1) and not np.any(beta):
            continue  # nothing to move (already folded)
        affines.append(_Affine(node, node.outputs[0], _vector(gamma),
                               np.broadcast_to(_vector(beta), (gamma.size,)),
                               _unit_layernorm(node), nodes=(node,)))
    return affines


def _unit_layernorm(node: Node) -> Callable[[Graph], None]:
    def strip(graph: Graph) -> None:
        scale = node.inputs[1]
        node.replace_input(1, graph.add_initializer(f"{node.name}_unit_scale",
                                                    np.ones_like(scale.constant_value())))
        if node.input(2) is not None:
            node.replace_input(2, None)
    return strip


def _batchnorms(graph: Graph) -> list[_Affine]:
    affines = []
    for node in graph.nodes_of_type("BatchNormalization"):
        if node.attrs.get("training_mode", 0) or any(
                v is None or not v.is_constant for v in node.inputs[1:5]):
            continue
        s, t = batchnorm_affine(node)
        rank = node.inputs[0].rank
        blocker = None if rank == 2 else (
            f"BatchNormalization scales axis 1 of a rank-{rank if rank else '?'} tensor, but "
            f"the layer reading it contracts the last axis")
        affines.append(_Affine(node, node.outputs[0], s, t, _bypass(node), blocker, (node,)))
    return affines


def _bypass(node: Node) -> Callable[[Graph], None]:
    def strip(graph: Graph) -> None:
        bypass_node(graph, node, node.inputs[0])
    return strip


def _vector(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, dtype=np.float64).reshape(-1)


# --------------------------------------------------------------------------- the linear reader
def _linear_reader(value: Value, width: int) -> _Linear | _Refusal | None:
    """The one MatMul/Gemm reading ``value`` (perhaps through a Reshape that keeps the last
    axis), why it cannot take the affine, or None when no linear layer reads the value."""
    readers = _data_readers(value)
    if len(readers) == 1 and _keeps_last_axis(readers[0], width) and not value.is_graph_output:
        value = readers[0].outputs[0]
        readers = _data_readers(value)
    linears = [n for n in readers if _reads_as_activation(n, value)]
    if not linears:
        return None
    node = linears[0]
    others = [n for n in readers if n is not node]
    if value.is_graph_output or others:
        also = ", ".join(f"{n.op_type} '{n.name}'" for n in others) or "the model's outputs"
        return _Refusal(f"{value.name!r} is also read by {also}, which needs it with γ and β "
                        f"applied, so they cannot move into the {node.op_type}'s weights",
                        others[0] if others else None)
    weight = node.inputs[1]
    array = weight.constant_value()
    if array is None or array.ndim != 2:
        return _Refusal(f"the {node.op_type} weight {weight.name!r} is not a constant matrix",
                        node)
    in_axis = gemm_weight_axes(node)[0] if node.op_type == "Gemm" else 0
    if array.shape[in_axis] != width:
        return _Refusal(f"the {node.op_type} weight has {array.shape[in_axis]} rows, not "
                        f"{width}", node)
    sharing = [u for u in weight.users() if u is not node]
    if sharing:
        return _Refusal(f"the weight {weight.name!r} is also read by {sharing[0].op_type} "
                        f"'{sharing[0].name}': folding would need a second copy of it",
                        sharing[0])
    return _Linear(node, weight, in_axis, _bias_add(node))


def _data_readers(value: Value) -> list[Node]:
    """Readers that depend on the values, not just the shape (Shape nodes do not count)."""
    return [n for n in value.users() if n.op_type != "Shape"]


def _keeps_last_axis(node: Node, width: int) -> bool:
    """A Reshape that keeps every row of the last axis intact (it only merges leading axes)."""
    if node.op_type != "Reshape":
        return False
    before, after = node.inputs[0].shape, node.outputs[0].shape
    return bool(before and after and before[-1] == after[-1] == width)


def _reads_as_activation(node: Node, value: Value) -> bool:
    if node.domain != "" or node.input(0) is not value or value in node.inputs[1:]:
        return False
    return node.op_type == "MatMul" or (node.op_type == "Gemm"
                                        and not node.attrs.get("transA", 0))


def _bias_add(matmul: Node) -> Node | None:
    """The Add of a constant right after a MatMul (its only reader), if any."""
    if matmul.op_type != "MatMul" or matmul.outputs[0].is_graph_output:
        return None
    readers = matmul.outputs[0].users()
    if len(readers) != 1 or readers[0].op_type != "Add":
        return None
    add = readers[0]
    other = add.inputs[1] if add.inputs[0] is matmul.outputs[0] else add.inputs[0]
    return add if other.is_constant else None


def _no_bias_home(linear: _Linear, affine: _Affine) -> str | None:
    node = linear.node
    if node.op_type == "Gemm":
        c = node.input(2)
        if c is not None and not c.is_constant:
            return f"the Gemm's bias {c.name!r} is computed at run time"
        return None
    if linear.bias_add is None and np.any(affine.shift):
        return ("the MatMul has no constant bias to take the shift, and adding an Add would "
                "not save a node")
    return None


# --------------------------------------------------------------------------- the fold
def _fold(graph: Graph, ctx: PassContext, affine: _Affine, linear: _Linear) -> None:
    node, weight = linear.node, linear.weight
    array = weight.constant_value()
    folded = new_weight(graph, weight, scale_axis(array, affine.scale, linear.in_axis))
    through = affine.shift @ (array.astype(np.float64) if linear.in_axis == 0
                              else array.astype(np.float64).T)  # β·W, one entry per output
    if node.op_type == "MatMul":
        node.replace_input(1, folded)
        if linear.bias_add is not None:
            add = linear.bias_add
            index = 1 if add.inputs[0] is node.outputs[0] else 0
            bias = add.inputs[index]
            add.replace_input(index, new_weight(graph, bias, bias.constant_value() + through))
    else:
        _fold_into_gemm(graph, ctx, node, folded, through)
    affine.strip(graph)


def _fold_into_gemm(graph: Graph, ctx: PassContext, gemm: Node, folded: Value,
                    through: np.ndarray) -> None:
    """Gemm computes α·A·B + β·C: the shift enters as α·(shift·B), and C is pre-multiplied."""
    alpha, beta = float(gemm.attrs.get("alpha", 1.0)), float(gemm.attrs.get("beta", 1.0))
    c = gemm.input(2)
    old = beta * c.constant_value().astype(np.float64) if c is not None else 0.0
    bias = new_weight(graph, c or folded, old + alpha * through)
    replace_by_op(graph, ctx, [gemm], "Gemm", RULE, [gemm.inputs[0], folded, bias],
                  attrs={**gemm.attrs, "beta": 1.0}, name=gemm.name)
