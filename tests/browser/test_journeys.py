"""Journeys through the pass debugger, written as a person acts: choose in the dropdown, upload,
press Next, click a tab or a near miss — at a projector's 1280×800 and at 1600×1000 and
1920×1080.  Every journey fails on a browser console error, on text cut off by its box, and on
panes that draw another model than the one chosen; a step that changed the graph must have
its changes inside both panes' viewports.  Screenshots are saved under the test's tmp folder
(GRAPHLAB_SCREENSHOTS=DIR keeps them elsewhere, to look at)."""

from __future__ import annotations

import functools
import shutil

import pytest

from benchmarks.journeys import AT_LAST_PASS, Person, chromium
from compiler_core.ir import load_model
from compiler_core.compilation import compile_model
from graphlab.app.config import DEFAULT_MODEL
from graphlab.samples import resolve_model, size_hints

pytestmark = pytest.mark.browser

SIZES = [(1280, 800), (1600, 1000), (1920, 1080)]


def person_at(url: str, size: tuple[int, int]) -> Person:
    return Person(chromium(*size), url)


@functools.lru_cache(maxsize=None)
def op_types(model: str) -> frozenset[str]:
    """Every op type the model has before, during and after the default pipeline."""
    result = compile_model(load_model(resolve_model(model)), "O2", size_hints=size_hints(model))
    graphs = [result.initial] + [s.graph for s in result.snapshots]
    return frozenset(n.op_type for g in graphs for n in g.nodes)


def url_model(person: Person) -> str:
    """The model the page's URL names (the default is left out of it)."""
    from urllib.parse import parse_qs

    return parse_qs(person.url_query().lstrip("?")).get("model", [DEFAULT_MODEL])[0]


def drawn_ops(person: Person, side: str) -> set[str]:
    view = person.pane(side)
    return {label.split("\n")[0] for label in view.labels.split("|") if label}


def assert_sound(person: Person, where: str) -> None:
    """No console error and no text cut off, said with where the person was."""
    errors = person.console_errors()
    assert not errors, f"{where}: console errors: {errors[:2]}"
    cut = person.cut_off()
    assert not cut, f"{where}: text cut off: {cut}"


# Screen pixels of empty band the view shows above and below the graphs (both panes share
# one viewport), when the graphs are taller than the view.
EMPTY_BANDS = """var p = window.graphlabPanes, e = p.before.extent(), z = p.before.zoom(),
    a = p.before.elements().boundingBox(), b = p.after.elements().boundingBox(),
    top = Math.min(a.y1, b.y1), foot = Math.max(a.y2, b.y2);
if (foot - top <= e.y2 - e.y1) { return null; }
return [(top - e.y1) * z, (e.y2 - foot) * z];"""
PAD_PX = 24   # what the page keeps free around a fit
# Changed elements in view but wider than it whose left edge (where a group's name is
# written) lies outside the view.
CUT_AT_LEFT = """var p = window.graphlabPanes, found = [];
['before', 'after'].forEach(function (side) {
  var cy = p[side], e = cy.extent(), mark = /\\b(has-)?(removed|added|modified)\\b/;
  cy.nodes().forEach(function (n) {
    var b = n.boundingBox();
    if (!mark.test(n.classes().join(' ')) || b.w <= e.w || b.y2 < e.y1 || b.y1 > e.y2) { return; }
    if (b.x1 < e.x1 - 1) { found.push(side + ' ' + n.id()); }
  });
});
return found;"""


def assert_change_in_view(person: Person, where: str) -> None:
    changed = False
    for side in ("before", "after"):
        view = person.pane(side)
        if view.marked:
            changed = True
            assert view.seen, (f"{where}: none of the {view.marked} changed nodes is in view in "
                               f"the {side} pane")
    if not changed:
        return
    cut = person.driver.execute_script(CUT_AT_LEFT)
    assert not cut, f"{where}: changed elements wider than the view shown without their left edge: {cut}"
    bands = person.driver.execute_script(EMPTY_BANDS)
    if bands:
        assert max(bands) <= PAD_PX + 2, (f"{where}: the change's view shows an empty band "
                                          f"(above, below) of {bands} px past the graph")


def at_last_pass(person: Person) -> bool:
    return person.driver.execute_script(AT_LAST_PASS)


def assert_draws(person: Person, model: str, previous: str | None, where: str,
                 sides: tuple[str, ...] = ("before", "after")) -> str:
    """The panes (both, or ``sides``) draw ``model``: its op types only, and not what was
    drawn before."""
    ops = set().union(*(drawn_ops(person, side) for side in sides))
    unknown = ops - op_types(model)
    assert ops and not unknown, f"{where}: the panes draw ops {model} has not: {unknown}"
    labels = person.pane("before").labels
    assert previous is None or labels != previous, f"{where}: the panes still draw the last model"
    return labels


