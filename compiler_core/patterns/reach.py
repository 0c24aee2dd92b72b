"""Which sites could match more than the pattern's root: an early reject for explanations.

``explain`` reports a near miss only where more than the root matched.  Past the root, an
attempt counts an element only after one of the elements right below the root (through ORs,
ANDs, named parts and optional inputs) has matched one of the site's inputs: an op of the
right type, a constant, a graph input.  ``reach_test`` builds, once per pattern, the test of
exactly that: a site that fails it would fail at its root, so explaining it is skipped
without changing any report.  On a long chain of Mul and Add this spares thousands of
attempts of RMSNorm's many spellings, none of which gets past the root there.

The test may say yes where the attempt then fails early (positions of commutative operands
are not told apart, domains are not compared); it never says no where an attempt would
count an element below the root.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..ir import Node, Value
from .language import (AndPattern, AnyValue, ConstPattern, GraphInputPattern, NotPattern,
                       OpPattern, OptionalPattern, OrPattern, OutputOf, PartPattern, Pattern,
                       Variadic)


@dataclass
class _ValueTest:
    """What an input must be for one of the elements right below the root to match it."""

    ops: set[str] = field(default_factory=set)                 # produced by (output 0)
    outputs: set[tuple[str, int]] = field(default_factory=set)  # (op type, output index)
    constant: bool = False
    graph_input: bool = False
    anything: bool = False      # an element this module does not know: accept every input

    def add(self, element: Pattern) -> None:
        if isinstance(element, OpPattern):
            self.ops |= element.op_types
        elif isinstance(element, OutputOf):
            self.outputs |= {(t, element.index) for t in element.node_pattern.op_types}
        elif isinstance(element, ConstPattern):
            self.constant = True
        elif isinstance(element, GraphInputPattern):
            self.graph_input = True
        elif isinstance(element, (OrPattern, AndPattern)):
            for child in element.children():
                self.add(child)
        elif isinstance(element, (PartPattern, OptionalPattern)):
            self.add(element.inner)
        elif not isinstance(element, (AnyValue, NotPattern)):   # neither ever counts
            self.anything = True

    def empty(self) -> bool:
        return not (self.ops or self.outputs or self.constant or self.graph_input
                    or self.anything)

    def accepts(self, value: Value) -> bool:
        if self.anything:
            return True
        producer = value.producer
        if producer is None:
            return (self.constant and value.stored is not None) or (
                self.graph_input and value.is_graph_input)
        op_type = producer.op_type
        return ((value.output_index == 0 and op_type in self.ops)
                or (op_type, value.output_index) in self.outputs
                or (self.constant and (value.stored is not None or op_type == "Constant")))


def _root_ops(pattern: Pattern) -> list[OpPattern] | None:
    """The op elements that match the site itself, or None when the root is something else
    (an AND of several elements at the root, a wildcard, a constant)."""
    if isinstance(pattern, OpPattern):
        return [pattern]
    if isinstance(pattern, OutputOf):
        return [pattern.node_pattern]
    if isinstance(pattern, PartPattern):
        return _root_ops(pattern.inner)
    if isinstance(pattern, OrPattern):
        found = [_root_ops(branch) for branch in pattern.branches]
        return None if any(f is None for f in found) else [e for f in found for e in f]
    return None


def _input_tests(element: OpPattern) -> tuple[list[_ValueTest], _ValueTest]:
    """One test per fixed input position (both operands' in either position when the op is
    commutative), and the test of further inputs (a variadic rest)."""
    tests = []
    for child in element.inputs:
        test = _ValueTest()
        test.add(child)
        tests.append(test)
    if element.commutative:
        both = _ValueTest()
        for child in element.inputs:
            both.add(child)
        tests = [both, both]
    rest = _ValueTest()
    if isinstance(element.rest, Variadic):
        rest.add(element.rest.element)
    return tests, rest


def reach_test(pattern: Pattern) -> Callable[[Node], bool] | None:
    """A test of a site: False only where an attempt rooted there cannot match anything below
    the root.  None when the pattern's root is not made of op elements (no test)."""
    roots = _root_ops(pattern)
    if roots is None:
        return None
    plans = []
    for element in roots:
        tests, rest = _input_tests(element)
        kept = [(i, t) for i, t in enumerate(tests) if not t.empty()]
        if kept or not rest.empty():
            plans.append((element.op_types, kept, len(tests), None if rest.empty() else rest))

    def reaches(node: Node) -> bool:
        inputs = node.inputs
        for op_types, kept, fixed, rest in plans:
            if node.op_type not in op_types:
                continue
            for index, test in kept:
                value = inputs[index] if index < len(inputs) else None
                if value is not None and test.accepts(value):
                    return True
            if rest is not None and any(v is not None and rest.accepts(v)
                                        for v in inputs[fixed:]):
                return True
        return False
    return reaches
