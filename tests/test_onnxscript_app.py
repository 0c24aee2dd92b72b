"""onnxscript rules in the app: `serve --allow-code`, the rules in the URL, verdicts on the graph
after any pass (judged in a child process, edits to a rules file seen on Run), and the
highlight that lights a site's nodes in the panes."""

from __future__ import annotations

import argparse
import time

import pytest

from graphlab.app.config import AppConfig
from graphlab.app.highlight import MISS, RULES, Highlight
from graphlab.app.onnxscript_view import highlight_of, refusal, rule_focus, verdicts
from graphlab.app.pane_payload import UiState, build_panes
from graphlab.app.services import Services
from graphlab.app.view_state import MAX_RULES_CHARS, ViewState, from_query, to_query, with_patch
from graphlab.cli import build_parser
from graphlab.commands.serve import config_from_args

pytest.importorskip("onnxscript")

GELU_RULES = "onnxscript.rewriter.ort_fusions.gelu"


def _serve_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", "--no-browser", *argv])


def test_only_serve_allow_code_lets_a_browser_name_modules():
    assert config_from_args(_serve_args()).allow_code is False
    assert config_from_args(_serve_args("--allow-code")).allow_code is True
    assert AppConfig().allow_code is False
    message = str(refusal("my_rules"))
    assert "does not load Python modules" in message and "serve --allow-code" in message


def test_the_rules_travel_in_the_url():
    default = ViewState(model="teach_gelu")
    state = default.with_changes(rules=GELU_RULES)
    assert "rules=onnxscript.rewriter.ort_fusions.gelu" in to_query(state, default)
    assert from_query(to_query(state, default), default).rules == GELU_RULES
    assert with_patch(default, {"rules": "  my_rules.py:rules "}).rules == "my_rules.py:rules"
    assert len(with_patch(default, {"rules": "x" * 1000}).rules) == MAX_RULES_CHARS


@pytest.fixture(scope="module")
def gelu_workspace(tmp_path_factory):
    services = Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("s")),
                                              allow_code=True))
    return services.workspace(ViewState(model="teach_gelu"), None)


def _step(ws, name: str) -> int:
    return next(s.index for s in ws.result.snapshots if s.pass_name == name)


def test_verdicts_follow_the_pass_and_a_fused_body_maps_to_its_node(gelu_workspace):
    ws = gelu_workspace
    before = verdicts(ws, 0, GELU_RULES)
    erf = next(v for v in before.rules if v.name == "GeluErfFusion")
    [match] = erf.matches
    assert match.root.name == "gelu_good_half_mul" and match.where == ""
    [miss] = erf.closest
    assert miss.root.name == "gelu_wrongconst_half_mul" and "got 1.5" in miss.reason
    step = _step(ws, "recognize_gelu")
    after = verdicts(ws, step, GELU_RULES)
    [inside] = next(v for v in after.rules if v.name == "GeluErfFusion").matches
    fused = ws.result.snapshots[step].graph.node_by_id(inside.root.id)
    assert fused.op_type == "Gelu" and fused.body is not None
    assert inside.where == "inside function graphlab.Gelu, called by Gelu"
    assert verdicts(ws, 0, GELU_RULES) is before   # kept with the workspace


def test_run_judges_an_edited_rules_file_afresh(gelu_workspace, tmp_path):
    rules = tmp_path / "my_rules.py"
    rules.write_text(f"from {GELU_RULES} import gelu_rules as rules\n")
    spec = str(rules)
    first = verdicts(gelu_workspace, 0, spec)
    assert [v.name for v in first.rules] == ["GeluTanhFusion", "GeluErfFusion"]
    rules.write_text(f"from {GELU_RULES} import _erf_rule as erf\n")
    assert verdicts(gelu_workspace, 0, spec) is first          # not asked again: kept
    again = verdicts(gelu_workspace, 0, spec, asked_at=time.time())
    assert [v.name for v in again.rules] == ["GeluErfFusion"]


def test_a_rules_file_that_breaks_is_a_message(gelu_workspace, tmp_path):
    rules = tmp_path / "broken_rules.py"
    rules.write_text("import os\nos._exit(7)\n")
    with pytest.raises(Exception, match=r"died \(exit code 7\)"):
        verdicts(gelu_workspace, 0, str(rules))


def test_a_clicked_site_lights_its_nodes_in_the_panes(gelu_workspace):
    ws = gelu_workspace
    report = verdicts(ws, 0, GELU_RULES)
    index, erf = next((i, v) for i, v in enumerate(report.rules) if v.name == "GeluErfFusion")
    [site] = erf.closest
    highlight = highlight_of(MISS, index, 0, site)
    assert Highlight.decode(highlight.encode()) == highlight   # the address's round trip
    assert (highlight.source, highlight.kind, highlight.report, highlight.item) == \
        (RULES, MISS, index, 0)
    matched, failed = [n.id for n in site.nodes], site.failed_at[0].id
    assert list(highlight.matched) == matched and highlight.failed == failed
    focus = rule_focus(highlight)
    assert focus.matched == matched and focus.failed == failed
    payload = build_panes(ws, ViewState(model="teach_gelu", highlight=highlight), UiState())
    lit = {e["data"]["id"] for e in payload.after if "hl-" in e.get("classes", "")}
    assert {f"n{node_id}" for node_id in matched + [failed]} <= lit
    assert Highlight.decode("rule-miss:0:0:not/ids/here") is None
    assert rule_focus(Highlight.decode("miss:0:0")) is None
