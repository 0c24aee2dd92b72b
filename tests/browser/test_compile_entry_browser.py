"""The app compiles as `graphlab compile` does: a person picks a model, a partitioning
pipeline and a target, and the passes column shows the partition planned for that target."""

from __future__ import annotations

import os

import pytest

from compiler_core.compilation import compile_model
from compiler_core.ir import load_model
from graphlab.samples import resolve_model, size_hints

from pane_helpers import wait_for_nodes, wait_until

pytestmark = pytest.mark.browser

MODEL, PIPELINE = "bert_tiny_op13", "O2-partition"


def last_pass_row(pipeline: str, target: str = "asic32") -> str:
    """The last pass's name and node counts as the passes column writes them, compiled here."""
    compiled = compile_model(load_model(resolve_model(MODEL)), pipeline, target=target,
                             size_hints=size_hints(MODEL))
    last = compiled.snapshots[-1]
    return f"{last.pass_name}\n{last.nodes_before} → {last.nodes_after} nodes"


def last_row(dash_duo) -> str:
    """The passes column's last row, as the page shows it now (redrawn as builds finish)."""
    return dash_duo.driver.execute_script(
        "const rows = document.querySelectorAll('.pass-list .pass-row');"
        "return rows.length ? rows[rows.length - 1].innerText : '';")


def test_partitioning_follows_the_target_the_person_picks(dash_duo, graphlab_app, tmp_path):
    opened = last_pass_row("O2")
    on_asic, on_teach = last_pass_row(PIPELINE, "asic32"), last_pass_row(PIPELINE, "teach16")
    assert on_asic != on_teach   # the two chips take different regions of this model
    dash_duo.driver.set_window_size(1280, 800)
    dash_duo.start_server(graphlab_app)
    wait_for_nodes(dash_duo)
    dash_duo.select_dcc_dropdown("#model-select", value=MODEL)
    wait_until(dash_duo, lambda: opened in last_row(dash_duo), 90,
               f"{MODEL}'s passes are not listed")
    dash_duo.select_dcc_dropdown("#pipeline-preset", value=PIPELINE)
    wait_until(dash_duo, lambda: on_asic in last_row(dash_duo), 90,
               f"the partition row does not read {on_asic} on asic32")
    dash_duo.select_dcc_dropdown("#target-select", value="teach16")
    wait_until(dash_duo, lambda: on_teach in last_row(dash_duo), 90,
               f"after picking teach16 the partition row does not read {on_teach}")
    assert "target=teach16" in dash_duo.driver.current_url
    title = dash_duo.find_element("#bindings-field").get_attribute("title")
    assert "--target teach16` (partition planned for it)" in title
    assert "partition plans for fixed sizes" in title
    dash_duo.driver.find_elements("css selector", ".pass-list .pass-row")[-1].click()
    dash_duo.wait_for_contains_text("#pane-after-title", "partition", timeout=30)
    folder = os.environ.get("GRAPHLAB_SCREENSHOTS") or str(tmp_path)
    dash_duo.driver.save_screenshot(os.path.join(folder, "partition-teach16-1280x800.png"))