# The Next button lies inside the pass column's visible box: a person can press it where it is.
NEXT_IN_SIGHT = """var b = document.getElementById('step-next').getBoundingClientRect(),
    c = document.querySelector('.stepper').getBoundingClientRect();
return b.top >= c.top - 1 && b.bottom <= c.bottom + 1 && b.bottom <= window.innerHeight;"""


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_student_steps_through_every_pass_and_opens_every_tab(served, shots, size):
    person = person_at(served, size)
    tag = f"{size[0]}x{size[1]}"
    try:
        person.open()
        person.driver.save_screenshot(str(shots / f"student-{tag}-open.png"))
        assert_sound(person, "the first view")
        assert_change_in_view(person, "the first view")
        titles = []
        while not at_last_pass(person):
            assert person.driver.execute_script(NEXT_IN_SIGHT), \
                f"Next is out of sight after {len(titles)} steps: the passes scrolled it away"
            person.next()
            title = person.text("#pane-after-title")
            assert title not in titles, f"Next did not move on from {title}"
            titles.append(title)
            assert_change_in_view(person, title)
            note = person.text("#pane-note")
            unchanged = person.driver.execute_script(
                "return document.querySelector('.pass-row.selected').classList.contains('unchanged');")
            assert ("changed nothing" in note) == unchanged, (title, note)
            assert person.eventually(lambda: person.driver.execute_script(   # the pass list
                "var row = document.querySelector('.pass-row.selected'),"   # shows the pass
                " list = row.closest('.pass-list'), r = row.getBoundingClientRect(),"
                " l = list.getBoundingClientRect();"
                " return r.top >= l.top - 2 && r.bottom <= l.bottom + 2;")), title
        assert len(titles) > 5
        person.driver.save_screenshot(str(shots / f"student-{tag}-last.png"))
        assert_sound(person, "after the last pass")
        for tab in [t.text for t in person._all(".tab")]:
            person.open_tab(tab)
            person.driver.save_screenshot(str(shots / f"student-{tag}-tab-{tab}.png"))
            assert_sound(person, f"the {tab} tab")
            panes = [person.pane(side) for side in ("before", "after")]
            assert all(p.width >= 250 and p.height >= 250 for p in panes), (tab, panes)
    finally:
        person.driver.quit()


def test_on_a_projector_each_step_of_a_transformer_shows_its_groups_by_their_names(served):
    """At 1280x800 a pane is narrower than a collapsed group at a readable zoom: a step whose
    change is such a group shows it from its left edge, where its name is written."""
    person = person_at(served, (1280, 800))
    try:
        person.open("?model=bert_tiny_op13")
        steps = 0
        while not at_last_pass(person):
            person.next()
            steps += 1
            assert_change_in_view(person, person.text("#pane-after-title"))
        assert steps > 20
    finally:
        person.driver.quit()


# Changed nodes of a pane not wholly inside its view (the graph component's extent).
CHANGED_NOT_WHOLE = """var found = [];
['before', 'after'].forEach(function (side) {
  var cy = window.graphlabPanes[side], e = cy.extent(), mark = /\\b(removed|added|modified)\\b/;
  cy.nodes().forEach(function (n) {
    var b = n.boundingBox({includeOverlays: false});
    if (mark.test(n.classes().join(' ')) &&
        (b.x1 < e.x1 || b.x2 > e.x2 || b.y1 < e.y1 || b.y2 > e.y2)) { found.push(side + ' ' + n.id()); }
  });
});
return found;"""


def test_on_a_projector_a_row_of_changed_nodes_is_shown_whole(served):
    """At 1280x800 with the side panel open a pane is 320 px wide: cnn_bn's first view
    removes two Identity nodes either side of a Flatten, a row a little wider than the pane
    at a readable zoom.  It is shown whole, a little smaller, rather than cut at the edge."""
    person = person_at(served, (1280, 800))
    try:
        person.open("?model=cnn_bn")
        assert "eliminate_identity" in person.text("#pane-after-title")
        assert person.pane("before").marked == 3, person.pane("before")
        assert not person.driver.execute_script(CHANGED_NOT_WHOLE)
        assert_change_in_view(person, "cnn_bn's first view at 1280x800")
    finally:
        person.driver.quit()


# Each pass name's text pieces (between its <wbr>s) broken across lines, and its text.
NAMES_BROKEN_MID_WORD = """var found = [];
document.querySelectorAll('.pass-name').forEach(function (name) {
  name.childNodes.forEach(function (piece) {
    if (piece.nodeType !== Node.TEXT_NODE) { return; }
    var range = document.createRange(); range.selectNodeContents(piece);
    var lines = new Set(Array.from(range.getClientRects()).map(function (r) {
      return Math.round(r.top); }));
    if (lines.size > 1) { found.push(name.innerText); }
  });
});
return found;"""


