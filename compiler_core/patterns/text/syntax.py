"""Reading a pattern text: parse it with ``ast`` and refuse anything outside the language.

The text is never compiled or executed.  ``ast.parse`` only builds a tree; this module walks
it and accepts a small set of statements and expressions (see ``docs/patterns.md``):

- a docstring (the file's description), ``NAME = expression`` (a named sub-pattern),
- ``def NAME(params):`` with an optional docstring, assignments and one final ``return``,
- in expressions: names, numbers, strings, lists, ``None``, ``...``, calls, method calls,
  ``+ - * / ** @`` (op sugar), ``| & ~`` (or, and, not) and unary minus.

Everything else (imports, attribute access other than a method call, lambdas,
comprehensions, subscripts, comparisons, double-underscore names, ...) is refused with its
line and column and what was expected there.  Size and nesting are bounded before any
evaluation, so a hostile text costs at most a parse of ``MAX_CHARS`` characters.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .errors import Refusal, SourceText
from .vocabulary import BINARY_OPS, KNOWN_NAMES, UNARY_OPS

MAX_CHARS = 64_000      # a pattern file is a page or two; this is twenty
MAX_DEPTH = 60          # expression nesting (GELU's tanh form is about 10 deep)
MAX_AST_NODES = 20_000
MAX_PATTERNS = 100

STATEMENT = "a def, an assignment NAME = pattern, or a docstring"
EXPRESSION = "a pattern expression: op calls such as Relu(x), names, numbers, + - * / **, | &"
_REFUSED = {   # what a refused construct is called, and what to write instead
    ast.Import: ("imports are not part of the pattern language", STATEMENT),
    ast.ImportFrom: ("imports are not part of the pattern language", STATEMENT),
    ast.Lambda: ("lambda is not part of the pattern language", EXPRESSION),
    ast.ListComp: ("comprehensions are not part of the pattern language", EXPRESSION),
    ast.SetComp: ("comprehensions are not part of the pattern language", EXPRESSION),
    ast.DictComp: ("comprehensions are not part of the pattern language", EXPRESSION),
    ast.GeneratorExp: ("comprehensions are not part of the pattern language", EXPRESSION),
    ast.Subscript: ("indexing is not part of the pattern language",
                    "an op's other output as op.output(1), e.g. Split(x).output(1)"),
    ast.Attribute: ("attribute access is not part of the pattern language",
                    "a method call such as x.bind(\"name\"), or a domain op such as "
                    "com.microsoft.Gelu(x)"),
    ast.Compare: ("comparisons are not part of the pattern language",
                  "| for alternatives, & for both, one_of(...) for an attribute"),
    ast.BoolOp: ("'and' / 'or' are not part of the pattern language",
                 "| for alternatives, & for both"),
    ast.IfExp: ("'if' expressions are not part of the pattern language", "| for alternatives"),
    ast.NamedExpr: ("':=' is not part of the pattern language", "NAME = pattern on its own line"),
    ast.JoinedStr: ("f-strings are not part of the pattern language", "a plain string"),
    ast.Dict: ("dicts are not part of the pattern language", "keyword arguments: Op(x, axis=1)"),
    ast.Set: ("sets are not part of the pattern language", "a list: [1, 2]"),
    ast.Starred: ("'*' unpacking is not part of the pattern language", "each argument written out"),
    ast.Await: ("await is not part of the pattern language", EXPRESSION),
    ast.Yield: ("yield is not part of the pattern language", "return pattern"),
    ast.YieldFrom: ("yield is not part of the pattern language", "return pattern"),
    ast.AugAssign: ("augmented assignment is not part of the pattern language",
                    "NAME = NAME + ..."),
    ast.AnnAssign: ("annotations are not part of the pattern language", "NAME = pattern"),
    ast.ClassDef: ("classes are not part of the pattern language", STATEMENT),
    ast.AsyncFunctionDef: ("async functions are not part of the pattern language", STATEMENT),
}


@dataclass
class PatternSource:
    """A checked text: its description, named sub-patterns and definitions, in file order."""

    text: SourceText
    description: str = ""
    assignments: list[ast.Assign] = field(default_factory=list)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)

    @property
    def pattern_names(self) -> list[str]:
        """The reported patterns: every def whose name does not start with '_'."""
        return [name for name in self.functions if not name.startswith("_")]


def read_source(text: str, name: str) -> PatternSource:
    """Parse and check ``text``; raise PatternTextError at the first thing outside the
    language."""
    source = SourceText(text, name)
    if len(text) > MAX_CHARS:
        raise source.at(1, 1, f"the text has {len(text):,} characters, more than "
                              f"{MAX_CHARS:,}", "a shorter pattern text")
    try:
        tree = ast.parse(text, filename=name, mode="exec")
    except SyntaxError as err:
        raise source.at(err.lineno or 1, err.offset or 1, f"syntax error: {err.msg}",
                        "Python expression syntax (see docs/patterns.md)") from None
    except (RecursionError, MemoryError, ValueError):
        raise source.at(1, 1, "the text nests too deeply to be read",
                        f"expressions nested at most {MAX_DEPTH} deep") from None
    try:
        _check_size(tree)
        checked = _Checker(source).module(tree)
    except Refusal as refusal:
        raise source.error(refusal) from None
    return checked


def _check_size(tree: ast.Module) -> None:
    """Bound the number of nodes and the nesting, iteratively (a deep tree must not recurse)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_AST_NODES:
            raise Refusal(node, f"the text has more than {MAX_AST_NODES:,} elements",
                          "a shorter pattern text")
        if depth > MAX_DEPTH:
            raise Refusal(node, f"expressions nest more than {MAX_DEPTH} deep",
                          "a flatter pattern: name the parts (part = ...) and use the names")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


