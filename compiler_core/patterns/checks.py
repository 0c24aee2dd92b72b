"""Constraints a pattern element can carry: predicates with a description, and value checks.

A check says in words what it expects, so a failed check explains itself.  Checks that look at
other bindings ("same size as the weight's first dimension") are deferred until the whole
structure matched, because the binding they refer to may be made later in the walk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..ir import Value
from ..ir.dtypes import dtype_name
from .texts import describe_type, format_shape


@dataclass(frozen=True)
class Predicate:
    """A test on an attribute or constant value, with the words that describe it."""

    test: Callable[[Any], bool]
    text: str
    choices: tuple = ()   # one_of's values, so a message can name them (dtypes by name)

    def __call__(self, value: Any) -> bool:
        try:
            return bool(self.test(value))
        except (TypeError, ValueError, IndexError):
            return False


def predicate(test: Callable[[Any], bool], text: str) -> Predicate:
    """Wrap a test so explanations can say what it wanted: ``predicate(lambda a: a < 0, "< 0")``."""
    return Predicate(test, text)


def one_of(*choices: Any) -> Predicate:
    return Predicate(lambda v: v in choices, "one of " + ", ".join(map(str, choices)), choices)


@dataclass(frozen=True)
class Check:
    """A constraint on the value a pattern element matched (its dtype, rank, shape, ...)."""

    test: Callable[[Value, dict], bool]
    expected: str
    found: Callable[[Value, dict], str]
    deferred: bool = False   # needs the bindings of the whole match
    # the value that would pass, when one attribute or constant decides (a Wanted, or None)
    wanted: Callable[[Value], Any] | None = None

    def wanted_for(self, value: Value | None) -> Any:
        if self.wanted is None or value is None:
            return None
        try:
            return self.wanted(value)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):
            return None

    def holds(self, value: Value, bindings: dict) -> bool:
        try:
            return bool(self.test(value, bindings))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):
            return False


def _type_text(value: Value, _: dict) -> str:
    return describe_type(value)


def dtype_check(names: tuple[str, ...]) -> Check:
    return Check(lambda v, _: dtype_name(v.elem_type) in names,
                 "dtype " + " or ".join(names), lambda v, _: f"dtype {dtype_name(v.elem_type)}")


def rank_check(rank: int) -> Check:
    return Check(lambda v, _: v.rank == rank, f"rank {rank}",
                 lambda v, _: "unknown rank" if v.rank is None else f"rank {v.rank}")


def shape_check(shape: tuple) -> Check:
    """Dims given as ints or symbolic names must equal; None accepts any dimension."""
    def test(value: Value, _: dict) -> bool:
        return value.shape is not None and len(value.shape) == len(shape) and all(
            want is None or want == got for want, got in zip(shape, value.shape))
    return Check(test, f"shape {format_shape(shape)}", _type_text)


def same_size_check(name: str, axis: int | None) -> Check:
    """Element count equal to the element count of binding ``name`` (or to one of its dims)."""
    def reference(bindings: dict) -> int | None:
        other = bindings.get(name)
        other = other.outputs[0] if hasattr(other, "outputs") else other
        if not isinstance(other, Value):
            return None
        if axis is None:
            return other.numel()
        shape = other.shape
        dim = shape[axis] if shape is not None and -len(shape) <= axis < len(shape) else None
        return dim if isinstance(dim, int) else None

    def test(value: Value, bindings: dict) -> bool:
        size = _numel(value)
        return size is not None and size == reference(bindings)

    def found(value: Value, bindings: dict) -> str:
        size, ref = _numel(value), reference(bindings)
        known = "unknown" if ref is None else str(ref)
        return f"{'unknown' if size is None else size} elements ({name}: {known})"

    where = f"'{name}'" if axis is None else f"dimension {axis} of '{name}'"
    return Check(test, f"as many elements as {where}", found, deferred=True)


def custom_check(test: Callable[[Value, dict], bool], expected: str,
                 found: Callable[[Value, dict], str] | None, deferred: bool,
                 wanted: Callable[[Value], Any] | None = None) -> Check:
    return Check(test, expected, found or _type_text, deferred=deferred, wanted=wanted)


def _numel(value: Value) -> int | None:
    constant = value.constant_data()
    if constant is not None:
        return int(constant.size)
    return value.numel()
