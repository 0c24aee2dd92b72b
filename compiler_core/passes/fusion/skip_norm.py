"""What the skip normalizations (LayerNorm and RMSNorm) share: the residual Add, maybe with a
projection's bias Add absorbed, and the normalization of the sum become one node that also
returns the sum when the residual stream reads it on."""

from __future__ import annotations

from typing import ClassVar, Sequence

from ...ir import Graph, Node, Value
from ...patterns import Failure, Match
from ...wording import plural
from ..framework.base import PassContext
from ..framework.rules import Rule


class SkipNormRule(Rule):
    """A residual sum (library pattern ``residual_sum``) and the normalization that reads it ->
    ``fused_op``(input, skip, *the norm's parameters, bias), as onnxruntime's skip ops order
    their inputs; the body is the bias Add, the residual Add and the normalization.  Its
    results are the normalized sum and, when something else reads it (a pre-norm block's
    residual stream, or a graph output), the sum itself.

    A subclass names ``fused_op`` and ``params`` (the bindings of the norm's parameters, to
    check they are distinct values) and may override ``norm_operands`` to fill in parameters
    the op needs but the match lacks.
    """

    fused_op: ClassVar[str]
    params: ClassVar[tuple[str, ...]]

    def check(self, match: Match) -> str | Failure | None:
        if any(slot != "bias" for slot in self._repeated_slots(match)):
            return ("one value is read twice (as the residual and the normalized input, or as "
                    "two of the normalization's parameters); the fused op needs distinct inputs")
        return self.outside_reader_failure(match, match.nodes, self._results(match, every=True))

    def _repeated_slots(self, match: Match) -> list[str]:
        """The operand slots whose value an earlier slot already reads.  A repeated bias is
        mended in ``rewrite`` (exporters share one zero vector between a freshly initialized
        model's norm shifts and projection biases); any other repeat declines the fusion."""
        seen, repeated = set(), []
        for slot in ("input", "skip", *self.params, "bias"):
            value = match.bindings.get(slot)
            if value is not None:
                if value.name in seen:
                    repeated.append(slot)
                seen.add(value.name)
        return repeated

    def norm_operands(self, graph: Graph, match: Match) -> list[Value | None] | str:
        """The fused op's inputs between the skip and the bias, or why they cannot be made."""
        return [match.bindings.get(name) for name in self.params]

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        params = self.norm_operands(graph, match)
        if isinstance(params, str):
            return params
        bias = match.bindings.get("bias")
        if "bias" in self._repeated_slots(match):
            bias = self._own_bias(graph, match)
        operands = [match["input"], match["skip"], *params, bias]
        return self.fuse(graph, ctx, match.nodes, self.fused_op,
                         {"epsilon": float(match["epsilon"])}, operands=operands,
                         results=self._results(match, every=False))

    @staticmethod
    def _own_bias(graph: Graph, match: Match) -> Value:
        """A copy of the bias constant for the bias Add to read, so the fused node's bias
        slot is a value of its own (its body names each input once)."""
        bias, bias_add = match["bias"], match["bias_add"]
        copy = graph.add_initializer(bias.name, bias.constant_data())
        bias_add.replace_input(bias_add.inputs.index(bias), copy)
        return copy

    @staticmethod
    def _results(match: Match, every: bool) -> list[Value]:
        """The normalized sum, then the sum when it is read outside the match (or ``every``
        time: the values the fused node may return)."""
        total, result = match["skip_add"].outputs[0], match.root.outputs[0]
        inside = {node.id for node in match.nodes}
        read_on = total.is_graph_output or any(u.id not in inside for u in total.users())
        return [result, total] if every or read_on else [result]


def skip_norm_note(made: Sequence[Node], rule: SkipNormRule, norm: str) -> str:
    """The pass's note: how many pairs fused, how many return the sum or absorbed a bias."""
    bias_at = 2 + len(rule.params)  # the bias comes after input, skip and the norm's params
    summed = sum(1 for node in made if len(node.outputs) > 1)
    biased = sum(1 for node in made if len(node.inputs) > bias_at)
    pairs = plural(len(made), f"residual Add + {norm} pair")
    return (f"fused {pairs}, {summed} also returning the sum, {biased} absorbing a "
            f"projection's bias")
