"""Cleanup passes that remove nodes which compute nothing at inference time."""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node
from ...patterns import Pattern, any_value, op
from ...wording import plural
from ..framework.base import Pass, PassContext, PassResult
from ..framework.rewrite import bypass_or_decline
from ..framework.pass_registry import register_pass


def dropout() -> Pattern:
    """Any Dropout node.

    Why: at inference Dropout is the identity; removing it is the first thing every
    inference compiler does (check that its mask output is unused).

    Bindings: ``dropout`` (node), ``input``.
    """
    return op("Dropout", any_value().bind("input"), ...).bind("dropout").described_as(
        "Any Dropout node (the identity at inference).").named("dropout")


def identity() -> Pattern:
    """Any Identity node.

    Why: Identity copies its input; rewiring its consumers to the input removes a copy.

    Bindings: ``identity`` (node), ``input``.
    """
    return op("Identity", any_value().bind("input")).bind("identity").described_as(
        "Any Identity node (a copy that rewiring removes).").named("identity")


@register_pass
class EliminateDropout(Pass):
    """Remove Dropout nodes: at inference a Dropout passes its input through unchanged.

    Dropout only randomises during training.  Exporters sometimes keep it, even with
    `training_mode` set to true, which would make the deployed model random; a compiler for
    inference replaces its output by its input.  If something reads the optional mask output,
    the mask becomes an all-true tensor of the input's shape (nothing was dropped).
    """

    name = "eliminate_dropout"
    family = "cleanup"

    def patterns(self) -> list[Pattern]:
        return [dropout()]

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        training = 0
        for node in graph.nodes_of_type("Dropout"):
            source, mask = node.inputs[0], node.outputs[1] if len(node.outputs) > 1 else None
            if mask is not None and mask.is_graph_output:
                result.decline(node, "dropout_is_identity",
                               f"its mask {mask.name!r} is a graph output")
                continue
            if mask is not None and mask.uses and graph.can_replace_uses(node.outputs[0], source):
                _replace_mask(graph, ctx, node)
            flag = _training_mode(node)
            if bypass_or_decline(graph, node, source, "dropout_is_identity", result):
                training += flag is True
                if flag is None:
                    result.notes.append(f"{node.name}: training_mode is a run-time input; "
                                        f"assumed false (inference)")
        if training:
            result.notes.append(f"{plural(training, 'Dropout node')} had training_mode true: "
                                f"removed with inference semantics (output = input, "
                                f"nothing dropped)")
        return result


def _training_mode(node: Node) -> bool | None:
    """True/False when known at compile time, None when it is a run-time input."""
    flag = node.input(2)
    if flag is None:
        return False
    value = flag.constant_value()
    return None if value is None else bool(np.asarray(value).reshape(-1)[0])


def _replace_mask(graph: Graph, ctx: PassContext, node: Node) -> None:
    """Readers of the mask read an all-true tensor shaped like the input instead."""
    provenance = ctx.provenance("dropout_mask_all_true", [node])
    shape = graph.add_node("Shape", [node.inputs[0]], 1, provenance=provenance,
                           name=f"{node.name}/mask_shape", order=node.order)
    fill = graph.add_node("ConstantOfShape", [shape.outputs[0]], 1,
                          attrs={"value": np.ones(1, dtype=np.bool_)}, provenance=provenance,
                          name=f"{node.name}/mask", order=node.order)
    graph.replace_all_uses(node.outputs[1], fill.outputs[0])


@register_pass
class EliminateIdentity(Pass):
    """Remove Identity nodes: readers of an Identity's output read its input directly.

    Exporters emit Identity to give a value a second name — often an alias of a weight shared
    by two layers (an "Identity of an initializer").  The alias costs a node and hides the
    sharing; after this pass both layers visibly read the same weight.
    """

    name = "eliminate_identity"
    family = "cleanup"
    ensures = ("no_removable_identity",)

    def patterns(self) -> list[Pattern]:
        return [identity()]

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        for node in graph.nodes_of_type("Identity"):
            bypass_or_decline(graph, node, node.inputs[0], "identity_alias", result)
        return result
