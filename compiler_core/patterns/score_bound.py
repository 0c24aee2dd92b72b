"""How far an attempt can get at a site: an upper bound on a near miss's score, without trying.

A near miss's score is the share of the pattern's counted elements (ops, constants, graph
inputs) an attempt matched before it failed.  ``ScoreBound`` counts the elements that could
match at all if only op types and input positions mattered: no attribute, constant value,
domain, binding or consumer is looked at, an OR takes its best branch, an AND every part, a
commutative op its better operand order, and an element met twice counts twice.  Every
failure an attempt builds (in explain mode too, which matches a node's inputs past a wrong
attribute and tries both operand orders) holds a partial match that this count covers, so a
site whose bound stays below a score can never reach it.  A caller that keeps only near misses
from some score up (a compile's declines) skips those sites without changing what it keeps.

Counts are kept per (element, value), so the sites of one pattern over a graph share them:
each counts in time linear in the pattern's size.
"""

from __future__ import annotations

from typing import Iterator

from ..ir import Node, Value
from .failure import score_of
from .language import (AndPattern, AnyValue, ConstPattern, GraphInputPattern, NotPattern,
                       OpPattern, OptionalPattern, OrPattern, OutputOf, PartPattern, Pattern,
                       Variadic)

UNBOUNDED = float("inf")   # an element this module does not know: no bound


class ScoreBound:
    """The best score an attempt of ``pattern`` (rooted at its compiled form's root output)
    can reach at a site, for every site of one graph.

    A failure is scored against the size of the OR branches it was in, so an OR at the root
    (``skip_layernorm``: a LayerNormalization node, or the whole decomposed form) is bounded
    branch by branch: a few elements of a big branch are a small share of it."""

    def __init__(self, pattern: Pattern, root_output: int):
        self.pattern, self.root_output = pattern, root_output
        self._counts: dict[tuple[int, int], float] = {}

    def best_score(self, site: Node) -> float:
        return max(self._scores(site))

    def reaches(self, site: Node, floor: float) -> bool:
        """``best_score(site) >= floor``, without bounding the branches after the first that
        reaches it (an activation pattern's first branch, of four, at each of its sites)."""
        return any(score >= floor for score in self._scores(site))

    def _scores(self, site: Node) -> Iterator[float]:
        """The bound of each branch of an OR at the root, in order (one for other patterns)."""
        pattern = self.pattern
        if isinstance(pattern, OpPattern):
            yield self._score(self._node(pattern, site), pattern.size)
            return
        outputs = site.outputs
        yield from self._branches(pattern, outputs[self.root_output]
                                  if self.root_output < len(outputs) else None)

    def _branches(self, element: Pattern, value: Value | None) -> Iterator[float]:
        if isinstance(element, OrPattern):
            for branch in element.branches:
                yield from self._branches(branch, value)
        elif isinstance(element, PartPattern):
            yield from self._branches(element.inner, value)
        else:
            yield self._score(self._value(element, value), element.size)

    @staticmethod
    def _score(count: float, size: int) -> float:
        return 0.99 if count == UNBOUNDED else score_of(int(count), size)

    def _value(self, element: Pattern, value: Value | None) -> float:
        if value is None:
            return 0
        if type(element) is OpPattern:   # most elements: the producer's op type decides
            producer = value.producer
            if (producer is None or value.output_index != 0
                    or producer.op_type not in element.op_types):
                return 0
        key = (id(element), id(value))
        count = self._counts.get(key)
        if count is None:
            count = self._counts[key] = self._count(element, value)
        return count

    def _count(self, element: Pattern, value: Value) -> float:
        kind = type(element)
        if kind is OpPattern:
            return self._node(element, value.producer)
        if kind is OutputOf:
            producer = value.producer
            return 0 if producer is None or value.output_index != element.index else \
                self._node(element.node_pattern, producer)
        if kind is ConstPattern:
            return 1
        if kind is GraphInputPattern:
            return 1 if value.is_graph_input else 0
        if kind is OrPattern:
            return max(self._value(branch, value) for branch in element.branches)
        if kind is AndPattern:
            return sum(self._value(part, value) for part in element.parts)
        if kind is PartPattern or kind is OptionalPattern:
            return self._value(element.inner, value)
        if kind is AnyValue or kind is NotPattern:
            return 0
        return UNBOUNDED

    def _node(self, element: OpPattern, node: Node) -> float:
        if node.op_type not in element.op_types:
            return 0
        inputs, count_of = node.inputs, self._value
        present = len(inputs)
        if element.commutative:
            first, second = element.inputs
            a = inputs[0] if present > 0 else None
            b = inputs[1] if present > 1 else None
            count = max(count_of(first, a) + count_of(second, b),
                        count_of(first, b) + count_of(second, a))
        else:
            count = 0
            for pattern, value in zip(element.inputs, inputs):
                count += count_of(pattern, value)
        if isinstance(element.rest, Variadic):
            rest = element.rest.element
            for value in inputs[len(element.inputs):]:
                count += count_of(rest, value)
        return 1 + count
