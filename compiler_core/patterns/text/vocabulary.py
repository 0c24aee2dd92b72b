"""Every name a pattern text may use, and what each one does: the whole language, in one place.

Constructors and methods are thin adapters over ``compiler_core.patterns.language``: they take
only plain values (numbers, strings, lists, patterns), check them and say what was expected
when they are wrong, then call the real constructor.  Nothing outside these tables can be
reached from a text: no callable takes a function, no value gives access to Python objects.
"""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from ...ir.dtypes import dtype_name
from ..checks import Predicate, one_of
from ..language import (DEFAULT_TOLERANCE, OpPattern, Pattern, Variadic, any_of, any_value,
                        const, graph_input, op, optional, variadic)

# Operator sugar: ``a + b`` is Add(a, b), and so on.  ``|``, ``&``, ``~`` are the language's
# own OR, AND and NOT.
BINARY_OPS = {"Add": "Add", "Sub": "Sub", "Mult": "Mul", "Div": "Div", "Pow": "Pow",
              "MatMult": "MatMul"}
UNARY_OPS = {"USub": "Neg"}
NUMBER_CONSTANTS = {"pi": math.pi}
DTYPES = sorted({dtype_name(v) for v in TensorProto.DataType.values()} - {"?"})
LIMIT_INT_BITS = 64    # integers past this are refused (they would only be a typo)


class Unexpected(Exception):
    """A value of the wrong kind: ``problem`` and what was ``expected`` (the reader adds the
    position)."""

    def __init__(self, problem: str, expected: str):
        super().__init__(problem)
        self.problem, self.expected = problem, expected


def kind_of(value: Any) -> str:
    """How a value is called in messages."""
    if isinstance(value, Pattern):
        return f"a pattern ({value.label})"
    if isinstance(value, Variadic):
        return "a variadic group"
    if isinstance(value, Predicate):
        return f"a test ({value.text})"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, (int, float)):
        return f"the number {value:g}" if isinstance(value, float) else f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "None"
    if value is Ellipsis:
        return "..."
    return type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_numbers(value: Any) -> bool:
    """A number or a (nested) list of numbers: what a constant may hold."""
    if isinstance(value, list):
        return bool(value) and all(is_numbers(v) for v in value)
    return is_number(value)


# --------------------------------------------------------------------------- conversions
def operand(value: Any) -> Any:
    """An op's input: a pattern, a number or list of numbers (a constant ≈ it), None (an
    input that may be absent), ``...`` or ``variadic(...)`` (further inputs)."""
    if isinstance(value, (Pattern, Variadic)) or value is None or value is Ellipsis:
        return value
    if is_numbers(value):
        return constant(value)
    raise Unexpected(f"{kind_of(value)} cannot be an op's input",
                     "a pattern, a number, a list of numbers, None, ... or variadic(...)")


def constant(value: Any, tol: Any = DEFAULT_TOLERANCE) -> Pattern:
    if not is_number(tol) or tol < 0:
        raise Unexpected(f"tol={kind_of(tol)}", "a tolerance: a number ≥ 0, e.g. tol=1e-3")
    try:
        array = np.asarray(value, dtype=np.float64 if _has_float(value) else None)
    except ValueError:
        raise Unexpected("a list whose rows differ in length", "a rectangular list of "
                                                               "numbers") from None
    return const(array, tol=tol)


