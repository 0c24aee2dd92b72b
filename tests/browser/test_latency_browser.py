"""A person measures a pass: press "Measure this pass", read its latency before and after
beside the prediction, open the Roofline tab and read the ops measured beside predicted, at a
projector's 1280×800 (screenshots under the test's tmp folder, or GRAPHLAB_SCREENSHOTS=DIR)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from compiler_core.profiling.machine import measure_machine
from pane_helpers import wait_for_nodes

HEADLINE = re.compile(r"^(\w+): (\d+\.\d+) → (\d+\.\d+) ms measured, (\d+\.\d+) → (\d+\.\d+) "
                      r"ms predicted$")


@pytest.fixture(scope="module")
def machine():
    return measure_machine()


def test_measuring_a_pass_shows_its_latency_before_and_after_beside_the_prediction(
        machine, dash_duo, graphlab_app, tmp_path):
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.set_window_size(1280, 800)
    wait_for_nodes(dash_duo)
    dash_duo.wait_for_contains_text("#latency-result", "not measured yet", timeout=10)
    title = dash_duo.find_element("#pane-before-title").text
    dash_duo.find_element("#latency-measure").click()
    dash_duo.wait_for_contains_text("#latency-result", "ms predicted", timeout=180)
    lines = dash_duo.find_element("#latency-result").text.splitlines()
    found = HEADLINE.match(lines[0])
    assert found, lines[0]
    assert found.group(1) in title          # the pass the panes show
    assert all(float(found.group(i)) > 0 for i in range(2, 6))
    assert "best of 5 runs" in lines[1] and machine.name in lines[1]
    result = dash_duo.find_element("#latency-result")
    assert dash_duo.driver.execute_script(
        "return arguments[0].scrollWidth <= arguments[0].clientWidth + 1;", result)
    folder = Path(os.environ.get("GRAPHLAB_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    dash_duo.driver.save_screenshot(str(folder / "measure_pass_1280x800.png"))
    dash_duo.driver.find_element(
        "xpath", "//*[@id='side-tabs']//*[normalize-space(text())='Roofline']").click()
    dash_duo.wait_for_contains_text("#roofline-measured", "Measured on", timeout=60)
    rows = dash_duo.find_elements("#roofline-measured-ops tbody tr")
    assert rows and all(len(row.find_elements("css selector", "td")) == 4 for row in rows)
    for row in rows:
        cells = row.find_elements("css selector", "td")
        measured, predicted = float(cells[1].text), float(cells[2].text)
        assert measured >= 0 and predicted > 0
        if "⚠" in cells[3].text:
            assert "dominates" in cells[3].get_attribute("title")
    table = dash_duo.find_element("#roofline-measured-ops table")
    assert dash_duo.driver.execute_script(
        "return arguments[0].scrollWidth <= arguments[0].clientWidth + 1;", table)
    dash_duo.driver.save_screenshot(str(folder / "roofline_measured_1280x800.png"))
    dash_duo.find_element("#step-next").click()          # a pass nobody has measured yet
    dash_duo.wait_for_contains_text("#latency-result", "not measured yet", timeout=20)
    assert not [entry for entry in dash_duo.get_logs() or [] if entry["level"] == "SEVERE"]
