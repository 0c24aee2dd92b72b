"""Nodes that a simplifier removes or merges: no-ops and pairs that undo each other."""

from __future__ import annotations

from ...ir import Value
from ..language import Pattern, any_value, op
from ..texts import format_attr
from .registry import register


def _perm(node, rank: int | None) -> tuple | None:
    """A Transpose's perm; omitted means 'reverse the dimensions'."""
    perm = node.attrs.get("perm")
    if perm is None and rank is not None:
        perm = tuple(reversed(range(rank)))
    return perm


def _perms(value: Value) -> tuple[tuple | None, tuple | None]:
    second = value.producer
    first = second.inputs[0].producer
    rank = first.inputs[0].rank
    return _perm(first, rank), _perm(second, rank)


def _perms_cancel(value: Value, _: dict) -> bool:
    first, second = _perms(value)
    return (first is not None and second is not None and len(first) == len(second)
            and all(first[second[i]] == i for i in range(len(second))))


def _perms_found(value: Value, _: dict) -> str:
    first, second = _perms(value)
    return f"perm {format_attr(second)} after perm {format_attr(first)}"


@register("transpose_pair")
def transpose_pair() -> Pattern:
    """Two Transposes in a row whose permutations cancel (the second undoes the first).

    Why: both are pure data movement; removing the pair saves two full copies of the tensor.
    Layout passes leave such pairs behind all the time.

    Bindings: ``first``, ``second`` (the Transpose nodes, in data-flow order), ``input``.
    """
    first = op("Transpose", any_value().bind("input")).bind("first")
    return op("Transpose", first).bind("second").where(
        _perms_cancel, "perms that cancel", _perms_found, needs_bindings=False).described_as(
        "Two Transposes in a row whose permutations cancel each other.")


@register("reshape_chain")
def reshape_chain() -> Pattern:
    """A Reshape of a Reshape (the first one's output read by nothing else).

    Why: only the last shape matters, so the first Reshape can go (when the second shape has
    no 0 entries that copy a dimension of the intermediate: the pass checks ``shape``).

    Bindings: ``first``, ``second`` (the Reshape nodes, in data-flow order), ``input``,
    ``shape`` (the second Reshape's shape input).
    """
    first = op("Reshape", any_value().bind("input"), any_value()).bind("first")
    return op("Reshape", first, any_value().bind("shape")).bind("second").described_as(
        "A Reshape whose input is another Reshape used by nothing else.")


@register("dropout")
def dropout() -> Pattern:
    """Any Dropout node.

    Why: at inference Dropout is the identity; removing it is the first thing every
    inference compiler does (check that its mask output is unused).

    Bindings: ``dropout`` (node), ``input``.
    """
    return op("Dropout", any_value().bind("input"), ...).bind("dropout").described_as(
        "Any Dropout node (the identity at inference).")


@register("identity")
def identity() -> Pattern:
    """Any Identity node.

    Why: Identity copies its input; rewiring its consumers to the input removes a copy.

    Bindings: ``identity`` (node), ``input``.
    """
    return op("Identity", any_value().bind("input")).bind("identity").described_as(
        "Any Identity node (a copy that rewiring removes).")
