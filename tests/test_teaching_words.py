"""Teaching samples open on the pass they teach; a modified node says what changed; the words
and numbers of the pass debugger agree with each other (dtype names, plurals, fusion counts,
op types in a diff, the legends)."""

from __future__ import annotations

import json
import os

import pytest
from onnx import TensorProto, helper

from compiler_core.compilation import Compilation, Decisions
from compiler_core.ir import Graph
from compiler_core.passes import PassManager
from compiler_core.passes.framework.base import Pass, PassContext, PassResult
from compiler_core.patterns.testing import build_graph
from compiler_core.records import to_json
from graphlab import samples
from graphlab.app.config import AppConfig
from graphlab.app.inspector_data import describe_node
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState
from graphlab.app.workbench import workspace_of

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "sample_models")


@pytest.fixture(scope="module")
def manifest():
    """The manifest of this checkout (the samples' files may be installed from elsewhere)."""
    with open(os.path.join(SAMPLES, "manifest.json"), encoding="utf-8") as handle:
        return {e["name"]: e for e in json.load(handle)["samples"]}


@pytest.fixture(scope="module")
def services(tmp_path_factory, manifest):
    """The app's services reading this checkout's manifest."""
    patch = pytest.MonkeyPatch()
    patch.setattr(samples, "samples_dir", lambda: SAMPLES)
    samples.list_samples.cache_clear()
    yield Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("sessions"))))
    patch.undo()
    samples.list_samples.cache_clear()


# ---- teaching samples open on their pass ---------------------------------------------------

def test_every_teaching_sample_names_its_pass(manifest, services):
    from compiler_core.passes import all_passes
    teaching = [name for name in manifest if name.startswith("teach_")]
    assert len(teaching) >= 4
    known = set(all_passes())
    for name in teaching:
        assert manifest[name].get("teaches_pass") in known, name
    assert to_json(samples.get_sample("teach_gelu"))["teaches_pass"] == "recognize_gelu"


@pytest.mark.parametrize("name", ["teach_layernorm", "teach_gelu", "teach_conv_bn",
                                  "teach_matmul_bias", "mobilenet_zeropad"])
def test_a_teaching_sample_opens_on_the_pass_it_teaches(services, manifest, name):
    ws = services.workspace(ViewState(model=name), None)
    opened = ws.result.snapshots[ws.clamp_step(None)]
    assert opened.pass_name == manifest[name]["teaches_pass"]
    assert opened.changed and (opened.diff.removed or opened.diff.added)


def test_teach_layernorm_no_longer_opens_on_cse(services):
    ws = services.workspace(ViewState(model="teach_layernorm"), None)
    first_changed = next(s for s in ws.result.snapshots if s.changed)
    assert first_changed.pass_name == "cse"          # it did change the graph first...
    assert ws.clamp_step(None) != first_changed.index   # ...but is not what the sample teaches


# ---- a modified node says what changed -----------------------------------------------------

def test_cse_modified_nodes_say_which_input_now_reads_what(services):
    ws = services.workspace(ViewState(model="teach_layernorm"), None)
    cse = next(s for s in ws.result.snapshots if s.pass_name == "cse" and s.changed)
    pow_node = next(cse.graph.node_by_id(i) for i in cse.diff.modified
                    if cse.graph.node_by_id(i).op_type == "Pow")
    info = describe_node(ws, cse.index, pow_node.id, "asic32")
    assert info["status"] == "modified by this pass (cse): input 1 (Y) changed"
    (change,) = info["changes"]
    assert change["where"] == "input 1 (Y)"
    assert change["before"].startswith("'ln_wrongaxis_two'")
    assert change["after"].startswith("'ln_good_two'")


class _CastToHalf(Pass):
    """Test pass: every Cast to float32 casts to float16 instead."""

    name, family = "cast_to_half", "test"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        for node in graph.nodes:
            if node.op_type == "Cast" and node.attrs.get("to") == TensorProto.FLOAT:
                graph.set_node_attr(node, "to", TensorProto.FLOAT16)
                node.outputs[0].elem_type = TensorProto.FLOAT16
                result.rewrites += 1
        return result


def _cast_graph() -> Graph:
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT, name="cast"),
             helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT, name="back")]
    return build_graph(nodes, {"x": (2, 3)}, {"y": (2, 3)})


def test_a_changed_attribute_is_listed_old_to_new_by_name():
    result = PassManager([_CastToHalf()]).run(_cast_graph())
    snapshot = result.snapshots[0]
    cast = next(n for n in snapshot.graph.nodes if n.name == "cast")
    texts = [c.text() for c in snapshot.diff.changes_of(cast.id)]
    assert "attribute to: float32 → float16" in texts
    assert "output 0 type: float32[2,3] → float16[2,3]" in texts
    record = to_json(snapshot)["changes"]
    assert {"kind": "attribute", "where": "attribute to", "before": "float32",
            "after": "float16"} in next(r for r in record if r["name"] == "cast")["changes"]
    ws = workspace_of("k", "casts", Compilation(_no_decisions(), result), 250)
    info = describe_node(ws, 0, cast.id, "asic32")
    assert {"kind": "attribute", "where": "attribute to", "before": "float32",
            "after": "float16"} in info["changes"]
    assert ("to", "float16") in info["attributes"]


