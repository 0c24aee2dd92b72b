"""Pattern reports as tables: matches, and near misses grouped by reason with what was
expected, what was found, where (the path from the pattern's root) and who blocked it."""

from __future__ import annotations

from .markup import Markup, tag


def pattern_tables(reports: list[dict]) -> list[Markup]:
    """The matches table and the grouped near-miss table of one set of pattern reports."""
    active = [r for r in reports if r.get("matches") or r.get("near_misses")]
    quiet = [r["name"] for r in reports if r not in active]
    parts: list[Markup] = []
    matches = [(r["name"], m) for r in active for m in r.get("matches", [])]
    if matches:
        parts += [tag("h4", f"Matches ({len(matches)})"), _matches_table(matches)]
    misses = [(r["name"], m) for r in active for m in r.get("near_misses", [])]
    if misses:
        parts += [tag("h4", f"Near misses ({len(misses)}), grouped by reason"),
                  _near_miss_table(misses)]
    if quiet:
        parts.append(tag("p", "Also checked, with no match and no near miss: ",
                         ", ".join(quiet), ".", class_="muted"))
    return parts


def _matches_table(matches: list[tuple[str, dict]]) -> Markup:
    rows = [tag("tr", tag("td", pattern), tag("td", match.get("root", "")),
                tag("td", ", ".join(match.get("nodes", []))))
            for pattern, match in matches]
    return tag("table", tag("thead", tag("tr", tag("th", "pattern"), tag("th", "root"),
                                         tag("th", "nodes"))),
               tag("tbody", rows), class_="matches")


def grouped_by_reason(misses: list[tuple[str, dict]]) -> list[tuple[str, list[tuple[str, dict]]]]:
    """(reason, near misses) with the most frequent reason first, ties in first-seen order."""
    groups: dict[str, list[tuple[str, dict]]] = {}
    for pattern, miss in misses:
        groups.setdefault(miss.get("reason", "?"), []).append((pattern, miss))
    return sorted(groups.items(), key=lambda item: -len(item[1]))


def _near_miss_table(misses: list[tuple[str, dict]]) -> Markup:
    head = tag("thead", tag("tr", *(tag("th", h) for h in (
        "pattern", "site", "expected", "found", "path", "blocking consumer"))))
    bodies = []
    for reason, group in grouped_by_reason(misses):
        sites = f"{len(group)} site{'s' if len(group) != 1 else ''}"
        rows = [tag("tr", tag("th", f"{sites}: ", tag("span", reason, class_="reason"),
                              colspan=6, class_="group"))]
        rows += [tag("tr", tag("td", pattern), tag("td", miss.get("site", "")),
                     tag("td", miss.get("expected", "")), tag("td", miss.get("found", "")),
                     tag("td", miss.get("path", ""), class_="path"),
                     tag("td", miss.get("blocking_node") or "—"))
                 for pattern, miss in group]
        bodies.append(tag("tbody", rows))
    return tag("table", head, bodies, class_="near-misses")
