"""Passes share a pattern's report while the graph does not change, and never afterwards.

fold_norm_affine and recognize_layernorm both judge the LayerNorm pattern: on a graph the
first leaves as it was, the second reads the first's report instead of judging every site
again; after any pass that changed the graph (or a pass that rewrote after judging), the
pattern is judged afresh on the graph as it is."""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks.generated_graphs import element_wise_chain
from compiler_core.ir import from_proto
from compiler_core.passes import PassManager
from compiler_core.passes.framework import pattern_pass
from passes_helpers import load_sample


@pytest.fixture
def judged(monkeypatch) -> Counter:
    """How many times each pattern was judged (``explain`` run on it)."""
    counts: Counter = Counter()
    explain = pattern_pass.explain

    def counting(graph, patterns, *args, **kwargs):
        patterns = list(patterns)
        counts.update(p.title for p in patterns)
        return explain(graph, patterns, *args, **kwargs)
    monkeypatch.setattr(pattern_pass, "explain", counting)
    return counts


def _layernorm(result, pass_name: str):
    snapshot = next(s for s in result.snapshots if s.pass_name == pass_name)
    return next(r for r in snapshot.pattern_reports if r.name == "layernorm")


def test_an_unchanged_graph_is_judged_once(judged):
    result = PassManager(["fold_norm_affine", "recognize_layernorm"]).run(
        from_proto(element_wise_chain(60)))
    assert not any(s.changed for s in result.snapshots)
    assert judged["layernorm"] == 1
    first, second = (_layernorm(result, p) for p in ("fold_norm_affine", "recognize_layernorm"))
    assert len(first.near_misses) == 12 and second == first


def test_a_pass_that_changed_the_graph_makes_it_judged_again(judged):
    """Element-wise fusion takes the whole chain into one node: the Add sites are gone."""
    result = PassManager(["fold_norm_affine", "fuse_elementwise", "recognize_layernorm"]).run(
        from_proto(element_wise_chain(60)))
    assert judged["layernorm"] == 2
    assert len(_layernorm(result, "fold_norm_affine").near_misses) == 12
    assert _layernorm(result, "recognize_layernorm").near_misses == ()


def test_a_pass_that_rewrote_after_judging_leaves_no_report_behind(judged):
    """recognize_layernorm judges the sample's LayerNorm (one match), then replaces it: the
    next pass judges the graph with the LayerNormalization op, where nothing matches."""
    result = PassManager(["recognize_layernorm", "fold_norm_affine"]).run(
        load_sample("teach_layernorm"))
    assert len(_layernorm(result, "recognize_layernorm").matches) == 1
    assert judged["layernorm"] == 2
    assert _layernorm(result, "fold_norm_affine").matches == ()


def test_a_run_that_shows_only_declines_judges_near_misses_only_where_rules_decline(judged):
    """`graphlab compile` prints declines, not near misses: fold_norm_affine only looks for
    LayerNorms (its near misses are never declines) so its report is matches alone, and
    recognize_layernorm's rule, which declines, judges the pattern itself; the declines are
    those of a run with all near misses, and the reports list matches alone."""
    passes = ["fold_norm_affine", "recognize_layernorm", "fuse_linear_bias_act"]
    full = PassManager(passes).run(from_proto(element_wise_chain(60)))
    judged.clear()
    lean = PassManager(passes, all_near_misses=False).run(from_proto(element_wise_chain(60)))
    assert judged["layernorm"] == 1
    assert _layernorm(lean, "fold_norm_affine").near_misses == ()
    assert _layernorm(lean, "recognize_layernorm").near_misses == ()
    assert _layernorm(full, "recognize_layernorm").near_misses != ()
    declines = [[(d.rule, d.site, d.reason) for d in s.declined] for s in lean.snapshots]
    assert declines == [[(d.rule, d.site, d.reason) for d in s.declined] for s in full.snapshots]
    assert len(declines[2]) == 11   # every Relu reading an Add of a Mul: "expected MatMul"