def _no_decisions() -> Decisions:
    from compiler_core.hardware.representative_sizes import ChosenSizes
    return Decisions("casts", ChosenSizes(), {}, None)


def test_compile_json_lists_what_changed_on_each_modified_node(capsys):
    from graphlab.cli import main
    assert main(["compile", os.path.join(SAMPLES, "teach_gelu.onnx"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cse = next(p for p in report["passes"] if p["name"] == "cse")
    assert len(cse["modified"]) == 2
    for node in cse["modified"]:
        (change,) = node["changes"]
        assert change["kind"] == "input" and change["before"] != change["after"]
    assert all(p["modified"] == [] for p in report["passes"] if not p["changed"])


# ---- a fusion's counts agree ---------------------------------------------------------------

def test_a_fused_attention_counts_the_same_nodes_everywhere(services):
    """History, body, the pass's removed count and the match agree on 16; the match's 13
    and the input model's 19 are said as what they are."""
    ws = services.workspace(ViewState(model="bert_tiny_op13"), None)
    snapshot = next(s for s in ws.result.snapshots if s.pass_name == "fuse_attention")
    attention = [snapshot.graph.node_by_id(i) for i in snapshot.diff.added]
    assert len(attention) == 2
    node = attention[0]
    body = len(node.body)
    assert len(node.provenance.replaced) == body
    assert len(snapshot.diff.removed) == sum(len(n.body) for n in attention)
    (report,) = [r for r in snapshot.pattern_reports if r.matches]
    match = next(m for m in report.matches if m.made.id == node.id)
    assert len(match.nodes) + len(match.taken_along) == body
    history = describe_node(ws, snapshot.index, node.id, "asic32")["history"]
    assert history[0].startswith("made by rule fuse_attention")
    assert f"from {body} nodes:" in history[0] and history[0].endswith("(its body)")
    assert history[1].startswith(f"the pattern attention matched {len(match.nodes)} of them; "
                                 f"the rewrite took {len(match.taken_along)} more along: ")
    assert f"those {body} come from {len(node.provenance.sources)} nodes of the input" in \
        history[2]
    written = to_json(report)["matches"][0]   # a rewritten match says what it took along
    assert written["made"] == match.made.name and match.taken_along
    assert written["taken_along"] == [n.name for n in match.taken_along]


# ---- op types in a diff --------------------------------------------------------------------

def test_a_diff_counts_every_body_of_a_fused_op_as_one_op_type():
    """The exporter writes each distinct body of Attention as its own function (Attention,
    Attention_2); read back, they are still one op type in the diff's table and texts."""
    from compiler_core.ir import load_model, to_bytes
    from compiler_core.model_diff import diff_models

    model = load_model(os.path.join(SAMPLES, "bert_tiny_op13.onnx"))
    final = PassManager("O2", bindings={"batch": 1, "seq": 128}).run(model).final
    exported = load_model(to_bytes(final))
    assert {n.op_type for n in exported.nodes if n.domain == "graphlab"} >= {
        "Attention", "Attention_2"}   # two bodies, two functions
    diff = diff_models(model, exported)
    rows = {row.op: row for row in diff.by_op()}
    assert rows["graphlab.Attention"].b == 2 and "graphlab.Attention_2" not in rows
    assert not any(op.rsplit("_", 1)[-1].isdigit() for op in rows)
    record = json.dumps(to_json(diff))
    assert "Attention_2" not in record


# ---- the intensity overlay on collapsed groups ---------------------------------------------

def test_collapsed_groups_take_the_intensity_band_of_their_members(services):
    from compiler_core.hardware.targets import get_target
    from graphlab.app.graph_analyses import cost_of
    from graphlab.app.intensity_bands import BANDS, NO_ARITHMETIC, NOT_PRICED
    from graphlab.app.pane_payload import UiState, build_panes

    ws = services.workspace(ViewState(model="bert_tiny_op13"), None)
    state = ViewState(model="bert_tiny_op13", step=0, overlay="intensity")
    closed = build_panes(ws, state, UiState(expanded=frozenset()))
    collapsed = [e for e in closed.before if "collapsed" in e.get("classes", "")]
    assert collapsed
    band_names = {b.css_class for b in (*BANDS, NO_ARITHMETIC, NOT_PRICED)}
    for element in collapsed:
        assert band_names & set(element["classes"].split()), element["data"]["id"]
    plain = build_panes(ws, state.with_changes(overlay=""), UiState(expanded=frozenset()))
    assert not any(" ai-" in e.get("classes", "") for e in plain.before)
    # the band is the members' FLOPs over their bytes, at the ridge of their dtype
    graph = ws.graphs_of_step(0)[0]
    cost = cost_of(ws, graph, "asic32")
    (top,) = [e for e in collapsed if e["data"]["id"] == ws.scopes.roots[0]] or [collapsed[0]]
    inside = [op for node, op in zip(graph.nodes, cost.ops) if op.modelled and op.flops
              and top["data"]["id"] in ws.scopes.ancestors(ws.scopes.group_of.get(node.id))]
    ratio = (sum(op.flops for op in inside) / sum(op.bytes for op in inside)
             / get_target("asic32").ridge_point("float32"))
    band = next(b for b in BANDS if ratio < b.high)
    assert band.css_class in top["classes"].split()


# ---- the sizes the app and the CLI bind ----------------------------------------------------

def test_the_app_and_the_cli_bind_the_same_dims_and_say_what_they_bound(services, capsys):
    from graphlab.app.panels.controls import sizes_source
    from graphlab.app.panels.stepper import bound_detail, pass_row
    from graphlab.cli import main

    model = os.path.join(SAMPLES, "bert_tiny_op13.onnx")
    ws = services.workspace(ViewState(model="bert_tiny_op13"), None)
    assert ws.sizes.text() == "batch=1,seq=128"          # what every cost is computed at
    assert bound_detail(ws, _specialize(ws)) == ("", "")   # nobody asked: nothing bound
    word, why = sizes_source(ws.compilation.decisions)
    assert word == "(representative)" and "bound none of them" in why
    assert main(["compile", model, "--json"]) == 0
    told = json.loads(capsys.readouterr().out)
    assert told["nodes_after"] == len(ws.result.final)     # the app's graph, node for node
    assert told["decided"]["bound"] == {}
    assert told["decided"]["left_symbolic"] == ["batch", "seq"]
    assert main(["compile", model]) == 0
    assert ("sizes     batch, seq left symbolic (the model keeps accepting any size); the "
            "analyses price it at batch=1,seq=128") in capsys.readouterr().out

    bound = "batch=1,seq=128"
    fixed = services.workspace(ViewState(model="bert_tiny_op13", bindings=bound), None)
    detail, title = bound_detail(fixed, _specialize(fixed))
    assert detail == "bound batch=1, seq=128"
    assert f"graphlab compile MODEL --bind {bound}" in title
    row = pass_row(_specialize(fixed), False, detail, title)
    assert row.children[1].splitlines()[-1] == detail and row.title == title
    assert f"--bind {bound}" in sizes_source(fixed.compilation.decisions)[1]
    assert main(["compile", model, "--json", "--bind", bound]) == 0
    told = json.loads(capsys.readouterr().out)
    assert told["nodes_after"] == len(fixed.result.final) < len(ws.result.final)
    assert told["decided"]["bound"] == {"batch": 1, "seq": 128}
    assert told["decided"]["left_symbolic"] == []


def _specialize(ws):
    return next(s for s in ws.result.snapshots if s.pass_name == "specialize_dims")


# ---- the structure note says what is true --------------------------------------------------

def test_the_structure_note_names_the_crowded_scope_when_the_nodes_carry_scopes(services):
    from graphlab.app.scopes import structure_note

    ws = services.workspace(ViewState(model="llama_tiny_torchscript"), None)
    assert ws.scopes.structured and not ws.scopes.cut.unscoped
    note = structure_note(ws.scopes.cut)
    assert "carry no name scopes" not in note
    assert "scope /lm/model/layers.0/self_attn holds" in note
    assert "nodes of its own (more than 120 in one group)" in note


def test_the_structure_note_says_no_name_scopes_only_when_none_has_one():
    from graphlab.app.nested_layout import pipeline_layout
    from graphlab.app.scopes import structure_note

    nodes = [helper.make_node("Relu" if k % 2 else "Neg", [f"v{k}"], [f"v{k + 1}"],
                              name=f"node_{k}") for k in range(130)]
    graph = build_graph(nodes, {"v0": (2,)}, {"v130": (2,)})
    layout = pipeline_layout(PassManager("dce").run(graph))
    assert layout.scopes.structured and layout.scopes.cut.unscoped
    note = structure_note(layout.scopes.cut)
    assert note.startswith("Groups found from the structure (the model's nodes carry no name "
                           "scopes): ")


def test_the_report_lists_what_changed_on_each_modified_node(tmp_path):
    import html
    import re

    from graphlab.cli import main
    out = tmp_path / "teach_layernorm.html"
    assert main(["report", os.path.join(SAMPLES, "teach_layernorm.onnx"), "-o", str(out)]) == 0
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", out.read_text())))
    assert ("ln_wrongaxis_pow (Pow) — input 1 (Y): 'ln_wrongaxis_two' (weight float32[]) → "
            "'ln_good_two' (weight float32[])") in text


def test_show_prints_a_cast_target_by_name():
    from compiler_core.ir import format_node
    graph = _cast_graph()
    cast = next(n for n in graph.nodes if n.name == "cast")
    assert "Cast[to=float32](%x)" in format_node(cast)
