"""The pattern language: small objects that read like the graph they match.

    x = any_value().bind("x")
    gelu_erf = op("Mul", op("Mul", x, op("Add", op("Erf", op("Div", x, const(1.4142))),
                                          const(1.0))), const(0.5))

Elements: ``op`` (op type(s), inputs, domain, attribute constraints), ``any_value``, ``const``
(initializers and Constant outputs, with value and tolerance or a predicate), ``graph_input``,
``optional`` (an absent input), ``variadic`` (any number of further inputs), ``|`` (OR, every
branch's failure is kept), ``&`` (AND), ``~`` (NOT).  Any element can be bound to a name,
tagged, or constrained (dtype, rank, shape, "same size as" another binding, a custom test).
Patterns are immutable: a modifier returns a new element and leaves the one it was called on
as it was, so a pattern that has matched once can never be changed under its compiled form.
One object used twice in a pattern means "the same node/value in both places" (the layer
norm's Sub feeding both Pow and Div): bind first, then use the bound element everywhere.

Each element matches itself against a value (``match_value``); a failure returns False and, in
explain mode only, leaves a Failure on the state saying where and why.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from functools import cached_property
from types import EllipsisType
from typing import Any, Callable, ClassVar, Iterable

import numpy as np

from ..ir import Node, Value
from ..ir.dtypes import dtype_text, is_dtype_attribute
from .checks import (Check, Predicate, custom_check, dtype_check, rank_check, same_size_check,
                     shape_check)
from ..records import to_json
from .failure import Wanted, best_of
from .schema_defaults import attribute_default
from .state import MatchState, Path, input_subject, parent_node
from .texts import describe_value, format_array, format_attr, format_number

COMMUTATIVE_OPS = frozenset({"Add", "Mul", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor",
                             "Equal", "BitwiseAnd", "BitwiseOr", "BitwiseXor"})
DEFAULT_TOLERANCE = 1e-4
_UNSET = object()
# What compile_pattern writes on elements (matching reads them on the hot path), and the label
# an element keeps once asked (every failure an explanation records names it); a modified
# copy is a new element and gets its own.
_COMPILE_MARKS = ("_compiled", "shared", "size", "memo_ok", "label")


class Pattern(ABC):
    """Base of every pattern element: naming, constraints, operators and the match protocol."""

    binds: tuple[tuple[str, Callable[[Any], Any] | None], ...] = ()
    tags: tuple[tuple[str, Any], ...] = ()
    checks: tuple[Check, ...] = ()
    description: str | None = None
    title: str | None = None
    anchor: tuple["Pattern", int] | None = None  # see ``anchored``
    counted = False          # counts towards the score (ops, constants, inputs; not wildcards)
    has_extras = False       # has a binding, tags or checks to apply after a structural match
    shared = False           # set by compile: occurs more than once in its pattern
    size = 0                 # set by compile: counted elements below (an OR: its least branch)
    memo_ok = False          # set by compile: its result depends only on the value it sees

    # -- modifiers (each returns a new element; the original is left as it was) ----------------
    def _with(self, **changes: Any) -> "Pattern":
        """A shallow copy with ``changes``: children are shared, compile-time marks are not."""
        new = copy.copy(self)
        for mark in _COMPILE_MARKS:
            new.__dict__.pop(mark, None)
        new.__dict__.update(changes)
        return new

    def bind(self, name: str, extract: Callable[[Any], Any] | None = None) -> "Pattern":
        """Return what this element matched under ``name`` (a Node for ops, else a Value),
        or ``extract(it)`` when given (e.g. a constant's float).  May be called again to
        bind more names (a LayerNormalization node and its epsilon)."""
        return self._with(binds=self.binds + ((name, extract),), has_extras=True)

    @property
    def binding(self) -> str | None:
        """The first name this element is bound to (how descriptions refer to it)."""
        return self.binds[0][0] if self.binds else None

    def tag(self, name: str, value: Any) -> "Pattern":
        """Bind a fixed value when this element matches (which OR branch won: form="erf")."""
        return self._with(tags=self.tags + ((name, value),), has_extras=True)

    def _add_check(self, check: Check) -> "Pattern":
        return self._with(checks=self.checks + (check,), has_extras=True)

    def has_dtype(self, *names: str) -> "Pattern":
        return self._add_check(dtype_check(names))

    def has_rank(self, rank: int) -> "Pattern":
        return self._add_check(rank_check(rank))

    def has_shape(self, shape: Iterable) -> "Pattern":
        return self._add_check(shape_check(tuple(shape)))

    def same_size_as(self, name: str, axis: int | None = None) -> "Pattern":
        """As many elements as binding ``name`` (or as its dimension ``axis``)."""
        return self._add_check(same_size_check(name, axis))

    def where(self, test: Callable[[Value, dict], bool], expected: str,
              found: Callable[[Value, dict], str] | None = None, *,
              needs_bindings: bool = True,
              wanted: Callable[[Value], Any] | None = None) -> "Pattern":
        """A custom test ``test(value, bindings)`` of the matched value (an op's output 0).
        With ``needs_bindings`` it runs once the whole structure matched; without, right away
        (an early reject).  ``wanted(value)``: the one attribute or constant value that would
        pass (a ``Wanted``), when one does."""
        return self._add_check(custom_check(test, expected, found, deferred=needs_bindings,
                                            wanted=wanted))

    def described_as(self, text: str) -> "Pattern":
        return self._with(description=text)

    def part(self, name: str, *, group: bool = False) -> "Pattern":
        """This element as a named part of a bigger pattern: a failure inside it names the
        part before what was expected and found, so a near miss of a big pattern says which
        of its pieces did not fit ("key › rotary: ...").  A stage ("rotary", "mask") is named
        only when it is the innermost part; a group ("key") is named with the parts inside."""
        return PartPattern(self, name, group)

    def anchored(self, shape: "Pattern", reach: int = 4) -> "Pattern":
        """Explain every occurrence of ``shape`` that no match covers, even where the pattern
        fails right at its root.  ``shape`` is a small pattern saying "this is clearly meant
        to be one" (attention: a Softmax between two MatMuls); the pattern's attempts rooted
        up to ``reach`` consumers below the occurrence are made and the best is reported."""
        return self._with(anchor=(shape, reach))

    def named(self, title: str) -> "Pattern":
        return self._with(title=title)

    def optionally_then(self, op_type: str | tuple[str, ...], **attrs: Any) -> "Pattern":
        """This element, or this element followed by ``op_type`` (a trailing activation)."""
        return OrPattern((op(op_type, self, **attrs), self))

    def __or__(self, other: "Pattern") -> "Pattern":
        return OrPattern(_branches(self) + _branches(other))

    def __and__(self, other: "Pattern") -> "Pattern":
        return AndPattern((self, other))

    def __invert__(self) -> "Pattern":
        return NotPattern(self)

    # -- description ----------------------------------------------------------------------------
    @property
    @abstractmethod
    def label(self) -> str:
        """A few words naming the element, used in paths and 'expected' texts."""

    def text(self, seen: set[int]) -> str:
        """The element in functional notation; a repeated element is named, not repeated."""
        if id(self) in seen:
            return self.binding or f"the same {self.label}"
        seen.add(id(self))
        body = self._text(seen)
        if self.checks:
            body += " [" + "; ".join(c.expected for c in self.checks) + "]"
        return body

    def _text(self, seen: set[int]) -> str:
        return self.binding or self.label

    def describe(self) -> str:
        """One plain sentence saying what the pattern matches."""
        if self.description:
            return self.description
        return f"Matches {self.text(set())}."

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.text(set())}>"

    def children(self) -> tuple["Pattern", ...]:
        return ()

    # -- matching -------------------------------------------------------------------------------
    @abstractmethod
    def match_value(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        """Does ``value`` match this element?  Records a failure in ``st`` when explaining."""

    def subject(self, path: Path | None, value: Value | None) -> str:
        return input_subject(path)

    def _finish(self, matched: Any, value: Value | None, st: MatchState,
                path: Path | None) -> bool:
        """Apply checks, the binding and tags after the structure matched."""
        for check in self.checks:
            if check.deferred:
                st.deferred.append((self, check, value, path, st.part_chain()))
            elif value is None or not check.holds(value, st.bindings):
                return st.explain and st.fail(
                    path, self.label, self.subject(path, value), check.expected,
                    "no value" if value is None else check.found(value, st.bindings),
                    _failed_at(value, path), wanted=check.wanted_for(value))
        for name, extract in self.binds:
            if not bind(st, name, extract(matched) if extract else matched, path, self):
                return False
        for name, tag_value in self.tags:
            if not bind(st, name, tag_value, path, self):
                return False
        return True


def bind(st: MatchState, name: str, obj: Any, path: Path | None, owner: Pattern) -> bool:
    """Bind ``name`` (for ``owner``); a second binding of the same name must be the very
    same thing."""
    existing = st.bindings.get(name, _UNSET)
    if existing is _UNSET:
        st.remember(st.bindings, name, obj)
        return True
    if existing is obj or (_is_plain(existing) and existing == obj):
        return True
    return st.explain and st.fail(
        path, owner.label, input_subject(path),
        f"the same value as '{name}' ({_name_of(existing)})", _name_of(obj), parent_node(path))


def _is_plain(obj: Any) -> bool:
    return isinstance(obj, (int, float, str, bool, tuple))


def _name_of(obj: Any) -> str:
    if isinstance(obj, Node):
        return f"{obj.op_type} '{obj.name}'"
    if isinstance(obj, Value):
        return f"'{obj.name}'"
    return "nothing" if obj is None else format_attr(obj)


def _failed_at(value: Value | None, path: Path | None) -> Node | None:
    """The node to point at for a value-level failure: its producer, else the consumer."""
    if value is not None and value.producer is not None:
        return value.producer
    return parent_node(path)


def _branches(pattern: Pattern) -> tuple[Pattern, ...]:
    if isinstance(pattern, OrPattern) and not pattern.has_extras and not pattern.description:
        return pattern.branches
    return (pattern,)


# ---------------------------------------------------------------------------------- operators
class OpPattern(Pattern):
    """A node of one of ``op_types`` whose inputs match ``inputs`` (output 0 as a value)."""

    counted = True

    def __init__(self, op_types: tuple[str, ...], inputs: tuple, domain: str,
                 attrs: dict[str, Any], commutative: bool | None):
        self.op_types = frozenset(op_types)
        self.op_order = op_types
        self.domain = "" if domain == "ai.onnx" else domain
        fixed = list(inputs)
        self.rest: Variadic | EllipsisType | None = None
        if fixed and (fixed[-1] is Ellipsis or isinstance(fixed[-1], Variadic)):
            self.rest = fixed.pop()
        self.inputs: tuple[Pattern, ...] = tuple(_as_pattern(p) for p in fixed)
        self.attrs = tuple(attrs.items())
        if commutative is None:
            commutative = len(self.inputs) == 2 and self.op_types <= COMMUTATIVE_OPS
        self.commutative = commutative and len(self.inputs) == 2
        self.allow_external = False

    def allow_external_uses(self) -> "OpPattern":
        """Let this intermediate's outputs be read outside the match too (the pass keeps them)."""
        return self._with(allow_external=True)

    def output(self, index: int) -> "Pattern":
        """Output ``index`` of this very node (for multi-output ops such as Split)."""
        return OutputOf(self, index)

    @cached_property
    def label(self) -> str:
        names = [op_type if not self.domain else f"{self.domain}.{op_type}"
                 for op_type in self.op_order]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]

    def _text(self, seen: set[int]) -> str:
        args = [p.text(seen) for p in self.inputs]
        if self.rest is Ellipsis:
            args.append("...")
        elif isinstance(self.rest, Variadic):
            args.append(self.rest.text(seen))
        args += [_expected_attr(name, want, self.op_types) for name, want in self.attrs]
        body = f"{self.label}({', '.join(args)})"
        return f"{body} as {self.binding}" if self.binding else body

    def children(self) -> tuple[Pattern, ...]:
        rest = (self.rest.element,) if isinstance(self.rest, Variadic) else ()
        return self.inputs + rest

    def subject(self, path: Path | None, value: Value | None) -> str:
        return value.producer.op_type if value is not None and value.producer else self.label

    def match_value(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        node = value.producer if value is not None else None
        if node is None or value.output_index != 0:
            return st.explain and st.fail(path, self.label, input_subject(path), self.label,
                                          describe_value(value), parent_node(path))
        return self.match_node(node, st, path)

    def match_node(self, node: Node, st: MatchState, path: Path | None) -> bool:
        if st.budget is not None:
            st.budget.step()
        if self.shared:
            seen = st.memo.get(id(self))
            if seen is not None:
                if seen is node:
                    return True
                return st.explain and st.fail(
                    path, self.label, input_subject(path),
                    f"the same {self.label} as before ('{seen.name}')",
                    f"{node.op_type} '{node.name}'", node)
        if node.op_type not in self.op_types or (node.domain != self.domain and not (
                node.domain == "ai.onnx" and not self.domain)):
            return st.explain and st.fail(path, self.label, input_subject(path), self.label,
                                          node.qualified_op, node)
        if node.id in st.node_owner:
            return st.explain and st.fail(
                path, node.op_type, node.op_type, "a node not matched elsewhere in the pattern",
                f"{node.op_type} '{node.name}' matched twice", node)
        if st.claimed is not None and node.id in st.claimed:
            return st.explain and st.fail(
                path, node.op_type, node.op_type, "a node outside other matches",
                f"{node.op_type} '{node.name}' already in a match", node)
        for name, want in self.attrs:
            got = node.attrs.get(name, _UNSET)
            if got is _UNSET:
                got = attribute_default(node.op_type, node.domain, name)
            if not (want(got) if isinstance(want, Predicate) else _attr_equal(got, want)):
                return st.explain and self._attribute_miss(node, st, path, name, want, got)
        st.add_node(node, self, path)
        st.matched += 1
        if self.inputs or self.rest is not None:
            if not self._match_inputs(node, st, path):
                return False
        if self.has_extras:
            out = node.outputs[0] if node.outputs else None
            if not self._finish(node, out, st, path):
                return False
        if self.shared:
            st.remember(st.memo, id(self), node)
        return True

    def _attribute_miss(self, node: Node, st: MatchState, path: Path, name: str, want: Any,
                        got: Any) -> bool:
        """Explaining an attribute that differs: the node's inputs are matched anyway (then
        undone), so the failure's score counts the op and as much of its inputs as fits.  An
        OR of an op's attribute form and its input form (opset 18 moved ReduceMean's axes to
        an input) then explains with the form the graph really has."""
        mark = st.mark()
        st.add_node(node, self, path)
        st.matched += 1
        if self.inputs or self.rest is not None:
            self._match_inputs(node, st, path)
        matched, extra_size = st.matched, st.extra_size
        st.reset(mark)
        # The failure reads these; whoever backtracks from it resets them.
        st.matched, st.extra_size = matched, extra_size
        wanted = None if isinstance(want, Predicate) else Wanted(
            "attribute", node.name, to_json(want), attribute=name)
        return st.fail(path, node.op_type, node.op_type,
                       _expected_attr(name, want, (node.op_type,)),
                       f"{name} = {_attr_text(node.op_type, name, got)}", node, wanted=wanted)

    def _match_inputs(self, node: Node, st: MatchState, path: Path | None) -> bool:
        inputs = node.inputs
        count = len(self.inputs)
        if self.rest is None and len(inputs) > count and any(
                v is not None for v in inputs[count:]):
            present = sum(v is not None for v in inputs)
            return st.explain and st.fail(path, node.op_type, node.op_type, f"{count} inputs",
                                          f"{present} inputs", node)
        if self.commutative:
            if not self._match_either_order(node, st, path):
                return False
        else:
            explain = st.explain
            for index, pattern in enumerate(self.inputs):
                value = inputs[index] if index < len(inputs) else None
                if not pattern.match_value(value, st, path + ((node, index),) if explain else None):
                    return False
        if isinstance(self.rest, Variadic):
            return self.rest.match_values(node, count, st, path)
        return True

    def _match_either_order(self, node: Node, st: MatchState, path: Path | None) -> bool:
        """Try the written operand order, then the swapped one.  Failures of self-contained
        operands are remembered per (pattern, value), so nested swaps stay polynomial.

        Explaining, both operands are tried in both orders, and the order with fewer failing
        operands (then more matched) explains the failure: a swap that fails on both sides
        says less than the order whose only failure is the real difference."""
        first, second = self.inputs
        a, b = node.input(0), node.input(1)
        mark = st.mark()
        if not st.explain:
            if _match_operand(first, a, st, None) and _match_operand(second, b, st, None):
                return True
            st.reset(mark)
            return _match_operand(first, b, st, None) and _match_operand(second, a, st, None)
        path_a, path_b = path + ((node, 0),), path + ((node, 1),)
        attempts = []
        for pairs in (((first, a, path_a), (second, b, path_b)),
                      ((first, b, path_b), (second, a, path_a))):
            st.reset(mark)
            failures = []
            for pattern, value, step in pairs:
                if not _match_operand(pattern, value, st, step):
                    failures.append(st.last)
            if not failures:
                return True
            attempts.append((len(failures), -st.matched, failures[0]))
        st.last = min(attempts, key=lambda attempt: attempt[:2])[2]
        return False


def _match_operand(pattern: Pattern, value: Value | None, st: MatchState,
                   path: Path | None) -> bool:
    """Match one operand of a commutative op, remembering failures of self-contained operands
    (no shared elements or repeated names inside, so the outcome depends on the value alone).
    One exception is accepted for the polynomial bound: a failure caused only by a node that an
    abandoned operand order had matched elsewhere is remembered too."""
    if not pattern.memo_ok or value is None:
        return pattern.match_value(value, st, path)
    key = (id(pattern), id(value))
    if key in st.fail_memo:
        st.last = st.fail_memo[key]
        return False
    if pattern.match_value(value, st, path):
        return True
    st.fail_memo[key] = st.last
    return False


class ValuePattern(Pattern):
    """An element that judges a value (not a node): shared uses, extras and memo handled here,
    the element's own rule in ``_match``."""

    # -- matching -------------------------------------------------------------------------------
    def match_value(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        if self.shared:
            seen = st.memo.get(id(self), _UNSET)
            if seen is not _UNSET:
                if seen is value:
                    return True
                return st.explain and st.fail(
                    path, self.label, input_subject(path),
                    f"the same value as the other use of {self.binding or self.label} "
                    f"({_name_of(seen)})", _name_of(value), _failed_at(value, path))
        if not self._match(value, st, path):
            return False
        if self.has_extras and not self._finish(value, value, st, path):
            return False
        if self.shared:
            st.remember(st.memo, id(self), value)
        return True

    @abstractmethod
    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        """Match this element against ``value`` (the subclass's own rule)."""



class OutputOf(ValuePattern):
    """Output ``index`` of the node an OpPattern matches (the same node wherever it is used)."""

    def __init__(self, node_pattern: OpPattern, index: int):
        self.node_pattern, self.index = node_pattern, index

    @cached_property
    def label(self) -> str:
        return f"{self.node_pattern.label} output {self.index}"

    def _text(self, seen: set[int]) -> str:
        return f"output {self.index} of {self.node_pattern.text(seen)}"

    def children(self) -> tuple[Pattern, ...]:
        return (self.node_pattern,)

    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        node = value.producer if value is not None else None
        if node is None or value.output_index != self.index:
            return st.explain and st.fail(path, self.label, input_subject(path), self.label,
                                          describe_value(value), _failed_at(value, path))
        return self.node_pattern.match_node(node, st, path)


class Variadic:
    """Any number (at least ``min_count``) of further inputs, each matching ``element``."""

    def __init__(self, element: Pattern, min_count: int):
        if element.binding is not None:
            raise ValueError("bind the variadic group, not its element")
        # The element is matched once per input, so it must not bind or be shared (the
        # compiler checks its sub-patterns too).
        self.element, self.min_count = element, min_count
        self.binding: str | None = None

    def bind(self, name: str) -> "Variadic":
        """Bind the list of values the group matched (a new group; this one is unchanged)."""
        new = copy.copy(self)
        new.binding = name
        return new

    def text(self, seen: set[int]) -> str:
        return f"{self.min_count}+ × {self.element.text(seen)}"

    def match_values(self, node: Node, start: int, st: MatchState, path: Path | None) -> bool:
        values = node.inputs[start:]
        if len(values) < self.min_count:
            return st.explain and st.fail(
                path, node.op_type, node.op_type, f"at least {start + self.min_count} inputs",
                f"{len(node.inputs)}", node)
        for offset, value in enumerate(values):
            step = path + ((node, start + offset),) if st.explain else None
            if not self.element.match_value(value, st, step):
                return False
        if self.binding is not None:
            return bind(st, self.binding, list(values), path, self.element)
        return True


# ------------------------------------------------------------------------------------ leaves
class AnyValue(ValuePattern):
    """Any value that is present (a wildcard)."""

    @property
    def label(self) -> str:
        return "any value"

    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        if value is None:
            return st.explain and st.fail(path, self.label, input_subject(path), "a value",
                                          "no input", parent_node(path))
        return True


class ConstPattern(ValuePattern):
    """A value known before run time (initializer or Constant output), optionally ≈ ``value``."""

    counted = True

    def __init__(self, value: Any, tolerance: float, test: Predicate | None):
        self.value = None if value is None else np.asarray(value)
        self.tolerance, self.test = tolerance, test

    @cached_property
    def label(self) -> str:
        if self.value is not None:
            return f"constant ≈ {format_array(self.value)}"
        return f"constant {self.test.text}" if self.test is not None else "constant"

    @property
    def expected(self) -> str:
        if self.value is not None and self.value.dtype.kind == "f":
            return f"{self.label} (±{format_number(self.tolerance)})"
        return self.label.replace("≈ ", "") if self.value is not None else self.label

    def _text(self, seen: set[int]) -> str:
        return f"{self.binding}: {self.label}" if self.binding else self.label

    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        data = value.constant_value() if value is not None else None
        if data is None or (self.value is not None and not self._close(data)) or (
                self.test is not None and not self.test(data)):
            return st.explain and st.fail(path, self.label, input_subject(path), self.expected,
                                          describe_value(value), _failed_at(value, path),
                                          wanted=self._wanted(value, data))
        st.matched += 1
        return True

    def _wanted(self, value: Value | None, data: np.ndarray | None) -> Wanted | None:
        """The constant to set for a match: this pattern's value, where the graph holds a
        constant of another value (one number fills it; otherwise as many as it holds)."""
        if self.value is None or data is None or value is None or data.dtype.kind not in "fiu":
            return None
        if self.value.size == 1:
            return Wanted("tensor", value.name, self.value.reshape(-1)[0].item())
        if self.value.size == data.size:
            return Wanted("tensor", value.name, self.value.reshape(-1).tolist())
        return None

    def _close(self, data: np.ndarray) -> bool:
        want = self.value
        if data.size != want.size or data.dtype.kind not in "fiub":
            return False
        if data.dtype.kind == "f" and data.dtype.itemsize < 4:
            # A float16 constant holds the wanted value rounded to float16 (√2 is 1.4140625):
            # compare with that rounding, not with the exact value.
            want = want.astype(data.dtype)
        if want.size == 1:  # the common case, without numpy's vector machinery
            return abs(float(data.reshape(-1)[0]) - float(want.reshape(-1)[0])) <= self.tolerance
        return bool(np.allclose(data.reshape(-1).astype(np.float64),
                                want.reshape(-1).astype(np.float64),
                                rtol=0.0, atol=self.tolerance))


class GraphInputPattern(ValuePattern):
    """A graph input (a value the model's caller provides)."""

    counted = True

    @property
    def label(self) -> str:
        return "graph input"

    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        if value is None or not value.is_graph_input:
            return st.explain and st.fail(path, self.label, input_subject(path), self.label,
                                          describe_value(value), _failed_at(value, path))
        st.matched += 1
        return True


# ----------------------------------------------------------------------------- combinators
class _Modified(ValuePattern):
    """One ``inner`` pattern with a modifier: said as ``word`` before its label, written with
    ``sign`` before its text."""

    word: ClassVar[str]
    sign: ClassVar[str]

    def __init__(self, inner: Pattern):
        self.inner = inner

    @cached_property
    def label(self) -> str:
        return f"{self.word} {self.inner.label}"

    def _text(self, seen: set[int]) -> str:
        return f"{self.sign}{self.inner.text(seen)}"

    def children(self) -> tuple[Pattern, ...]:
        return (self.inner,)


class OptionalPattern(_Modified):
    """An input that may be absent; when present it must match ``inner``."""

    word, sign = "optional", "optional "

    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        return value is None or self.inner.match_value(value, st, path)


class OrPattern(ValuePattern):
    """The first branch that matches; when none does, every branch's own failure is kept."""

    def __init__(self, branches: tuple[Pattern, ...]):
        self.branches = branches

    @cached_property
    def label(self) -> str:
        labels = list(dict.fromkeys(b.label for b in self.branches))
        return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " or " + labels[-1]

    def _text(self, seen: set[int]) -> str:
        return "(" + " | ".join(b.text(seen) for b in self.branches) + ")"

    def children(self) -> tuple[Pattern, ...]:
        return self.branches

    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        mark = st.mark()
        failures = []
        for branch in self.branches:
            if st.explain:
                st.extra_size = mark[4] + branch.size - self.size
            if branch.match_value(value, st, path):
                return True
            if st.explain:
                failures.append(st.last)
            st.reset(mark)
        if st.explain:
            st.last = best_of(failures).with_alternatives(tuple(failures))
        return False


class AndPattern(ValuePattern):
    """A value that matches every part."""

    def __init__(self, parts: tuple[Pattern, ...]):
        self.parts = parts

    @property
    def label(self) -> str:
        return " and ".join(p.label for p in self.parts)

    def _text(self, seen: set[int]) -> str:
        return "(" + " & ".join(p.text(seen) for p in self.parts) + ")"

    def children(self) -> tuple[Pattern, ...]:
        return self.parts

    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        return all(part.match_value(value, st, path) for part in self.parts)


class PartPattern(ValuePattern):
    """``inner`` under a name: failures inside it say which part of the pattern failed."""

    def __init__(self, inner: Pattern, name: str, group: bool):
        self.inner, self.name, self.group = inner, name, group

    @property
    def label(self) -> str:
        return self.inner.label

    def _text(self, seen: set[int]) -> str:
        return self.inner.text(seen)

    def children(self) -> tuple[Pattern, ...]:
        return (self.inner,)

    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        if not st.explain:
            return self.inner.match_value(value, st, path)
        st.parts.append((self.name, self.group))
        try:
            return self.inner.match_value(value, st, path)
        finally:
            st.parts.pop()


class NotPattern(_Modified):
    """A value that does not match ``inner`` (binds nothing)."""

    word, sign = "not", "~"

    def _match(self, value: Value | None, st: MatchState, path: Path | None) -> bool:
        mark, explain = st.mark(), st.explain
        st.explain = False
        try:
            matched = self.inner.match_value(value, st, path)
        finally:
            st.explain = explain
            st.reset(mark)
        if matched:
            return st.explain and st.fail(path, self.label, input_subject(path), self.label,
                                          describe_value(value), _failed_at(value, path))
        return True


# ----------------------------------------------------------------------------- constructors
def op(op_type: str | tuple[str, ...], *inputs: Any, domain: str = "",
       commutative: bool | None = None, **attrs: Any) -> OpPattern:
    """A node of ``op_type`` (or any of a tuple of types) with these inputs.

    Inputs are patterns; a trailing ``...`` accepts any further inputs, a trailing
    ``variadic(p)`` requires each further input to match ``p``; without either, extra present
    inputs fail the match.  Keyword arguments constrain attributes: a plain value must equal
    the attribute (the ONNX default counts when it is omitted), a ``predicate`` must hold.
    Add, Mul and friends with two inputs match in either operand order.
    """
    op_types = (op_type,) if isinstance(op_type, str) else tuple(op_type)
    return OpPattern(op_types, inputs, domain, attrs, commutative)


def any_value() -> AnyValue:
    return AnyValue()


def const(value: Any = None, *, tol: float = DEFAULT_TOLERANCE,
          where: Predicate | None = None) -> ConstPattern:
    """A constant; with ``value`` it must have as many elements, each within ``tol``."""
    return ConstPattern(value, tol, where)


def graph_input() -> GraphInputPattern:
    return GraphInputPattern()


def optional(pattern: Pattern) -> OptionalPattern:
    return OptionalPattern(pattern)


def variadic(element: Pattern | None = None, min_count: int = 0) -> Variadic:
    return Variadic(element if element is not None else AnyValue(), min_count)


def any_of(*patterns: Pattern) -> Pattern:
    """OR of several patterns (same as ``a | b | c``)."""
    return OrPattern(tuple(b for p in patterns for b in _branches(p)))


def _as_pattern(item: Any) -> Pattern:
    if isinstance(item, Pattern):
        return item
    if item is None:
        return OptionalPattern(AnyValue())  # a None placeholder: an input that may be absent
    raise TypeError(f"not a pattern: {item!r}")


def _attr_equal(got: Any, want: Any) -> bool:
    if isinstance(got, np.ndarray) or isinstance(want, np.ndarray):
        return got is not None and np.array_equal(np.asarray(got), np.asarray(want))
    if isinstance(want, list):
        want = tuple(want)
    if isinstance(got, float) or isinstance(want, float):
        try:
            return abs(float(got) - float(want)) <= 1e-6 * max(1.0, abs(float(want)))
        except (TypeError, ValueError):
            return False
    return got == want


def _expected_attr(name: str, want: Any, op_types: tuple[str, ...] = ()) -> str:
    """'to = float32', 'to one of float16, bfloat16': an element type by its name."""
    if not isinstance(want, Predicate):
        return f"{name} = {_attr_text(op_types, name, want)}"
    if want.choices and is_dtype_attribute(op_types, name):
        return f"{name} one of " + ", ".join(dtype_text(c) for c in want.choices)
    return f"{name} {want.text}"


def _attr_text(op_types, name: str, value: Any) -> str:
    return dtype_text(value) if is_dtype_attribute(op_types, name) else format_attr(value)
