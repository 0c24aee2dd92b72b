"""What the chart views share: their figures are the plain dicts plotly.js reads,
``{"data": [...], "layout": {...}}``, never plotly's figure objects.

Those objects validate and deep-copy every property as it is set (`make_subplots`, `add_hline`
and `update_layout` each walk the figure again): 40-170 ms a figure, most of a chart tab's
answer, only for dcc.Graph to turn them back into the same JSON.  A dict costs nothing to
build and is sent as it is; `plotly.graph_objects.Figure(d)` still reads one where a test
wants the object model.
"""

from __future__ import annotations

from functools import lru_cache

import plotly.io as pio


@lru_cache(maxsize=1)
def plotly_white() -> dict:
    """The plotly_white template as plotly.js reads it (what ``template="plotly_white"``
    expands to in a figure object).  Shared by every figure: read it, never change it."""
    return pio.templates["plotly_white"].to_plotly_json()


def row_domains(columns: int, spacing: float | None = None) -> list[list[float]]:
    """The x domains of ``columns`` side-by-side panels, as `make_subplots(rows=1, cols=n)`
    lays them out (its default spacing is 0.2 / n)."""
    spacing = 0.2 / columns if spacing is None else spacing
    width = (1 - spacing * (columns - 1)) / columns
    return [[i * (width + spacing), i * (width + spacing) + width] for i in range(columns)]
