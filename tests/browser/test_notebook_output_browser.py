"""What `graphlab.show()` leaves in a notebook, opened in a real browser as an exported or
re-opened notebook is: the static report when no server answers (or another one does), the
live app in front of it when the kernel's server of this very output answers."""

from __future__ import annotations


import pytest

from benchmarks.load import free_port

import graphlab
from graphlab.app import AppConfig, create_app
from graphlab.notebook.display import add_alive_route, live_output, report_document

from pane_helpers import wait_until

pytestmark = pytest.mark.browser




@pytest.fixture(scope="module")
def report():
    return report_document(graphlab.compile("cnn_bn"))


def open_output(dash_duo, tmp_path, name: str, output: dict) -> None:
    page = tmp_path / f"{name}.html"   # as an exported notebook's page holds the cell's output
    page.write_text(f"<!DOCTYPE html><html><body>{output['text/html']}</body></html>")
    dash_duo.driver.get(page.as_uri())


def showing(dash_duo) -> str:
    return dash_duo.driver.execute_script(
        "return document.querySelector('.graphlab-show').getAttribute('data-showing');")


def report_title(dash_duo) -> str:
    frame = dash_duo.driver.find_element("css selector", "iframe.graphlab-report")
    assert frame.is_displayed() and frame.size["height"] > 300
    dash_duo.driver.switch_to.frame(frame)
    try:
        return wait_until(dash_duo, lambda: dash_duo.driver.execute_script(
            "return document.readyState === 'complete' && document.title;"), 10,
            "the report did not load in its frame")
    finally:
        dash_duo.driver.switch_to.default_content()


def test_without_its_server_the_output_shows_the_report(dash_duo, tmp_path, report):
    nobody = f"http://127.0.0.1:{free_port()}/"   # nothing listens there
    open_output(dash_duo, tmp_path, "dead", live_output(nobody, "t0ken", report, 500))
    dash_duo.wait_for_contains_text(".graphlab-caption", "the static report", timeout=10)
    assert report_title(dash_duo) == "GraphLab report: cnn_bn"
    assert showing(dash_duo) == "report"
    assert not dash_duo.driver.find_elements("css selector", "iframe.graphlab-app")


def test_its_own_server_brings_the_live_app_in_front_and_another_does_not(dash_duo, tmp_path,
                                                                        report):
    app = create_app(AppConfig(cache_dir=str(tmp_path / "cache")))
    add_alive_route(app.server, "t0ken")
    dash_duo.start_server(app, port=free_port())
    url = dash_duo.server_url + "/"

    open_output(dash_duo, tmp_path, "other", live_output(url, "another", report, 500))
    dash_duo.wait_for_contains_text(".graphlab-caption", "the static report", timeout=10)
    assert report_title(dash_duo) == "GraphLab report: cnn_bn"   # not this output's server

    open_output(dash_duo, tmp_path, "live", live_output(url, "t0ken", report, 500))
    wait_until(dash_duo, lambda: showing(dash_duo) == "app", 15, "the live app never came")
    assert "the live app, served by this notebook's kernel" in \
        dash_duo.find_element(".graphlab-caption").text
    live = dash_duo.driver.find_element("css selector", "iframe.graphlab-app")
    assert live.get_attribute("src") == url and live.is_displayed()
    assert not dash_duo.driver.find_element("css selector", "iframe.graphlab-report") \
        .is_displayed()
    dash_duo.driver.switch_to.frame(live)
    try:
        wait_until(dash_duo, lambda: "GraphLab" in (dash_duo.driver.execute_script(
            "return document.title;") or ""), 20, "the app did not load in its frame")
    finally:
        dash_duo.driver.switch_to.default_content()