def test_on_a_projector_pass_names_wrap_only_after_an_underscore(served):
    """At 1280x800 the pass list is ~150 px wide: 'fuse_sibling_matmuls' and
    'recognize_layernorm' take two lines, broken after an underscore ('recognize_ /
    layernorm'), never inside a word ('fuse_sibling_matmul / s'); the text people copy is
    the name as it is."""
    person = person_at(served, (1280, 800))
    try:
        person.open("?model=bert_tiny_op13")
        names = [el.get_attribute("innerText") for el in person._all(".pass-name")]
        assert "16. fuse_sibling_matmuls" in names and "19. recognize_layernorm" in names
        assert not person.driver.execute_script(NAMES_BROKEN_MID_WORD)
        heights = person.driver.execute_script(
            "return Array.from(document.querySelectorAll('.pass-name'))"
            ".map(function (e) { return e.getClientRects().length; });")
        assert max(heights) > 1   # some do wrap at this width: the test sees the case
    finally:
        person.driver.quit()


# The page's own scrolling (none is wanted: its columns scroll inside), and each pane's box.
PAGE_AND_PANES = """var d = document.documentElement;
return {scrolls: d.scrollWidth > d.clientWidth || d.scrollHeight > d.clientHeight,
        folded: !!document.querySelector('.main.side-folded'),
        panes: ['before', 'after'].map(function (side) {
          var cy = window.graphlabPanes[side]; return [cy.width(), cy.height()]; })};"""


def test_on_a_1024_screen_the_page_opens_with_the_side_panel_folded(served):
    person = person_at(served, (1024, 768))
    try:
        person.open("?model=teach_layernorm")
        page = person.driver.execute_script(PAGE_AND_PANES)   # the panes have the width
        assert page["folded"] and not page["scrolls"], page
        assert all(width >= 350 and height >= 250 for width, height in page["panes"]), page
        # fitted for the panes as they are once folded, and the top bar on one row
        assert_change_in_view(person, "the page opened at 1024x768")
        assert_sound(person, "the page opened at 1024x768")
        person.click("#fold-side")   # "⇤ Side panel": the tabs come back
        page = person.driver.execute_script(PAGE_AND_PANES)
        assert not page["folded"] and not page["scrolls"], page
        assert_change_in_view(person, "the side panel opened at 1024x768")   # narrower panes
        person.open_tab("Patterns")
        assert "Patterns in pass" in person.text(".side"), person.text(".side")[:200]
        person.click("#fold-side")   # and away again, with no scrollbar left behind either way
        page = person.driver.execute_script(PAGE_AND_PANES)
        assert page["folded"] and not page["scrolls"], page
        assert_sound(person, "the side panel opened and folded at 1024x768")
    finally:
        person.driver.quit()


def _model_with_a_custom_op(path) -> None:
    """x -> Relu -> a custom-domain op GraphLab does not know -> Relu."""
    from onnx import TensorProto, helper, save
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Mystery", ["r"], ["m"], domain="com.example"),
             helper.make_node("Relu", ["m"], ["y"])]
    graph = helper.make_graph(nodes, "custom", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 4])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [2, 4])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                 helper.make_opsetid("com.example", 1)]), path)


def test_what_loading_an_upload_warned_of_stays_above_the_panes(served, shots, tmp_path):
    """A model with an op GraphLab does not know loads with a warning, which the CLI prints:
    the page shows its headline above the panes (the whole text when opened), keeps it while
    the person steps, and lets it go with the model."""
    upload = tmp_path / "custom_op.onnx"
    _model_with_a_custom_op(upload)
    person = person_at(served, (1280, 800))
    try:
        person.open("?model=cnn_bn")
        assert person.text("#model-notes") == ""
        person.upload(str(upload))
        person.wait_drawn()
        note = person.text("#model-notes summary")
        assert note == "This model: op com.example.Mystery is not known to GraphLab", note
        person.click("#model-notes summary")
        assert "loaded as an opaque node" in person.text("#model-notes")
        person.driver.save_screenshot(str(shots / "engineer-upload-warning.png"))
        assert_sound(person, "an upload with a warning")
        person.prev()
        assert "is not known to GraphLab" in person.text("#model-notes")
        person.choose("teach_gelu")
        person.wait_drawn()
        assert person.eventually(lambda: person.text("#model-notes") == "")
    finally:
        person.driver.quit()


