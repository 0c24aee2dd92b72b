"""Finding a pattern in a graph: ``match_all`` (non-overlapping), ``match_at`` and ``explain_at``.

Speed comes from three things, tinygrad-style: candidate roots come from an index by op type
(a graph is scanned once for all patterns); the first comparison at each element is a cheap
op-type or constant test; and fast matching builds no explanation at all — an attempt that
fails just returns False.  ``explain_at`` re-runs one site in explain mode when someone asks.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable, Collection, Iterable

import numpy as np

from ..ir import Graph, Node, Value
from .budget import MatchBudget, paced
from .failure import Failure
from .language import AndPattern, OpPattern, OrPattern, OutputOf, PartPattern, Pattern
from .reach import reach_test
from .records import MatchRecord, NodeRef
from .state import MatchState


@dataclass
class Match:
    """One occurrence: the root node, every node the pattern covers, and the bindings."""

    pattern_name: str
    root: Node
    nodes: list[Node]
    bindings: dict[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.bindings[name]

    def record(self) -> MatchRecord:
        return MatchRecord(NodeRef.of(self.root), tuple(NodeRef.of(n) for n in self.nodes),
                           {k: binding_ref(v) for k, v in self.bindings.items()})


def binding_ref(obj: Any) -> Any:
    """A binding as JSON: node and value names, plain numbers and strings as they are."""
    if isinstance(obj, (Node, Value)):
        return obj.name
    if isinstance(obj, (list, tuple)):
        return [binding_ref(o) for o in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj


@dataclass
class CompiledPattern:
    """What the matcher precomputes once per pattern."""

    pattern: Pattern
    name: str
    size: int                        # elements that count towards a failure's score
    binding_names: tuple[str, ...]
    root_ops: frozenset[str] | None  # op types the root can have (None: any node)
    root_output: int
    # Cheap tests of a node, without any match state (None: no test).  ``prefilter``: does
    # its op type fit the root and do its inputs come from the op types the root's inputs
    # want (explain's sites); ``match_test``: the same in every alternative of the root,
    # ORs inside ORs and named parts opened, and for the inputs' producers in turn
    # (``MATCH_TEST_DEPTH``; a necessary condition of a match); ``reaches``: can an attempt
    # there match more than the root (``reach``)?
    prefilter: Callable[[Node], bool] | None
    # The root op types whose sites ``prefilter`` can accept on a graph with nodes of the
    # given op types only (None: every root op type); ``match_test_ops`` the same for
    # ``match_test``
    prefilter_ops: "SiteOps | None"
    match_test: Callable[[Node], bool] | None
    match_test_ops: "SiteOps | None"
    reaches: Callable[[Node], bool] | None

    def sites(self, index: "NodeIndex", tested: "SiteOps | None") -> list[Node]:
        """The candidate roots in ``index``, in execution order; with ``tested`` (a test's
        ``*_ops``), only those of the op types that test can accept on this graph: a test
        that wants an input made by a Gemm says no at every site of a graph without one, so
        none is visited."""
        if tested is None:
            return index.candidates(self.root_ops)
        return index.candidates(tested(index.by_op.keys()) & self.root_ops)


def compile_pattern(pattern: Pattern) -> CompiledPattern:
    """Mark shared elements, find the root op types and the size; cached on the pattern
    (configure a pattern fully before its first match)."""
    cached = getattr(pattern, "_compiled", None)
    if cached is not None:
        return cached
    objects, counts = _walk(pattern)
    for key, element in objects.items():
        element.shared = counts.get(key, 0) > 1
    names: dict[str, set[int]] = {}
    for key, element in objects.items():
        for name in _names_bound_by(element):
            names.setdefault(name, set()).add(key)
    repeated = {name for name, owners in names.items() if len(owners) > 1}
    counted: dict[int, frozenset[int]] = {}
    contained: dict[int, bool] = {}
    for element in objects.values():
        element.size = len(_counted_below(element, counted))
        element.memo_ok = _self_contained(element, repeated, contained)
        if isinstance(element, OpPattern) and hasattr(element.rest, "element"):
            _check_variadic_element(element.rest.element, objects)
    compiled = CompiledPattern(pattern, pattern.title or "pattern", pattern.size,
                               tuple(names), _root_ops(pattern),
                               pattern.index if isinstance(pattern, OutputOf) else 0,
                               *_prefilter(pattern.branches if isinstance(pattern, OrPattern)
                                           else (pattern,)),
                               *_prefilter(_root_branches(pattern), MATCH_TEST_DEPTH),
                               reach_test(pattern))
    pattern._compiled = compiled
    return compiled


def _walk(root: Pattern) -> tuple[dict[int, Pattern], dict[int, int]]:
    """Every element once, in pre-order (so binding names come out root first), and how many
    times each is referenced."""
    objects, counts = {}, {}

    def visit(element: Pattern) -> None:
        objects[id(element)] = element
        for child in element.children():
            counts[id(child)] = counts.get(id(child), 0) + 1
            if id(child) not in objects:
                visit(child)
    visit(root)
    return objects, counts


def _subtree(element: Pattern) -> set[int]:
    seen, stack = {id(element)}, [element]
    while stack:
        for child in stack.pop().children():
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return seen


def _self_contained(element: Pattern, repeated: set[str], memo: dict[int, bool]) -> bool:
    """No element at or below ``element`` is shared or binds a name bound elsewhere too (its
    outcome then depends on the value it sees alone).  Memoized per element."""
    known = memo.get(id(element))
    if known is None:
        known = memo[id(element)] = not (
            element.shared or set(_names_bound_by(element)) & repeated) and all(
            _self_contained(child, repeated, memo) for child in element.children())
    return known


def _names_bound_by(element: Pattern) -> list[str]:
    names = [name for name, _ in element.binds]
    names += [name for name, _ in element.tags]
    rest = getattr(element, "rest", None)
    if getattr(rest, "binding", None):
        names.append(rest.binding)
    return names


def _check_variadic_element(element: Pattern, objects: dict[int, Pattern]) -> None:
    for key in _subtree(element):
        if objects[key].shared or _names_bound_by(objects[key]):
            raise ValueError("a variadic element is matched once per input: it cannot bind "
                             "names or share elements with the rest of the pattern")


def _counted_below(element: Pattern, memo: dict[int, frozenset[int]]) -> frozenset[int]:
    """The counted elements under ``element``, each once; an OR takes its smallest branch (an
    attempt inside a bigger branch adds the difference as it goes).  Memoized per element."""
    known = memo.get(id(element))
    if known is not None:
        return known
    if isinstance(element, OrPattern):
        below = min((_counted_below(b, memo) for b in element.branches), key=len)
    else:
        below = frozenset({id(element)} if element.counted else ()).union(
            *(_counted_below(c, memo) for c in element.children()))
    memo[id(element)] = below
    return below


def _root_ops(element: Pattern) -> frozenset[str] | None:
    if isinstance(element, OpPattern):
        return element.op_types
    if isinstance(element, OutputOf):
        return element.node_pattern.op_types
    if isinstance(element, PartPattern):
        return _root_ops(element.inner)
    if isinstance(element, OrPattern):
        branch_ops = [_root_ops(b) for b in element.branches]
        return None if any(o is None for o in branch_ops) else frozenset().union(*branch_ops)
    if isinstance(element, AndPattern):
        return next((ops for ops in map(_root_ops, element.parts) if ops is not None), None)
    return None


def _root_branches(element: Pattern) -> list[Pattern]:
    """The alternatives at the root, ORs and named parts opened (their tags and bindings do
    not decide whether the structure can match)."""
    if isinstance(element, OrPattern):
        return [b for branch in element.branches for b in _root_branches(branch)]
    if isinstance(element, PartPattern):
        return _root_branches(element.inner)
    return [element]


# The root op types a site test can accept on a graph holding nodes of the given op types
SiteOps = Callable[[Collection[str]], frozenset[str]]


def _prefilter(branches, depth: int = 1,
               ) -> tuple[Callable[[Node], bool] | None, SiteOps | None]:
    """tinygrad-style early reject: the root's op type and the op types producing its inputs
    in one of ``branches`` (``depth`` levels of producers: see ``_inputs_test``), checked
    without building any match state: the node's op type picks the branches to test.  None
    when the index by op type already says it all, or when a branch is not an op.  With it,
    the root op types it can accept on a graph (``_site_ops``)."""
    by_op: dict[str, list[Callable[[tuple], bool] | None]] = {}
    needs: dict[str, list[tuple[frozenset[str], ...]]] = {}
    for branch in branches:
        if not isinstance(branch, OpPattern):
            return None, None
        test, needed = _inputs_test(branch, depth), _needs(branch, depth)
        for op_type in branch.op_types:
            by_op.setdefault(op_type, []).append(test)
            needs.setdefault(op_type, []).append(needed)
    if all(None in tests for tests in by_op.values()):
        return None, None
    # per op type: None when a branch rooted there wants nothing of its inputs
    table = {op_type: None if None in tests else tuple(tests)
             for op_type, tests in by_op.items()}

    def accepts(node: Node) -> bool:
        tests = table.get(node.op_type, ())
        if tests is None:
            return True
        inputs = node.inputs
        for test in tests:
            if test(inputs):
                return True
        return False
    return accepts, _site_ops(needs)


def _site_ops(needs: dict[str, list[tuple[frozenset[str], ...]]]) -> SiteOps:
    """Per root op type, what each branch rooted there needs (``_needs``): the op types the
    test can accept where the graph holds nodes of ``present`` types only."""
    def site_ops(present: Collection[str]) -> frozenset[str]:
        return frozenset(op_type for op_type, branches in needs.items()
                         if any(all(not ops.isdisjoint(present) for ops in needed)
                                for needed in branches))
    return site_ops


def _needs(element: OpPattern, depth: int) -> tuple[frozenset[str], ...]:
    """The op type sets ``_inputs_test(element, depth)`` needs a producer from, each: on a
    graph without a node of one of them it says no to every node (empty: no test)."""
    needed: list[frozenset[str]] = []
    for pattern in element.inputs:
        ops = _root_ops(pattern)
        if ops is None:
            continue
        needed.append(ops)
        while isinstance(pattern, PartPattern):
            pattern = pattern.inner
        if depth > 1 and isinstance(pattern, OpPattern):
            needed += _needs(pattern, depth - 1)
    return tuple(needed)


# Levels of producers ``match_test`` looks at: two reject the sites whose inputs come from
# the right ops but not those ops' own inputs (on an element-wise chain, every Add whose Mul
# reads no Div is no LayerNorm), for a few lookups instead of an attempt.
MATCH_TEST_DEPTH = 2

# What an input must be (``_wanted``): produced by an op of one of these types, whose own
# inputs pass the test (None: not looked at).
Wanted = tuple[frozenset[str], Callable[[tuple], bool] | None]


def _inputs_test(element: OpPattern, depth: int = 1) -> Callable[[tuple], bool] | None:
    """A test of a node's inputs: each comes from an op type its pattern wants (either order
    for a commutative op), and, ``depth`` above 1, that op's inputs pass the same test of
    its own pattern, ``depth - 1`` levels down.  None when no input pattern names an op
    type."""
    wanted = [_wanted(p, depth) for p in element.inputs]
    if all(w is None for w in wanted):
        return None
    if element.commutative:
        first, second = wanted
        return lambda ins: ((_fits(first, ins, 0) and _fits(second, ins, 1))
                            or (_fits(first, ins, 1) and _fits(second, ins, 0)))
    tested = [(i, want) for i, want in enumerate(wanted) if want is not None]
    if len(tested) == 1:
        (index, want), = tested
        return lambda ins: _fits(want, ins, index)

    def test(ins: tuple) -> bool:
        for index, want in tested:
            if not _fits(want, ins, index):
                return False
        return True
    return test


def _wanted(element: Pattern, depth: int) -> Wanted | None:
    """What a value ``element`` matches must be, ``depth`` levels of producers deep (None:
    anything goes).  Only an op (named or not) is looked into: matching it matches its
    inputs."""
    ops = _root_ops(element)
    if ops is None:
        return None
    while isinstance(element, PartPattern):
        element = element.inner
    below = _inputs_test(element, depth - 1) \
        if depth > 1 and isinstance(element, OpPattern) else None
    return ops, below


def _fits(want: Wanted | None, inputs: tuple, index: int) -> bool:
    """Input ``index`` is what ``want`` asks for (None: anything goes)."""
    if want is None:
        return True
    value = inputs[index] if index < len(inputs) else None
    producer = value.producer if value is not None else None
    if producer is None:
        return False
    ops, below = want
    return producer.op_type in ops and (below is None or below(producer.inputs))


class NodeIndex:
    """Nodes by op type, in execution order: built once per graph state, shared by patterns.

    ``NodeIndex.of(graph)`` keeps the index of a graph's current order: the passes that change
    nothing share one graph (copy-on-write snapshots), so each of their patterns reads the
    same index instead of indexing every node again."""

    _kept: "weakref.WeakKeyDictionary[Graph, tuple[list[Node], NodeIndex]]" = \
        weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, graph: Graph) -> "NodeIndex":
        order = graph.nodes   # a new list whenever the graph changed
        kept = cls._kept.get(graph)
        if kept is None or kept[0] is not order:
            kept = (order, cls(graph))
            cls._kept[graph] = kept
        return kept[1]

    def __init__(self, graph: Graph):
        self.graph = graph
        self.by_op: dict[str, list[Node]] = {}
        self.position: dict[int, int] = {}
        # nodes of several op types, in order, per set: the patterns rooted at an activation
        # (three rules of one pass, each matched then explained) share one sort
        self._merged: dict[frozenset[str], list[Node]] = {}
        for position, node in enumerate(graph.nodes):
            self.by_op.setdefault(node.op_type, []).append(node)
            self.position[node.id] = position

    def candidates(self, op_types: frozenset[str] | None) -> list[Node]:
        """The nodes of these op types (None: every node) in execution order; not to be
        changed (the index keeps them)."""
        if op_types is None:
            return self.graph.nodes
        lists = [self.by_op[t] for t in op_types if t in self.by_op]
        if len(lists) == 1:
            return lists[0]
        merged = self._merged.get(op_types)
        if merged is None:
            position = self.position
            merged = self._merged[op_types] = sorted(
                (n for nodes in lists for n in nodes), key=lambda n: position[n.id])
        return merged


def attempt(compiled: CompiledPattern, node: Node, *, explain: bool,
            claimed: set[int] | None = None,
            budget: MatchBudget | None = None) -> Match | Failure | None:
    """Match the pattern rooted at ``node``: a Match, else a Failure (explain) or None.
    With a ``budget``, raises ``MatchTimeout`` once its time is up."""
    st = MatchState(explain, claimed, budget)
    pattern, path = compiled.pattern, () if explain else None
    if isinstance(pattern, OpPattern):
        ok = pattern.match_node(node, st, path)
    else:
        outputs = node.outputs
        value = outputs[compiled.root_output] if compiled.root_output < len(outputs) else None
        ok = pattern.match_value(value, st, path)
    if ok and _whole_match_holds(compiled, st, node):
        return Match(compiled.name, node, [n for n, _, _ in st.nodes],
                     {name: st.bindings[name] for name in compiled.binding_names})
    return st.last.with_score(compiled.size) if explain else None


def _whole_match_holds(compiled: CompiledPattern, st: MatchState, root: Node) -> bool:
    """Checks that need the whole match: deferred constraints, then that every intermediate is
    read only inside the match (fusing it must not change anything else)."""
    bindings = dict.fromkeys(compiled.binding_names)
    bindings.update(st.bindings)
    st.bindings = bindings
    for pattern, check, value, path, parts in st.deferred:
        if not check.holds(value, bindings):
            return st.explain and st.fail(
                path, pattern.label, pattern.subject(path, value), check.expected,
                check.found(value, bindings),
                value.producer if value.producer else (path[-1][0] if path else root),
                part=parts, wanted=check.wanted_for(value))
    inside = st.node_owner
    for node, pattern, path in st.nodes:
        if node is root or pattern.allow_external:
            continue
        for out in node.outputs:
            if out is None:
                continue
            if out.is_graph_output:
                return st.explain and st.fail(
                    path, node.op_type, node.op_type, "output used only inside the match",
                    f"graph output '{out.name}'", node,
                    custom_reason=f"{node.op_type} output is a graph output")
            for user, _ in out.uses:
                if user.id not in inside:
                    return st.explain and st.fail(
                        path, node.op_type, node.op_type, "output used only inside the match",
                        f"{_count(len(out.users()), 'consumer')}, {user.op_type} '{user.name}' "
                        f"outside the match", node, blocking_node=user,
                        custom_reason=f"{node.op_type} output has another consumer "
                                      f"({user.op_type} '{user.name}')")
    return True


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def match_all(graph: Graph, pattern: Pattern, *, index: NodeIndex | None = None,
              budget: MatchBudget | None = None) -> list[Match]:
    """Every non-overlapping match, listed in execution order of their roots.

    Roots are tried downstream first, so where matches would overlap the one reaching further
    down the graph wins (a Conv followed by a Relu matches "Conv, optionally then Relu" as the
    pair, not as a lone Conv).  A ``budget`` stops the search with ``MatchTimeout``.
    """
    compiled = compile_pattern(pattern)
    index = index or NodeIndex.of(graph)
    claimed: set[int] = set()
    matches = []
    test = compiled.match_test
    for node in paced(budget, reversed(compiled.sites(index, compiled.match_test_ops))):
        if node.id in claimed or (test is not None and not test(node)):
            continue
        found = attempt(compiled, node, explain=False, claimed=claimed, budget=budget)
        if found is not None:
            claimed.update(n.id for n in found.nodes)
            matches.append(found)
    matches.reverse()
    return matches


def match_at(graph: Graph, pattern: Pattern, node: Node | str) -> Match | None:
    """The match rooted at ``node`` (a Node or its name), or None."""
    return attempt(compile_pattern(pattern), _node(graph, node), explain=False)


def explain_at(graph: Graph, pattern: Pattern, node: Node | str,
               claimed: Iterable[int] | None = None) -> Match | Failure:
    """The match rooted at ``node``, or the Failure that says why there is none."""
    return attempt(compile_pattern(pattern), _node(graph, node), explain=True,
                   claimed=set(claimed) if claimed is not None else None)


def _node(graph: Graph, node: Node | str) -> Node:
    if isinstance(node, Node):
        return node
    found = graph.node_by_name(node)
    if found is None:
        raise KeyError(f"no node named {node!r} in the graph")
    return found
