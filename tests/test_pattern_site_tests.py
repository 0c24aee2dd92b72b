"""The matcher's early rejects never drop what an attempt would find.

``match_all`` skips a node that fails a pattern's ``match_test`` and ``explain`` skips a site
that fails its ``reaches`` test, without running the attempt.  Here every registered pattern
is attempted at every candidate node of every graph the O2 pipeline hands a pass, on each
bundled sample and on an element-wise chain: where a test says no, the attempt must agree
(no match; no near miss, i.e. nothing matched past the root).  ``ScoreBound`` bounds the
score a site's near miss can reach: no attempt may score above it, and a report cut at a
decline's score keeps exactly the near misses the whole report has from that score up."""

from __future__ import annotations

import pytest

from benchmarks.generated_graphs import element_wise_chain
from compiler_core.compilation import compile_model
from compiler_core.ir import Graph, from_proto, load_model
from compiler_core.passes.framework.rulebook import registered_patterns
from compiler_core.passes.framework.pattern_pass import DECLINE_SCORE
from compiler_core.patterns import Failure, Match, NodeIndex, any_value, const, explain, op
from compiler_core.patterns.explain import ROOT_ONLY
from compiler_core.patterns.matcher import attempt, compile_pattern
from compiler_core.patterns.score_bound import ScoreBound
from graphlab.samples import list_samples, resolve_model


def _graphs(graph: Graph) -> list[Graph]:
    """The input and every distinct graph a pass of O2 receives or leaves."""
    result = compile_model(graph, "O2").result
    seen, graphs = set(), []
    for candidate in [graph, *(s.graph for s in result.snapshots)]:
        if id(candidate) not in seen:
            seen.add(id(candidate))
            graphs.append(candidate)
    return graphs


MODELS = [s.name for s in list_samples()] + ["chain"]


def _model(name: str) -> Graph:
    if name == "chain":
        return from_proto(element_wise_chain(60))
    return load_model(resolve_model(name))


def _rejects_agree(graph: Graph, patterns) -> tuple[int, int]:
    """Assert the tests' agreement on ``graph``; how many attempts each test spared."""
    index = NodeIndex.of(graph)
    spared_matches = spared_explanations = 0
    for pattern in patterns:
        compiled = compile_pattern(pattern)
        for node in index.candidates(compiled.root_ops):
            if compiled.match_test is not None and not compiled.match_test(node):
                spared_matches += 1
                assert attempt(compiled, node, explain=False) is None, \
                    f"{compiled.name} matches at {node.name} though match_test said no"
            if compiled.reaches is not None and not compiled.reaches(node):
                spared_explanations += 1
                found = attempt(compiled, node, explain=True)
                assert isinstance(found, Match) or (
                    isinstance(found, Failure) and found.matched <= ROOT_ONLY), \
                    f"{compiled.name} at {node.name}: {found.reason} (matched {found.matched})" \
                    " though reaches said nothing past the root can match"
    return spared_matches, spared_explanations


def _bounds_hold(graph: Graph, patterns) -> int:
    """Assert that no attempt scores above its site's bound; how many sites the bound keeps
    below a decline's score."""
    below = 0
    for pattern in patterns:
        compiled = compile_pattern(pattern)
        bound = ScoreBound(compiled.pattern, compiled.root_output)
        for node in NodeIndex.of(graph).candidates(compiled.root_ops):
            best = bound.best_score(node)
            below += best < DECLINE_SCORE
            found = attempt(compiled, node, explain=True)
            assert not isinstance(found, Failure) or found.score <= best, \
                f"{compiled.name} at {node.name} scores {found.score}, above its bound {best}"
    return below


def _near_misses(report) -> list[tuple]:
    return [(m.site.id, m.score, m.reason, m.failure.path_text) for m in report.near_misses]


@pytest.mark.parametrize("name", MODELS)
def test_early_rejects_never_hide_a_match_or_a_near_miss(name):
    patterns = list(registered_patterns().values())
    spared = [_rejects_agree(g, patterns) for g in _graphs(_model(name))]
    assert sum(s[1] for s in spared) > 0   # the test judged something


@pytest.mark.parametrize("name", MODELS)
def test_score_bounds_never_hide_a_decline(name):
    patterns = list(registered_patterns().values())
    graphs = _graphs(_model(name))
    assert sum(_bounds_hold(g, patterns) for g in graphs) > 0   # the bound spared something
    for graph in graphs:
        for whole, cut in zip(explain(graph, patterns),
                              explain(graph, patterns, floor=DECLINE_SCORE)):
            assert _near_misses(cut) == [m for m in _near_misses(whole)
                                         if m[1] >= DECLINE_SCORE], whole.name


def test_score_bound_spares_the_layernorm_sites_of_a_chain():
    """On a Mul/Add chain the LayerNorm forms get two elements of a dozen: no site is judged
    when only declines are wanted; an activation on an Add of a Mul, half of matmul_bias_act,
    still is."""
    graph = from_proto(element_wise_chain(50))
    for name, judged in (("layernorm", False), ("skip_layernorm", False),
                         ("matmul_bias_act", True)):
        compiled = compile_pattern(registered_patterns()[name])
        bound = ScoreBound(compiled.pattern, compiled.root_output)
        sites = NodeIndex.of(graph).candidates(compiled.root_ops)
        assert sites and any(bound.best_score(n) >= DECLINE_SCORE for n in sites) == judged


def test_match_test_looks_two_producers_deep():
    """On a Mul/Add chain every Add reads a Mul (the last two ops of LayerNorm's decomposed
    form) and every activation an Add (matmul_bias_act's): the prefilter, one producer deep,
    keeps those sites for explain; the match test, two deep, spares match_all every one."""
    graph = from_proto(element_wise_chain(50))
    for name in ("layernorm", "skip_layernorm", "matmul_bias_act"):
        compiled = compile_pattern(registered_patterns()[name])
        sites = NodeIndex.of(graph).candidates(compiled.root_ops)
        assert any(compiled.prefilter(n) for n in sites), name
        assert not any(compiled.match_test(n) for n in sites), name


def test_reaches_spares_the_rmsnorm_spellings_on_a_chain():
    """On a Mul/Add chain no RMSNorm spelling gets past its root: every site is spared."""
    graph = from_proto(element_wise_chain(50))
    compiled = compile_pattern(registered_patterns()["rmsnorm"])
    sites = NodeIndex.of(graph).candidates(compiled.root_ops)
    assert sites and not any(compiled.reaches(n) for n in sites)
    assert not any(compiled.match_test(n) for n in sites)


def test_reaches_keeps_a_site_whose_constant_operand_matches():
    """Relu(Add(MatMul, bias)) at a Relu reading Add(Mul, constant): the Add matches past the
    root, so the site is kept (and is a near miss)."""
    pattern = op("Relu", op("Add", op("MatMul", any_value(), any_value()), const())).named("p")
    graph = from_proto(element_wise_chain(6))
    compiled = compile_pattern(pattern)
    relu = next(n for n in graph.nodes if n.op_type == "Relu" and n.inputs[0].producer)
    assert compiled.reaches(relu)
    failure = attempt(compiled, relu, explain=True)
    assert isinstance(failure, Failure) and failure.matched > ROOT_ONLY
