"""Edit and re-run in the browser, as a person does it: a near miss made to fire by an edit
made in the page — the blocking consumer removed through the suggested fix, the wrong
constant typed into the inspector, a blocking reader bypassed with its button — the pass
list showing the fusion fire on the same pass, the edit list undone, and the link with the
edits opened in a fresh browser reproducing the edited model.  Screenshots at 1280×800 are
saved under the test's tmp folder (GRAPHLAB_SCREENSHOTS=DIR keeps them)."""

from __future__ import annotations

import time
from urllib.parse import parse_qs

import onnx
import pytest
from selenium.webdriver.common.keys import Keys

from benchmarks.journeys import Person, chromium
from compiler_core.ir import load_model
from graphlab.app import AppConfig, create_app
from graphlab.samples import resolve_model
from pane_helpers import pane_js

from edit_models import bypass_unblocks

pytestmark = pytest.mark.browser

SIZE = (1280, 800)


def tap(person: Person, model_path: str, name: str, side: str = "before") -> None:
    """Click the node called ``name`` in a pane, and wait for the inspector."""
    node_id = load_model(model_path).node_by_name(name).id
    pane_js(person, f"{side}.$id('n{node_id}').emit('tap');")
    person.wait_idle()
    assert person.eventually(lambda: name in person.text("#inspector"), 10), \
        person.text("#inspector")


def selected_row(person: Person) -> str:
    return person.text(".pass-row.selected").replace("\n", " | ")


def wait_for(person: Person, css: str, seconds: float = 90) -> None:
    end = time.time() + seconds
    while not person._all(css):
        assert time.time() < end, f"{css} never appeared"
        time.sleep(0.2)
    person.wait_idle()


def rebuilt(person: Person, action) -> None:
    """Do ``action`` and wait until the panes show the view the edit made."""
    shown = person.shown()
    action()
    person.wait_shown_other_than(shown, timeout=120)


def assert_sound(person: Person, where: str) -> None:
    errors = person.console_errors()
    assert not errors, f"{where}: console errors: {errors[:2]}"
    cut = person.cut_off()
    assert not cut, f"{where}: text cut off: {cut}"


def test_the_suggested_fix_makes_the_declined_fold_fire_and_the_link_keeps_it(served, shots):
    person = Person(chromium(*SIZE), served)
    path = resolve_model("teach_conv_bn")
    try:
        person.open("?model=teach_conv_bn")
        assert "fold_batchnorm" in selected_row(person) and "1 rewrite" in selected_row(person)
        tap(person, path, "bn_shared")
        assert "Conv output has another consumer (Relu 'relu_side')" in \
            person.text("#edit-misses")
        person.click("#edit-suggest")
        wait_for(person, ".edit-suggestion")
        fix = person.text(".edit-suggestion")
        assert "fix: delete relu_side" in fix and "rewrites 2 (was 1)" in fix
        assert "side_branch" in fix and "no longer computed" in fix   # its effect
        person.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});",
                                     person._all(".edit-suggestion")[0])   # read, as a person
        person.driver.save_screenshot(str(shots / "edit-suggested-fix.png"))
        assert_sound(person, "the suggestion")

        rebuilt(person, lambda: person.click(".edit-suggestion button"))
        row = selected_row(person)
        assert "fold_batchnorm" in row and "2 rewrites" in row, row   # same pass, it fired
        assert "delete relu_side" in person.text("#edit-list")
        query = person.url_query()
        assert parse_qs(query.lstrip("?"))["edits"] == ['[{"edit":"delete","node":"relu_side"}]']
        person.driver.save_screenshot(str(shots / "edit-fusion-fires.png"))
        assert_sound(person, "the edited model")

        rebuilt(person, lambda: person.click(".edit-remove"))      # undone
        assert "1 rewrite" in selected_row(person) and "fold_batchnorm" in selected_row(person)
        assert "No edits yet" in person.text("#edit-list")
        assert "edits=" not in person.url_query()
    finally:
        person.driver.quit()

    fresh = Person(chromium(*SIZE), served)   # the shared link, in another browser
    try:
        fresh.open(query)
        row = selected_row(fresh)
        assert "fold_batchnorm" in row and "2 rewrites" in row, row
        assert "delete relu_side" in fresh.text("#edit-list")
        assert_sound(fresh, "the shared link")
    finally:
        fresh.driver.quit()