class _Checker:
    def __init__(self, source: SourceText):
        self.result = PatternSource(source)
        self.top_names: set[str] = set()

    def module(self, tree: ast.Module) -> PatternSource:
        body = list(tree.body)
        doc = _docstring(body)
        if doc is not None:
            self.result.description = doc
            body = body[1:]
        for statement in body:
            if isinstance(statement, ast.FunctionDef):
                self.function(statement)
            elif isinstance(statement, ast.Assign):
                self.top_names.add(self.assignment(statement))
                self.result.assignments.append(statement)
            else:
                self.refuse_statement(statement)
        if not self.result.pattern_names:
            raise Refusal(None, "the text defines no pattern",
                          "at least one definition: def name(x): return Relu(x + 1)")
        if len(self.result.pattern_names) > MAX_PATTERNS:
            raise Refusal(None, f"more than {MAX_PATTERNS} patterns in one text",
                          "fewer patterns per file")
        return self.result

    # -- statements -------------------------------------------------------------------------
    def function(self, node: ast.FunctionDef) -> None:
        self.new_name(node, node.name)
        if node.name in self.result.functions:
            raise Refusal(node, f"'{node.name}' is defined twice", "one def per name")
        if node.decorator_list:
            raise Refusal(node.decorator_list[0], "decorators are not part of the pattern "
                                                  "language", "def name(x): ...")
        if node.returns is not None:
            raise Refusal(node.returns, "annotations are not part of the pattern language",
                          "def name(x): ...")
        args = node.args
        extra = (args.vararg or args.kwarg or (args.kwonlyargs or [None])[0]
                 or (args.defaults or [None])[0])
        if extra is not None:
            raise Refusal(extra, "only plain parameters are allowed",
                          "def name(x, y): ... (no defaults, *args or keywords)")
        params = set()
        for arg in args.posonlyargs + args.args:
            self.new_name(arg, arg.arg)
            if arg.annotation is not None:
                raise Refusal(arg.annotation, "annotations are not part of the pattern "
                                              "language", "a plain parameter name")
            if arg.arg in params:
                raise Refusal(arg, f"parameter '{arg.arg}' is repeated", "distinct names")
            params.add(arg.arg)
        body = list(node.body)
        if _docstring(body) is not None:
            body = body[1:]
        if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
            last = body[-1] if body else node
            raise Refusal(last, f"'{node.name}' does not end with 'return <pattern>'",
                          "the definition's last line: return <pattern>")
        for statement in body[:-1]:
            if isinstance(statement, ast.Assign):
                self.assignment(statement)
            elif isinstance(statement, ast.Return):
                raise Refusal(statement, "a return before the end of the definition",
                              "one return, as the last line")
            else:
                self.refuse_statement(statement)
        self.expression(body[-1].value)
        self.result.functions[node.name] = node

    def assignment(self, node: ast.Assign) -> str:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            raise Refusal(node, "only NAME = pattern assignments are allowed",
                          "one name on the left of '=': part = Relu(x)")
        name = node.targets[0].id
        self.new_name(node.targets[0], name)
        if name in self.result.functions:
            raise Refusal(node, f"'{name}' is already a definition", "a new name")
        self.expression(node.value)
        return name

    def refuse_statement(self, node: ast.stmt) -> None:
        if type(node) in _REFUSED:
            problem, expected = _REFUSED[type(node)]
            raise Refusal(node, problem, expected)
        if isinstance(node, ast.Expr):
            raise Refusal(node, "an expression on its own line does nothing",
                          "NAME = expression, or return expression at the end of a def")
        keyword = type(node).__name__.lower()
        raise Refusal(node, f"'{keyword}' statements are not part of the pattern language",
                      STATEMENT)

    def new_name(self, node: ast.AST, name: str) -> None:
        _plain_name(node, name)
        if name in KNOWN_NAMES:
            raise Refusal(node, f"'{name}' is a name of the pattern language",
                          "another name (the language's names cannot be redefined)")

    # -- expressions ------------------------------------------------------------------------
    def expression(self, root: ast.expr) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Call):
                self.call(node)
                stack.extend(node.args)
                stack.extend(k.value for k in node.keywords)
                if isinstance(node.func, ast.Attribute):
                    stack.extend(self.callee_parts(node.func))
                continue
            if isinstance(node, ast.Name):
                _plain_name(node, node.id)
            elif isinstance(node, ast.Constant):
                if not isinstance(node.value, (int, float, str, bool, type(None),
                                               type(Ellipsis))):
                    raise Refusal(node, f"{type(node.value).__name__} literals are not part "
                                        "of the pattern language", "a number or a string")
            elif isinstance(node, ast.BinOp):
                if type(node.op).__name__ not in BINARY_OPS and not isinstance(
                        node.op, (ast.BitOr, ast.BitAnd)):
                    raise Refusal(node, f"the operator {_operator(node.op)} is not part of "
                                        "the pattern language", "+ - * / ** @ | &")
                stack.extend((node.left, node.right))
            elif isinstance(node, ast.UnaryOp):
                if type(node.op).__name__ not in UNARY_OPS and not isinstance(
                        node.op, (ast.UAdd, ast.Invert)):
                    raise Refusal(node, "'not' is not part of the pattern language",
                                  "~pattern for NOT")
                stack.append(node.operand)
            elif isinstance(node, (ast.List, ast.Tuple)):
                stack.extend(node.elts)
            elif type(node) in _REFUSED:
                problem, expected = _REFUSED[type(node)]
                raise Refusal(node, problem, expected)
            else:
                raise Refusal(node, f"{type(node).__name__} is not part of the pattern "
                                    "language", EXPRESSION)

    def call(self, node: ast.Call) -> None:
        if not isinstance(node.func, (ast.Name, ast.Attribute)):
            raise Refusal(node.func, "only names and methods can be called",
                          "Op(...), helper(...) or pattern.method(...)")
        if isinstance(node.func, ast.Name):
            _plain_name(node.func, node.func.id)
        for keyword in node.keywords:
            if keyword.arg is None:
                raise Refusal(keyword.value, "'**' unpacking is not part of the pattern "
                                             "language", "keyword arguments written out")
            _plain_name(keyword, keyword.arg)

    def callee_parts(self, func: ast.Attribute) -> list[ast.expr]:
        """What to check inside ``a.b.C(...)`` / ``x.bind(...)``: the attribute names are
        checked here; the object of a method call is an expression like any other."""
        _plain_name(func, func.attr)
        value = func.value
        while isinstance(value, ast.Attribute):   # a dotted domain: com.microsoft.Gelu
            _plain_name(value, value.attr)
            value = value.value
        return [value]


def _docstring(body: list[ast.stmt]) -> str | None:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return " ".join(body[0].value.value.split())
    return None


def _plain_name(node: ast.AST, name: str) -> None:
    if "__" in name:
        raise Refusal(node, f"'{name}': names with double underscores are refused",
                      "a name without '__'")


def _operator(op: ast.operator) -> str:
    return {"Mod": "%", "FloorDiv": "//", "LShift": "<<", "RShift": ">>",
            "BitXor": "^"}.get(type(op).__name__, type(op).__name__)
