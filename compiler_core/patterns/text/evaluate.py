"""Turning a checked pattern text into Pattern objects, by walking its tree (nothing runs).

Meaning of the text:
- A name is one element: used twice in a pattern, it is the same node (or value) twice — the
  LayerNorm's ``d = x - mean`` feeding both the square and the division.  To get two separate
  copies, call a definition twice.
- ``def name(params)`` is a pattern (reported under its name, its docstring as description)
  or, called from another definition, a helper whose body is built afresh per call.  Names
  starting with '_' are helpers only.
- In the pattern being built, each parameter is a wildcard bound under its name, and each
  name assigned in its body binds what it matched, unless bound explicitly already; so a
  match says which node is ``mean`` and which value is ``scale``.
- Top-level assignments are shared by every definition, and built afresh for each pattern
  (a pattern's elements are never shared with another pattern's).

Work is bounded: helper calls nest at most ``MAX_CALL_DEPTH`` deep, one pattern has at most
``MAX_ELEMENTS`` elements and nests at most ``MAX_DEPTH`` deep (the matcher, like this
builder, recurses once per level), and a whole text takes at most ``MAX_STEPS`` evaluation
steps (helpers that only compute numbers make no elements, yet can multiply), so a text that
multiplies or stacks helpers is refused, not built.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import operator
from typing import Any

from ..language import AnyValue, Pattern, Variadic, any_value, op
from ..matcher import compile_pattern
from .errors import Refusal
from .syntax import PatternSource
from .vocabulary import (BINARY_OPS, CONSTRUCTORS, LIMIT_INT_BITS, METHODS, NUMBER_CONSTANTS,
                         UNARY_OPS, VARIADIC_METHODS, Unexpected, is_number, kind_of, operand,
                         pattern_of)

MAX_CALL_DEPTH = 16
MAX_DEPTH = 100        # the library's deepest pattern nests about 20 levels
MAX_STEPS = 50_000     # expressions evaluated per text (legible texts need a few thousand)
MAX_ELEMENTS = 2_000   # GELU with both forms and three groupings has about 40
_NUMBER_OPS = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul,
               "Div": operator.truediv, "Pow": operator.pow}


class _Scope:
    """The names visible in one definition's body (its own, then the file's)."""

    def __init__(self, names: dict[str, Any], outer: _Scope | None = None):
        self.names, self.outer = names, outer

    def get(self, name: str) -> Any:
        scope = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.outer
        raise KeyError(name)

    def __contains__(self, name: str) -> bool:
        try:
            self.get(name)
        except KeyError:
            return False
        return True


class Builder:
    """Builds the patterns of one checked text; each ``build`` makes fresh elements."""

    def __init__(self, source: PatternSource):
        self.source = source
        self.elements = 0
        self.depth = 0       # helper calls under way
        self.nesting = 0     # expressions under evaluation, helper bodies included
        self.steps = 0       # expressions evaluated, for the whole text

    def build(self, name: str) -> Pattern:
        """Pattern ``name``, named and described; raises Refusal where the text is wrong."""
        try:
            return self._build(name)
        except Refusal as refusal:
            if refusal.node is None:   # a limit reached: point at the definition
                refusal.node = self.source.functions[name]
            raise

    def _build(self, name: str) -> Pattern:
        self.elements, self.depth, self.nesting = 0, 0, 0
        file_scope = _Scope({})
        for assignment in self.source.assignments:
            file_scope.names[assignment.targets[0].id] = self.expr(assignment.value, file_scope)
        function = self.source.functions[name]
        params = {arg.arg: self.count(any_value().bind(arg.arg))
                  for arg in function.args.posonlyargs + function.args.args}
        result = self.body(function, params, file_scope, binds=True)
        result = pattern_of(_as_value(result, function), f"what '{name}' returns")
        result = result.named(name)
        docstring = ast.get_docstring(function)
        if docstring:
            result = result.described_as(" ".join(docstring.split()))
        try:
            compiled = compile_pattern(result)
        except ValueError as err:
            raise Refusal(function, f"'{name}' cannot be matched: {err}",
                          "a variadic element that binds no name") from None
        if _depth(result) > MAX_DEPTH:
            raise Refusal(function, f"'{name}' nests more than {MAX_DEPTH} levels deep",
                          "a shallower pattern (each named part used inside another adds "
                          "its depth)")
        if compiled.root_ops is None:
            raise Refusal(function.body[-1], f"'{name}' would match every node: its result "
                                             "is not an op",
                          "a result that is an op (or alternatives of ops), e.g. "
                          "return Relu(x)")
        return result

    # -- definitions --------------------------------------------------------------------------
    def body(self, function: ast.FunctionDef, params: dict[str, Any], outer: _Scope,
             binds: bool) -> Any:
        scope = _Scope(dict(params), outer)
        statements = function.body[1:] if ast.get_docstring(function) is not None \
            else function.body
        for statement in statements[:-1]:
            target = statement.targets[0].id
            value = self.expr(statement.value, scope)
            if binds and isinstance(value, Pattern) and not value.binds:
                value = self.count(value.bind(target))
            scope.names[target] = value
        return self.expr(statements[-1].value, scope)

    def call_definition(self, node: ast.Call, name: str, scope: _Scope) -> Any:
        function = self.source.functions[name]
        params = [arg.arg for arg in function.args.posonlyargs + function.args.args]
        if node.keywords:
            raise Refusal(node.keywords[0].value, f"'{name}' takes its inputs by position",
                          f"{name}({', '.join(params)})")
        if len(node.args) != len(params):
            raise Refusal(node, f"'{name}' takes {len(params)} input(s), given "
                                f"{len(node.args)}", f"{name}({', '.join(params)})")
        values = [self.expr(arg, scope) for arg in node.args]
        if self.depth >= MAX_CALL_DEPTH:
            raise Refusal(node, f"definitions call each other more than {MAX_CALL_DEPTH} "
                                f"deep (does '{name}' call itself?)",
                          "definitions that do not call themselves")
        self.depth += 1
        try:
            return self.body(function, dict(zip(params, values)), _file_scope(scope),
                             binds=False)
        finally:
            self.depth -= 1

    # -- expressions --------------------------------------------------------------------------
    def expr(self, node: ast.expr, scope: _Scope) -> Any:
        self.nesting += 1
        self.steps += 1
        try:
            if self.steps > MAX_STEPS:
                raise Refusal(node, f"the text takes more than {MAX_STEPS:,} steps to build "
                                    "(helpers called inside helpers multiply)",
                              "fewer helper calls inside helper calls")
            if self.nesting > MAX_DEPTH:
                raise Refusal(node, f"the pattern nests more than {MAX_DEPTH} levels deep "
                                    "(helpers called inside helpers add up)",
                              "a shallower pattern")
            return self._expr(node, scope)
        finally:
            self.nesting -= 1

    def _expr(self, node: ast.expr, scope: _Scope) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node, scope)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.expr(item, scope) for item in node.elts]
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, scope)
        if isinstance(node, ast.BinOp):
            return self.binary(node, scope)
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        raise Refusal(node, f"{type(node).__name__} is not part of the pattern language",
                      "a pattern expression")

    def name(self, node: ast.Name, scope: _Scope) -> Any:
        if node.id in scope:
            return scope.get(node.id)
        if node.id in NUMBER_CONSTANTS:
            return NUMBER_CONSTANTS[node.id]
        if node.id in self.source.functions or node.id in CONSTRUCTORS or node.id[:1].isupper():
            raise Refusal(node, f"'{node.id}' is used without calling it",
                          f"a call: {node.id}(...)")
        raise Refusal(node, f"unknown name '{node.id}'", self.suggest(node.id, scope))

    def unary(self, node: ast.UnaryOp, scope: _Scope) -> Any:
        value = self.expr(node.operand, scope)
        kind = type(node.op).__name__
        if is_number(value):
            if kind == "Invert":
                raise Refusal(node, "~ of a number", "~pattern (NOT)")
            return -value if kind == "USub" else value
        if not isinstance(value, Pattern):
            raise Refusal(node.operand, f"{kind_of(value)} cannot be negated", "a pattern")
        if kind == "UAdd":
            return value
        if kind == "Invert":
            return self.count(~value)
        return self.count(op(UNARY_OPS[kind], value))

    def binary(self, node: ast.BinOp, scope: _Scope) -> Any:
        left, right = self.expr(node.left, scope), self.expr(node.right, scope)
        kind = type(node.op).__name__
        if is_number(left) and is_number(right) and kind in _NUMBER_OPS:
            return _number(node, kind, left, right)
        if kind in ("BitOr", "BitAnd"):
            sign = "|" if kind == "BitOr" else "&"
            for side, value in ((node.left, left), (node.right, right)):
                if not isinstance(value, Pattern):
                    raise Refusal(side, f"{kind_of(value)} on one side of '{sign}'",
                                  f"a pattern on both sides of '{sign}'")
            return self.count(left | right if kind == "BitOr" else left & right)
        try:
            inputs = [operand(left), operand(right)]
        except Unexpected as err:
            raise Refusal(node, err.problem, err.expected) from None
        if any(not isinstance(v, Pattern) for v in inputs):
            raise Refusal(node, f"'{_sign(kind)}' needs a pattern or a number on both sides",
                          "x * 0.5, a + b, x ** 2")
        return self.count(op(BINARY_OPS[kind], *inputs))

    def call(self, node: ast.Call, scope: _Scope) -> Any:
        func = node.func
        if isinstance(func, ast.Attribute):
            domain = _dotted_domain(func)
            if domain is not None and func.attr[:1].isupper() and domain.split(".")[0] \
                    not in scope:
                return self.apply(node, CONSTRUCTORS["op"], [func.attr], scope,
                                  extra={"domain": domain})
            return self.method(node, func, scope)
        name = func.id
        if name in scope:
            raise Refusal(func, f"'{name}' is {kind_of(scope.get(name))}, not something to "
                                "call", "an op (capitalized, e.g. Relu(x)), a definition or "
                                        "a constructor")
        if name in self.source.functions:
            return self.call_definition(node, name, scope)
        if name in CONSTRUCTORS:
            return self.apply(node, CONSTRUCTORS[name], [], scope)
        if name[:1].isupper():
            return self.apply(node, CONSTRUCTORS["op"], [name], scope)
        raise Refusal(func, f"unknown name '{name}'", self.suggest(name, scope))

    def method(self, node: ast.Call, func: ast.Attribute, scope: _Scope) -> Any:
        if isinstance(func.value, ast.Attribute):
            raise Refusal(func.value, "attribute access is not part of the pattern language",
                          "a method call on a pattern, e.g. x.bind(\"name\")")
        target = self.expr(func.value, scope)
        allowed = VARIADIC_METHODS if isinstance(target, Variadic) else METHODS
        if not isinstance(target, (Pattern, Variadic)) or func.attr not in allowed:
            known = ", ".join(sorted(allowed))
            raise Refusal(func, f"{kind_of(target)} has no method '{func.attr}'",
                          f"a pattern's method: {known}")
        return self.apply(node, METHODS[func.attr], [target], scope)

    def apply(self, node: ast.Call, function: Any, leading: list, scope: _Scope,
              extra: dict | None = None) -> Any:
        """Call a constructor or method of the vocabulary with the evaluated arguments."""
        args = leading + [self.expr(arg, scope) for arg in node.args]
        kwargs = {k.arg: self.expr(k.value, scope) for k in node.keywords}
        kwargs.update(extra or {})
        try:
            inspect.signature(function).bind(*args, **kwargs)
        except TypeError as err:   # wrong number or names of arguments
            raise Refusal(node, f"{err} in {_callee(node)}(...)",
                          _usage(_callee(node), function, len(leading))) from None
        try:
            result = function(*args, **kwargs)
        except Unexpected as err:
            raise Refusal(node, err.problem, err.expected) from None
        return self.count(result) if isinstance(result, (Pattern, Variadic)) else result

    # -- bookkeeping --------------------------------------------------------------------------
    def count(self, element: Any) -> Any:
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            raise Refusal(None, f"the pattern grows past {MAX_ELEMENTS:,} elements",
                          "fewer helper calls inside helper calls")
        return element

    def suggest(self, name: str, scope: _Scope) -> str:
        known = set(CONSTRUCTORS) | set(NUMBER_CONSTANTS) | set(self.source.functions)
        current: _Scope | None = scope
        while current is not None:
            known |= set(current.names)
            current = current.outer
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"'{close[0]}'? " if close else ""
        return (f"{hint}a name defined above, a parameter, a constructor (op, const, "
                f"any_value, ...), or an op type starting with a capital letter")


def _depth(root: Pattern) -> int:
    """Levels from the root to the deepest leaf, shared parts counted once (iterative: the
    pattern may be too deep to recurse, which is what is being checked)."""
    depth: dict[int, int] = {}
    stack: list[tuple[Pattern, bool]] = [(root, False)]
    while stack:
        element, children_done = stack.pop()
        if id(element) in depth:
            continue
        children = element.children()
        if children_done:
            depth[id(element)] = 1 + max((depth[id(c)] for c in children), default=0)
            continue
        stack.append((element, True))
        stack.extend((c, False) for c in children if id(c) not in depth)
    return depth[id(root)]


def _file_scope(scope: _Scope) -> _Scope:
    while scope.outer is not None:
        scope = scope.outer
    return scope


def _as_value(result: Any, function: ast.FunctionDef) -> Any:
    if isinstance(result, AnyValue):
        raise Refusal(function.body[-1], f"'{function.name}' returns a bare wildcard, which "
                                         "would match every node",
                      "a result that is an op, e.g. return Relu(x)")
    return result


def _dotted_domain(func: ast.Attribute) -> str | None:
    """'com.microsoft' for ``com.microsoft.Gelu``; None when the callee is not all names."""
    parts, value = [], func.value
    while isinstance(value, ast.Attribute):
        parts.append(value.attr)
        value = value.value
    if not isinstance(value, ast.Name):
        return None
    return ".".join([value.id, *reversed(parts)])


def _number(node: ast.BinOp, kind: str, left: Any, right: Any) -> int | float:
    """Arithmetic on two numbers, bounded: floats stay finite, integers small."""
    if kind == "Pow" and isinstance(left, int) and isinstance(right, int) and (
            right < 0 or right > LIMIT_INT_BITS):
        left, right = float(left), float(right)
    try:
        value = _NUMBER_OPS[kind](left, right)
    except ZeroDivisionError:
        raise Refusal(node, "division by zero", "a non-zero divisor") from None
    except OverflowError:
        raise Refusal(node, "the number is too large", "a number within float range") from None
    if isinstance(value, complex) or (isinstance(value, float) and not abs(value) < float("inf")):
        raise Refusal(node, "the result is not a finite real number", "a finite number")
    if isinstance(value, int) and value.bit_length() > LIMIT_INT_BITS:
        raise Refusal(node, "the integer is too large", f"an integer of at most "
                                                         f"{LIMIT_INT_BITS} bits")
    return value


def _sign(kind: str) -> str:
    return {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "Pow": "**",
            "MatMult": "@"}.get(kind, kind)


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id


def _usage(name: str, function: Any, skipped: int) -> str:
    """'bind(name)': the call as the text writes it (a method's target, an op's type left out)."""
    params = list(inspect.signature(function).parameters.values())[skipped:]
    shown = [("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "")
             + p.name + ("" if p.default is p.empty else f"={p.default!r}") for p in params]
    return f"{name}({', '.join(shown)})"
