"""The error overlay's heat scale: every compared value's node coloured by how far it is from
its counterpart on the other side, relative to the value's own scale (`fault_finding.bisect`).

Bands are steps of the tolerance, a traffic light a room reads from the back: green "agrees"
far below it, yellow "close" and orange "near the tolerance" below it, red "wrong" above it,
and values that cannot be compared element for element (another shape, NaN where the other
has a number) darkest.  Nodes with no value compared keep a
plain fill with grey text.  A collapsed group takes its worst member's band.  The bands are
element classes with fixed style rules, like the intensity overlay's (`intensity_bands`).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

from .intensity_bands import Band, paint

# (band, what the legend says) in order of error; `low`/`high` are fractions of the tolerance.
ERROR_BANDS = (
    (Band("err-0", "#cdeccf", "#1f2933", 0, 1 / 1000), "agrees (under 1/1000 of the tolerance)"),
    (Band("err-1", "#fde68a", "#1f2933", 1 / 1000, 1 / 10), "close"),
    (Band("err-2", "#f59e42", "#1f2933", 1 / 10, 1), "near the tolerance, still right"),
    (Band("err-3", "#cb181d", "#ffffff", 1, math.inf), "wrong: above the tolerance"),
)
NOT_COMPARABLE = Band("err-inf", "#4a0010", "#ffffff", 0, 0)
NOT_COMPARED = Band("err-none", "#ffffff", "#9aa5b1", 0, 0)


def band_of(error: float, rtol: float) -> Band:
    if not math.isfinite(error):
        return NOT_COMPARABLE
    ratio = error / rtol if rtol > 0 else (0.0 if error == 0 else math.inf)
    return next(band for band, _ in ERROR_BANDS if ratio < band.high)


def error_classes(node_ids: Iterable[int], errors: dict[int, float], rtol: float
                  ) -> dict[int, str]:
    """Node id -> band class: its error's band, or "not compared"."""
    return {i: (band_of(errors[i], rtol) if i in errors else NOT_COMPARED).css_class
            for i in node_ids}


def group_error_classes(errors: dict[int, float], rtol: float,
                        groups_of: Callable[[int], Iterable[str]]) -> dict[str, str]:
    """Group id -> the band of its worst compared member (``groups_of``: a node's groups)."""
    worst: dict[str, float] = {}
    for node_id, error in errors.items():
        for group in groups_of(node_id):
            worst[group] = max(worst.get(group, -1.0), error if not math.isnan(error) else math.inf)
    return {group: band_of(error, rtol).css_class for group, error in worst.items()}


def paint_errors(elements: list[dict], node_ids: Iterable[int], errors: dict[int, float],
                 rtol: float, groups_of: Callable[[int], Iterable[str]]) -> None:
    paint(elements, error_classes(node_ids, errors, rtol),
          group_error_classes(errors, rtol, groups_of))


def error_stylesheet() -> list[dict]:
    """Fill and text colour per band; the diff marks and the selection stay on top."""
    return [{"selector": f".{band.css_class}",
             "style": {"background-color": band.fill, "color": band.text_colour}}
            for band in (*(b for b, _ in ERROR_BANDS), NOT_COMPARABLE, NOT_COMPARED)]


def legend_entries(rtol: float) -> list[tuple[Band, str]]:
    """(band, label) for the legend, each with its range in the report's units."""
    entries = []
    for band, words in ERROR_BANDS:
        low, high = band.low * rtol, band.high * rtol
        span = (f"< {high:.0e}" if band.low == 0 else f"≥ {low:.0e}"
                if math.isinf(band.high) else f"{low:.0e}–{high:.0e}")
        entries.append((band, f"{span}: {words}"))
    return entries + [(NOT_COMPARABLE, "cannot compare (other shape, NaN)"),
                      (NOT_COMPARED, "no counterpart: not compared")]