def _has_float(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return isinstance(value, float)


def attribute(name: str, value: Any) -> Any:
    """An attribute constraint's wanted value: a number, string, list of them, None (the
    attribute absent) or a test from one_of(...)."""
    if isinstance(value, Predicate) or value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return tuple(value)
    raise Unexpected(f"attribute {name}={kind_of(value)}",
                     "an attribute value: a number, a string, a list of them, None or "
                     "one_of(...)")


def pattern_of(value: Any, what: str) -> Pattern:
    if isinstance(value, Pattern):
        return value
    if is_numbers(value):
        return constant(value)
    raise Unexpected(f"{what} is {kind_of(value)}", "a pattern")


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise Unexpected(f"{what} is {kind_of(value)}", f"{what} as a non-empty string")
    return value


def _identifier(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise Unexpected(f"{what} is {kind_of(value)}",
                         f"{what} as a string that is a name, e.g. \"scale\"")
    return value


def _int(value: Any, what: str, minimum: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or (
            minimum is not None and value < minimum):
        floor = "" if minimum is None else f" ≥ {minimum}"
        raise Unexpected(f"{what} is {kind_of(value)}", f"{what} as a whole number{floor}")
    return value


def _op_types(value: Any, domain: str = "") -> str | tuple[str, ...]:
    """An op type or a list of them; in ONNX's own domain each must be an ONNX op (a typo
    would otherwise be a pattern that never matches)."""
    names = value if isinstance(value, list) and value else [value]
    if not all(isinstance(v, str) and v.isidentifier() for v in names):
        raise Unexpected(f"the op type is {kind_of(value)}",
                         "an op type as a string, e.g. op(\"Relu\", x), or a list of them")
    if domain in ("", "ai.onnx"):
        for name in names:
            if not onnx.defs.has(name):
                close = difflib.get_close_matches(name, _onnx_ops(), n=1)
                raise Unexpected(f"'{name}' is not an ONNX op",
                                 (f"'{close[0]}'? " if close else "") + "an ONNX op type, or "
                                 "an op of another domain: com.microsoft.Gelu(x) or "
                                 "op(\"Gelu\", x, domain=\"com.microsoft\")")
    return tuple(names) if isinstance(value, list) else value


@functools.cache
def _onnx_ops() -> list[str]:
    return sorted({schema.name for schema in onnx.defs.get_all_schemas() if not schema.domain})


# --------------------------------------------------------------------------- constructors
def make_op(op_type: Any, *operands: Any, domain: Any = "", commutative: Any = None,
            **attributes: Any) -> OpPattern:
    """``op("Relu", x)``, ``op(["Div", "Mul"], x, c)``, ``op("Gelu", x, domain="com.microsoft")``;
    keywords other than ``domain`` and ``commutative`` constrain attributes."""
    if not isinstance(domain, str):
        raise Unexpected(f"domain={kind_of(domain)}", "a domain as a string, e.g. "
                                                      "domain=\"com.microsoft\"")
    if commutative is not None and not isinstance(commutative, bool):
        raise Unexpected(f"commutative={kind_of(commutative)}", "commutative=True or False")
    inputs = [operand(v) for v in operands]
    try:
        return op(_op_types(op_type, domain), *inputs, domain=domain, commutative=commutative,
                  **{k: attribute(k, v) for k, v in attributes.items()})
    except TypeError:
        raise Unexpected("... or variadic(...) before the last input",
                         "... or variadic(...) only as an op's last input") from None


def make_const(value: Any = None, *, tol: Any = DEFAULT_TOLERANCE) -> Pattern:
    """``const()`` any constant, ``const(0.5)``, ``const([1, 2], tol=0)``."""
    if value is None:
        return const()
    if not is_numbers(value):
        raise Unexpected(f"const({kind_of(value)})", "const() or const(number or list of numbers)")
    return constant(value, tol)


def make_optional(pattern: Any) -> Pattern:
    return optional(pattern_of(pattern, "optional(...)'s argument"))


def make_variadic(element: Any = None, min_count: Any = 0) -> Variadic:
    if element is not None:
        element = pattern_of(element, "variadic(...)'s element")
    try:
        return variadic(element, _int(min_count, "min_count", 0))
    except ValueError:
        raise Unexpected("a bound element in variadic(...)",
                         "variadic(p) with an unbound p; bind the group: "
                         "variadic(p).bind(\"rest\")") from None


def make_any_of(*patterns: Any) -> Pattern:
    if len(patterns) < 2:
        raise Unexpected(f"any_of with {len(patterns)} pattern(s)", "two or more patterns")
    return any_of(*(pattern_of(p, "an alternative") for p in patterns))


def make_one_of(*choices: Any) -> Predicate:
    if not choices:
        raise Unexpected("one_of() without choices", "one_of(value, value, ...)")
    return one_of(*(attribute("one_of", c) for c in choices))


def sqrt(value: Any) -> float:
    if not is_number(value):
        raise Unexpected(f"sqrt of {kind_of(value)}",
                         "sqrt(number); for the op on a tensor write Sqrt(x)")
    if value < 0:
        raise Unexpected(f"sqrt({value}) of a negative number", "sqrt of a number ≥ 0")
    return math.sqrt(value)


CONSTRUCTORS: dict[str, Callable[..., Any]] = {
    "op": make_op, "any_value": any_value, "const": make_const, "graph_input": graph_input,
    "optional": make_optional, "variadic": make_variadic, "any_of": make_any_of,
    "one_of": make_one_of, "sqrt": sqrt,
}


# --------------------------------------------------------------------------------- methods
def _bind(target: Pattern | Variadic, name: Any) -> Pattern | Variadic:
    return target.bind(_identifier(name, "the binding name"))


def _tag(target: Pattern, name: Any, value: Any) -> Pattern:
    if not isinstance(value, (bool, int, float, str)):
        raise Unexpected(f"tag value {kind_of(value)}", "a number or a string")
    return target.tag(_identifier(name, "the tag name"), value)


def _has_dtype(target: Pattern, *names: Any) -> Pattern:
    unknown = [n for n in names if n not in DTYPES]
    if not names or unknown:
        problem = f"unknown dtype {unknown[0]!r}" if unknown else "has_dtype() without a dtype"
        raise Unexpected(problem, "dtype names such as \"float32\", \"float16\", \"int64\" "
                                  f"(all: {', '.join(DTYPES)})")
    return target.has_dtype(*names)


def _has_rank(target: Pattern, rank: Any) -> Pattern:
    return target.has_rank(_int(rank, "the rank", 0))


def _has_shape(target: Pattern, shape: Any) -> Pattern:
    if not isinstance(shape, list) or not all(
            d is None or isinstance(d, str) or (isinstance(d, int) and not isinstance(d, bool)
                                                and d >= 0) for d in shape):
        raise Unexpected(f"the shape is {kind_of(shape)}",
                         "a list of dimensions: numbers, names such as \"batch\", or None for "
                         "any, e.g. [None, 128, 768]")
    return target.has_shape(shape)


def _same_size_as(target: Pattern, name: Any, axis: Any = None) -> Pattern:
    return target.same_size_as(_identifier(name, "the binding name"),
                               None if axis is None else _int(axis, "the axis"))


def _described_as(target: Pattern, text: Any) -> Pattern:
    return target.described_as(_text(text, "the description"))


def _optionally_then(target: Pattern, op_type: Any, **attributes: Any) -> Pattern:
    return target.optionally_then(_op_types(op_type),
                                  **{k: attribute(k, v) for k, v in attributes.items()})


def _allow_external_uses(target: Pattern) -> Pattern:
    if not isinstance(target, OpPattern):
        raise Unexpected(f"allow_external_uses() on {kind_of(target)}", "an op, e.g. "
                                                                       "Relu(x).allow_external_uses()")
    return target.allow_external_uses()


def _output(target: Pattern, index: Any) -> Pattern:
    if not isinstance(target, OpPattern):
        raise Unexpected(f"output() of {kind_of(target)}", "an op, e.g. Split(x).output(1)")
    return target.output(_int(index, "the output index", 0))


# Methods of patterns (and the one method of a variadic group).
METHODS: dict[str, Callable[..., Any]] = {
    "bind": _bind, "tag": _tag, "has_dtype": _has_dtype, "has_rank": _has_rank,
    "has_shape": _has_shape, "same_size_as": _same_size_as, "described_as": _described_as,
    "optionally_then": _optionally_then, "allow_external_uses": _allow_external_uses,
    "output": _output,
}
VARIADIC_METHODS = frozenset({"bind"})

KNOWN_NAMES = frozenset(CONSTRUCTORS) | frozenset(NUMBER_CONSTANTS)
