"""Helpers for the browser tests: reach into the panes' cytoscape instances and wait."""

from __future__ import annotations

import re

from selenium.webdriver.support.ui import WebDriverWait

# The page's element ids carry the drawn model's namespace ('3fa2c1d0|n12', see
# graphlab/app/page_ids.py); the tests name elements by the server's ids ('n12').
BY_LOCAL_ID = ("function byLocal(cy, id) { if (String(id).indexOf('|') >= 0) {"
               "  return cy.getElementById(id); }"   # a page id, read from the page
               "  var first = cy.elements()[0];"
               "  var space = first ? first.id().split('|')[0] + '|' : '';"
               "  return cy.getElementById(space + id); }")


def pane_js(dash_duo, script: str, *args):
    """Run ``script`` with ``before`` / ``after`` bound to the panes' cytoscape instances
    (and ``arguments`` to ``args``); ``cy.getElementById(id)`` and ``cy.$id(id)`` take the
    server's ids."""
    script = re.sub(r"(\w+)\.(?:getElementById|\$id)\(", r"byLocal(\1, ", script)
    return dash_duo.driver.execute_script(
        "var p = window.graphlabPanes; if (!p) { return null; }"
        "var before = p.before, after = p.after;" + BY_LOCAL_ID + script, *args)


def wait_until(dash_duo, condition, timeout: float = 15, message: str = ""):
    return WebDriverWait(dash_duo.driver, timeout).until(lambda _: condition(), message)


def wait_for_nodes(dash_duo, timeout: float = 20) -> None:
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, "return before.nodes('.op').length > 0 && after.nodes('.op').length > 0;"),
        timeout, "the panes drew no nodes")


def chart_js(driver, graph_id: str, script: str, timeout: float = 20):
    """Run ``script`` with ``gd`` bound to the plotly chart inside the dcc.Graph ``graph_id``,
    looked at as a person looks: scrolled into view (again while the page moves it), so a
    figure held until the chart is seen (assets/charts_when_seen.js) is drawn first.  None
    while there is no chart."""
    looked = ("var gd = document.querySelector('#%s > div:last-child');"
              "if (gd && window.graphlabChartWaits(gd)) {"
              "  gd.scrollIntoView({block: 'nearest'}); return 'held'; }"
              "return 'drawn';" % graph_id)
    WebDriverWait(driver, timeout, poll_frequency=0.1).until(
        lambda d: d.execute_script(looked) == "drawn", f"{graph_id} was never drawn")
    return driver.execute_script(f"var gd = document.querySelector('#{graph_id} > div:last-child');"
                                 "if (!gd || !gd.data) { return null; }" + script)
