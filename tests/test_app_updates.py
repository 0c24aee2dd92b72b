"""What a step sends: nothing for a pane that did not change, else the changed elements (or
the whole list when most changed), which the page merges into what it holds."""

from __future__ import annotations

import pytest

from graphlab.app.config import AppConfig
from graphlab.app.page_ids import local_id, namespace, to_page
from graphlab.app.pane_payload import UiState, build_panes
from graphlab.app.pane_updates import WHOLE_LIST_SHARE, applied, element_update, pane_changes
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState

MODEL = "bert_tiny_op13"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    services = Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("cache"))))
    return services.workspace(ViewState(model=MODEL), None)


def walk(workspace, ui: UiState):
    """Every step from the first pass to the last: (step, answer, payload)."""
    drawn = None
    for step in range(len(workspace.result.snapshots)):
        payload = build_panes(workspace, ViewState(model=MODEL, step=step), ui)
        answer = pane_changes(workspace, payload, drawn)
        drawn = answer.get("drawn_key", drawn)
        yield step, answer, payload


def as_set(elements):
    return sorted(repr(sorted(e.items())) for e in elements)


@pytest.mark.parametrize("grouping", ["default", "all open"])
def test_merging_each_answer_into_what_the_page_holds_draws_the_new_pass(workspace, grouping):
    ui = UiState() if grouping == "default" else UiState(expanded=frozenset(workspace.scopes.groups))
    held = {"before": [], "after": []}
    space = namespace(workspace.key)
    for step, answer, payload in walk(workspace, ui):
        for side in held:
            held[side] = applied(held[side], answer[side])
            assert answer[side]["count"] == len(held[side]), step
            assert answer[side]["view"] == f"{space}:{step}"
        assert as_set(held["before"]) == as_set(to_page(payload.before, space)), step
        assert as_set(held["after"]) == as_set(to_page(payload.after, space)), step


ELEMENTS = ("full", "upsert", "remove")


def test_two_models_share_no_element_id_on_the_page(tmp_path):
    """The graph component patches elements whose ids it holds: a new model must be drawn
    whole, so no id (node, group, input, edge) of one model is an id of another."""
    services = Services.from_config(AppConfig(cache_dir=str(tmp_path)))
    drawn = []
    for model in ("cnn_bn", "mlp_dropout", MODEL):
        ws = services.workspace(ViewState(model=model), None)
        answer = pane_changes(ws, build_panes(ws, ViewState(model=model), UiState()), None)
        page = answer["before"]["full"] + answer["after"]["full"]
        drawn.append({e["data"]["id"] for e in page})
        local = {local_id(e["data"]["id"]) for e in page}
        assert "n0" in local or any(i.startswith("n") for i in local)
        for element in page:   # references point inside the same namespace
            for key in ("within", "source", "target"):
                if key in element["data"]:
                    assert element["data"][key].split("|")[0] == namespace(ws.key)
    assert not drawn[0] & drawn[1] and not drawn[1] & drawn[2] and not drawn[0] & drawn[2]


def test_a_pass_that_changed_nothing_after_one_that_changed_nothing_sends_no_graph(workspace):
    snapshots = workspace.result.snapshots
    quiet = [s.index for s in snapshots[1:] if not s.changed and not snapshots[s.index - 1].changed]
    assert quiet
    answers = dict((step, answer) for step, answer, _ in walk(workspace, UiState()))
    for step in quiet:
        for side in ("before", "after"):   # the view is named, no element is sent
            assert not set(ELEMENTS) & set(answers[step][side]), step


def test_a_pass_that_changed_a_little_sends_the_changed_elements_only(workspace):
    answers = [(step, answer) for step, answer, _ in walk(workspace, UiState(
        expanded=frozenset(workspace.scopes.groups)))]
    partial = [answer["after"] for step, answer in answers[1:]
               if "upsert" in answer["after"]]
    assert partial, "no step sent a partial update"
    for update in partial:
        assert update["upsert"] or update["remove"]


def test_an_update_is_the_whole_list_when_most_of_it_changed():
    old = [{"data": {"id": f"n{i}"}, "classes": "op"} for i in range(10)]
    new = [{"data": {"id": f"n{i}"}, "classes": "op added"} for i in range(10)]
    assert element_update(old, new) == {"full": new}
    few = new[:2] + old[2:]
    assert element_update(old, few) == {"remove": [], "upsert": new[:2]}
    assert 2 < WHOLE_LIST_SHARE * 10
    assert element_update(old, list(old)) is None
    assert element_update(None, new) == {"full": new}


def test_a_selection_sends_the_elements_it_lights_and_nothing_else(workspace):
    """A highlight is a class on the elements it names: selecting a node sends that element
    alone (the graph restyles one element, not every one), and selecting another sends both
    the one let go and the one taken; the page's merge then holds the new classes."""
    plain = build_panes(workspace, ViewState(model=MODEL), UiState())
    drawn = pane_changes(workspace, plain, None)["drawn_key"]
    held = applied([], pane_changes(workspace, plain, None)["before"])
    first, second = (n.id for n in workspace.result.snapshots[0].graph.nodes[:2])
    space = namespace(workspace.key)
    for chosen, sent in ((first, {first}), (second, {first, second})):
        payload = build_panes(workspace, ViewState(model=MODEL, node=chosen), UiState())
        answer = pane_changes(workspace, payload, drawn)
        update = answer["before"]
        assert {local_id(e["data"]["id"]) for e in update["upsert"]} == \
            {f"n{i}" for i in sent} and not update["remove"]
        held = applied(held, update)
        lit = [local_id(e["data"]["id"]) for e in held if "hl-selected" in e.get("classes", "")]
        assert lit == [f"n{chosen}"]
        assert as_set(held) == as_set(to_page(payload.before, space))
        drawn = answer["drawn_key"]