def test_the_wrong_constant_typed_in_the_inspector_makes_gelu_fire(served, shots):
    person = Person(chromium(*SIZE), served)
    path = resolve_model("teach_gelu")
    try:
        person.open("?model=teach_gelu")
        assert "recognize_gelu" in selected_row(person) and "1 rewrite" in selected_row(person)
        tap(person, path, "gelu_wrongconst_div")
        box = person._all("textarea[id*='tensor:gelu_wrongconst_sqrt2']")[0]
        assert box.get_attribute("value") == "1.5"
        box.send_keys(Keys.CONTROL, "a")   # select what it holds and type over it
        box.send_keys("1.41421356")
        button = next(b for b in person._all(".edit-node button")
                      if "tensor:gelu_wrongconst_sqrt2" in (b.get_attribute("id") or ""))
        rebuilt(person, button.click)
        row = selected_row(person)
        assert "recognize_gelu" in row and "2 rewrites" in row, row
        assert "set tensor gelu_wrongconst_sqrt2 = 1.41421356" in person.text("#edit-list")
        person.driver.save_screenshot(str(shots / "edit-constant-set.png"))
        assert_sound(person, "the constant set")

        rebuilt(person, lambda: person.click("#edit-undo"))
        assert "1 rewrite" in selected_row(person)
    finally:
        person.driver.quit()


def test_bypassing_the_blocking_reader_rewiring_by_a_click_and_a_refused_edit(dash_duo,
                                                                             tmp_path, shots):
    path = tmp_path / "bypass_unblocks.onnx"
    onnx.save(bypass_unblocks(), path)
    app = create_app(AppConfig(cache_dir=str(tmp_path / "sessions"),
                               extra_model_path=str(path)))
    dash_duo.start_server(app)
    person = Person(dash_duo.driver, dash_duo.server_url)
    dash_duo.driver.set_window_size(*SIZE)
    person.open("?model=bypass_unblocks.onnx")
    rows = person._all(".pass-row")
    person.click(".pass-row", next(i for i, r in enumerate(rows) if "fold_batchnorm" in r.text))
    assert "changed nothing" in selected_row(person), selected_row(person)
    tap(person, str(path), "side_add")
    rebuilt(person, lambda: person.click("button[id*='\"bypass\"']"))
    assert person.eventually(lambda: "1 rewrite" in selected_row(person), 60), \
        selected_row(person)
    assert "bypass side_add" in person.text("#edit-list")

    tap(person, str(path), "relu")        # rewire by picking the value in a pane
    person.click("button[id*='\"pick:0\"']")
    assert "click the node in either pane" in person.text("#edit-pick-note")
    conv = load_model(str(path)).node_by_name("conv").id
    rebuilt(person, lambda: pane_js(person, f"before.$id('n{conv}').emit('tap');"))
    assert "rewire relu input 0 to conv_out" in person.text("#edit-list")
    assert person.text("#edit-pick-note") == ""

    tap(person, str(path), "conv")        # an edit the model refuses: said, nothing applied
    person.click("button[id*='\"delete\"']")
    assert person.eventually(lambda: "edit 3 (delete)" in person.text("#nav-message"), 60), \
        person.text("#nav-message")
    assert "is read by Relu 'relu'" in person.text("#nav-message")
    assert "bypass side_add" in person.text("#edit-list")
    assert "delete" not in person.text("#edit-list")
    person.driver.save_screenshot(str(shots / "edit-refused.png"))