def test_an_engineer_uploads_switches_to_a_sample_and_back(served, shots, tmp_path):
    person = person_at(served, (1280, 800))
    upload = tmp_path / "my_model.onnx"
    shutil.copy(resolve_model("bert_tiny_dynamo"), upload)
    try:
        person.open()
        drawn = assert_draws(person, "cnn_bn", None, "the first view")
        person.upload(str(upload))
        person.wait_drawn()
        drawn = assert_draws(person, "bert_tiny_dynamo", drawn, "after the upload")
        assert_change_in_view(person, "after the upload")
        person.driver.save_screenshot(str(shots / "engineer-upload.png"))
        for model in ("teach_layernorm", "gpt2_tiny", "bart_tiny", "cnn_bn"):   # bart: 3 sizes
            person.choose(model)
            person.wait_drawn()
            drawn = assert_draws(person, model, drawn, f"after choosing {model}")
            assert url_model(person) == model, person.url_query()
            assert_change_in_view(person, f"after choosing {model}")
            assert_sound(person, f"after choosing {model}")
        person.choose("bert_tiny_op13")
        person.choose("bert_tiny_dynamo", dropdown_id="compare-versus")   # two exports compared
        person.wait_drawn()
        assert person.text("#pane-before-title").startswith("A:")
        assert "bert_tiny_dynamo" in person.text("#pane-after-title")
        assert_draws(person, "bert_tiny_op13", None, "comparing: A", sides=("before",))
        assert_draws(person, "bert_tiny_dynamo", None, "comparing: B", sides=("after",))
        person.driver.save_screenshot(str(shots / "engineer-compare.png"))
        assert_change_in_view(person, "comparing two exports")   # the first difference
        assert_sound(person, "comparing two exports")
        person.clear("compare-versus")
        person.wait_drawn()
        assert person.text("#pane-before-title").startswith("Before pass")
        person.choose("gpt2_tiny")
        person.back()   # the browser's Back: bert_tiny_op13 again
        person.wait_drawn()
        drawn = assert_draws(person, "bert_tiny_op13", drawn, "after Back")
        person.choose("uploaded")   # and the upload again, from the dropdown
        person.wait_drawn()
        assert_draws(person, "bert_tiny_dynamo", drawn, "after choosing the upload again")
        assert_sound(person, "after choosing the upload again")
    finally:
        person.driver.quit()


def test_an_address_typed_with_a_doubled_slash_still_steps(served):
    """"host//?model=cnn_bn" is the page; the URLs it writes as a person steps stay on it."""
    person = person_at(served, (1280, 800))
    try:
        person.driver.get(served.rstrip("/") + "//?model=cnn_bn")
        person.wait_drawn()
        shown = person.shown()
        person.click("#step-next")
        person.wait_shown_other_than(shown, 30)
        assert "pass=" in person.url_query()
        assert person.driver.execute_script("return window.location.pathname;") == "/"
        assert_sound(person, "after a step")
    finally:
        person.driver.quit()


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    """`graphlab serve --workers 2`: the form a teacher starts for a room."""
    from benchmarks.load import start_server

    server, url = start_server(2, str(tmp_path_factory.mktemp("room")))
    yield url + "/"
    server.terminate()
    server.wait(30)


def test_a_teachers_room_three_browsers_on_two_workers(two_workers, shots):
    """Three students at once on different samples: each sees its own model, the URL, the
    dropdown and the panes agree, and a copied URL opens the same view elsewhere."""
    from concurrent.futures import ThreadPoolExecutor

    def student(model: str) -> tuple[str, str, str, str]:
        person = person_at(two_workers, (1280, 800))
        try:
            person.open()
            person.choose(model)
            person.wait_drawn()
            for _ in range(2):
                person.next()
            assert url_model(person) == model, person.url_query()
            assert person.text("#model-select").split()[0] == model
            assert_draws(person, model, None, f"{model} in the room")
            assert_change_in_view(person, f"{model} in the room")
            assert not person.console_errors(), (model, person.console_errors()[:2])
            person.driver.save_screenshot(str(shots / f"room-{model}.png"))
            return (person.url_query(), person.text("#pane-after-title"),
                    person.pane("before").labels, person.pane("after").labels)
        finally:
            person.driver.quit()

    models = ("teach_gelu", "mlp_dropout", "bert_tiny_op20")
    with ThreadPoolExecutor(len(models)) as pool:
        views = list(pool.map(student, models))
    for model, (query, title, before, after) in zip(models, views):
        again = person_at(two_workers, (1280, 800))   # the copied URL, in another browser
        try:
            again.open(query)
            assert again.text("#pane-after-title") == title, model
            assert again.pane("before").labels == before and again.pane("after").labels == after
            assert again.text("#model-select").split()[0] == model
        finally:
            again.driver.quit()
