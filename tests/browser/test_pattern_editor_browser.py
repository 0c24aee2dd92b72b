"""The pattern editor in a real (headless) browser: type a pattern and see its matches in the
panes, type a broken one and see where it is broken, share the view by its address."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from selenium.webdriver.common.keys import Keys

from compiler_core.ir import load_model
from graphlab.samples import resolve_model

from pane_helpers import pane_js, wait_for_nodes, wait_until

pytestmark = pytest.mark.browser

MATCH_COLOUR = "rgb(28,126,214)"
TYPED = "def erf_part(x):\n    return Erf(x / sqrt(2))\n"


def node_ids(sample: str, *names: str) -> list[str]:
    graph = load_model(resolve_model(sample))
    return [f"n{graph.node_by_name(name).id}" for name in names]


def border(dash_duo, element: str) -> str:
    return pane_js(dash_duo, f"return before.getElementById('{element}').style('border-color');")


def type_pattern(dash_duo, text: str) -> None:
    box = dash_duo.find_element("#editor-text")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.DELETE)   # as a user clears it (React does not see element.clear())
    box.send_keys(text)
    dash_duo.find_element("#editor-find").click()


def test_typing_a_pattern_highlights_its_matches_and_a_broken_one_says_where(dash_duo,
                                                                           graphlab_app):
    dash_duo.start_server(graphlab_app)
    dash_duo.driver.get(dash_duo.server_url + "/?model=teach_gelu&panel=editor")
    wait_for_nodes(dash_duo)
    type_pattern(dash_duo, TYPED)
    dash_duo.wait_for_contains_text("#editor-results", "erf_part 1 match, 1 near miss", timeout=15)
    good, wrong = node_ids("teach_gelu", "gelu_good_erf", "gelu_wrongconst_erf")
    wait_until(dash_duo, lambda: border(dash_duo, good) == MATCH_COLOUR,
               message="the match is not highlighted")
    assert border(dash_duo, wrong) != MATCH_COLOUR
    assert parse_qs(urlparse(dash_duo.driver.current_url).query)["pat"] == [TYPED]

    type_pattern(dash_duo, "def f(x):\n    return Erf(x) + foo\n")
    dash_duo.wait_for_contains_text("#editor-error", "line 2, column 21: unknown name 'foo'",
                                    timeout=15)
    assert dash_duo.find_element("#editor-error pre").text.endswith("^")
    assert dash_duo.find_element("#editor-results").text == ""
    wait_for_nodes(dash_duo)   # the page carries on


def test_a_shared_address_restores_the_text_and_its_highlights(dash_duo, graphlab_app):
    dash_duo.start_server(graphlab_app)
    query = "?model=teach_conv_bn&panel=editor&pat=" + (
        "def+conv_bn%28x%29%3A%0A++++return+BatchNormalization%28Conv%28x%2C+const%28%29%29"
        "%2C+const%28%29%2C+const%28%29%2C+const%28%29%2C+const%28%29%29%0A")
    dash_duo.driver.get(dash_duo.server_url + "/" + query)
    wait_for_nodes(dash_duo)
    wait_until(dash_duo, lambda: "BatchNormalization(Conv(x, const())" in
               dash_duo.find_element("#editor-text").get_attribute("value"),
               message="the text box did not take the address's text")
    dash_duo.wait_for_contains_text("#editor-results", "conv_bn 0 matches, 2 near misses",
                                    timeout=15)
    blocked = next(b for b in dash_duo.find_elements(".pattern-item.miss")
                   if b.text.startswith("bn_shared"))
    blocked.click()
    dash_duo.wait_for_contains_text(".focus.miss", "Relu 'relu_side'", timeout=10)
    [relu_side] = node_ids("teach_conv_bn", "relu_side")
    wait_until(dash_duo, lambda: pane_js(
        dash_duo, f"return before.getElementById('{relu_side}').style('border-style');")
        == "dashed", message="the blocking consumer is not highlighted")
    assert "hl=edit-miss" in dash_duo.driver.current_url

    dash_duo.find_element("button[id*='LayerNorm']").click()   # an example replaces the text
    wait_until(dash_duo, lambda: dash_duo.find_element("#editor-text").get_attribute(
        "value").startswith('"""Layer normalization'), message="the example was not loaded")
    dash_duo.wait_for_contains_text("#editor-results", "layernorm 0 matches", timeout=15)
    dash_duo.driver.back()   # back to the shared text
    wait_until(dash_duo, lambda: "BatchNormalization(Conv(x, const())" in
               dash_duo.find_element("#editor-text").get_attribute("value"),
               message="back did not restore the text")
