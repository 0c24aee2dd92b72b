"""Helpers for the browser tests: reach into the panes' cytoscape instances and wait."""

from __future__ import annotations

from selenium.webdriver.support.ui import WebDriverWait


def pane_js(dash_duo, script: str, *args):
    """Run ``script`` with ``before`` / ``after`` bound to the panes' cytoscape instances
    (and ``arguments`` to ``args``)."""
    return dash_duo.driver.execute_script(
        "var p = window.graphlabPanes; if (!p) { return null; }"
        "var before = p.before, after = p.after;" + script, *args)


def wait_until(dash_duo, condition, timeout: float = 15, message: str = ""):
    return WebDriverWait(dash_duo.driver, timeout).until(lambda _: condition(), message)


def wait_for_nodes(dash_duo, timeout: float = 20) -> None:
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, "return before.nodes('.op').length > 0 && after.nodes('.op').length > 0;"),
        timeout, "the panes drew no nodes")
