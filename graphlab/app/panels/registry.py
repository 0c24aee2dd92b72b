"""Every panel of the page, in page order: the page lays them out, the factory registers their
callbacks, the view state accepts their tab names — all from this one list.

A new panel is one module ending in its `Panel` declaration, and one line below.
"""

from __future__ import annotations

from . import build_progress, compare, compare_bar, controls, edit_controls, edit_list, \
    exports, inspector, latency, memory, numerics, onnxscript_rules, overlay, panes, \
    pattern_editor, patterns, reduce_view, report_download, roofline, service_banner, stepper, \
    systolic, wrong_value
from .panel import TAB, Panel

PANELS: tuple[Panel, ...] = (
    controls.PANEL,
    compare_bar.PANEL,
    report_download.PANEL,
    service_banner.PANEL,
    build_progress.PANEL,
    stepper.PANEL,
    edit_list.PANEL,
    panes.PANEL,
    inspector.PANEL,
    edit_controls.PANEL,
    patterns.PANEL,
    onnxscript_rules.PANEL,
    pattern_editor.PANEL,
    roofline.PANEL,
    systolic.PANEL,
    memory.PANEL,
    compare.PANEL,
    numerics.PANEL,
    wrong_value.PANEL,
    reduce_view.PANEL,
    latency.PANEL,
    overlay.PANEL,
    exports.PANEL,
)


def placed(place: str) -> list[Panel]:
    return [panel for panel in PANELS if panel.place == place]


def tab_names() -> tuple[str, ...]:
    return tuple(panel.name for panel in placed(TAB))


def follows_selection() -> set[str]:
    return {panel.name for panel in PANELS if panel.follows_selection}
