"""The pipeline, pass by pass: the summary table, then for every pass that did or saw
something its diff (removed, added with provenance, modified), notes, declined rewrites and
the patterns it matched or nearly matched."""

from __future__ import annotations

from collections import Counter

from compiler_core.passes import Snapshot
from compiler_core.records import to_json

from ..units import format_seconds
from .markup import Markup, tag
from .patterns import pattern_tables
from .story import Story

LIST_OPEN_UP_TO = 25   # longer node lists start folded


def anchor(snapshot: Snapshot) -> str:
    return f"pass-{snapshot.index + 1}"


def has_details(snapshot: Snapshot) -> bool:
    return bool(snapshot.changed or snapshot.declined or snapshot.notes or any(
        r.matches or r.near_misses for r in snapshot.pattern_reports))


def verify_text(snapshot: Snapshot) -> str:
    report = snapshot.verify
    if report is None:
        return "—"
    return f"{'ok' if report.ok else 'FAILED'} (max abs err {report.max_abs_err:.2g})"


def pass_table(story: Story) -> Markup:
    head = tag("thead", tag("tr", *(tag("th", h) for h in (
        "#", "pass", "nodes before", "nodes after", "rewrites", "time", "check"))))
    rows = []
    for s in story.result.snapshots:
        name = tag("a", s.pass_name, href=f"#{anchor(s)}") if has_details(s) else s.pass_name
        failed = s.verify is not None and not s.verify.ok
        rows.append(tag(
            "tr", tag("td", s.index + 1), tag("td", name, title=s.description),
            tag("td", s.nodes_before, class_="num"), tag("td", s.nodes_after, class_="num"),
            tag("td", s.rewrites, class_="num"), tag("td", format_seconds(s.seconds), class_="num"),
            tag("td", verify_text(s), class_="failed" if failed else None),
            class_=None if s.changed else "unchanged"))
    return tag("table", head, tag("tbody", rows), class_="passes")


def pass_sections(story: Story) -> list[Markup]:
    return [_pass_section(story, s) for s in story.result.snapshots if has_details(s)]


def _pass_section(story: Story, s: Snapshot) -> Markup:
    rewrites = f"{s.rewrites} rewrite{'s' if s.rewrites != 1 else ''}"
    parts = [tag("h3", f"Pass {s.index + 1}: {s.pass_name}"),
             tag("p", s.description, class_="description"),
             tag("p", f"{s.nodes_before} → {s.nodes_after} nodes, {rewrites}, "
                      f"{format_seconds(s.seconds)}; numerical check: {verify_text(s)}",
                 class_="facts")]
    parts += _diff(story, s)
    if s.notes:
        parts += [tag("h4", "Notes"), tag("ul", [tag("li", n) for n in s.notes])]
    if s.declined:
        parts += [tag("h4", f"Rewrites declined ({len(s.declined)})"), tag("table", tag(
            "thead", tag("tr", tag("th", "rule"), tag("th", "site"), tag("th", "reason"))),
            tag("tbody", [tag("tr", tag("td", d.rule), tag("td", d.site), tag("td", d.reason))
                          for d in s.declined]), class_="declined")]
    parts += pattern_tables(to_json(s.pattern_reports))
    return tag("section", parts, id=anchor(s), class_="pass")


def _diff(story: Story, s: Snapshot) -> list[Markup]:
    if not s.changed:
        return [tag("p", "The graph is unchanged.", class_="muted")]
    graph = s.graph
    added = []
    for node_id in s.diff.added:
        node = graph.node_by_id(node_id)
        made = node.provenance
        origin = (f" — made by rule {made.rule} from "
                  + ", ".join(str(story.node(i)) for i in made.replaced_ids)) if made else ""
        added.append(tag("li", tag("b", str(story.node(node_id))), origin))
    return [_node_list("Removed", [tag("li", str(story.node(i))) for i in s.diff.removed],
                       [story.node(i).op for i in s.diff.removed]),
            _node_list("Added", added, [story.node(i).op for i in s.diff.added]),
            _node_list("Modified (same node, other inputs or attributes)",
                       [tag("li", str(story.node(i)), _changes(s, i)) for i in s.diff.modified],
                       [story.node(i).op for i in s.diff.modified])]


def _changes(s: Snapshot, node_id: int) -> str:
    """' — input 1 (B): 'x' → 'y'; attribute axes: [1] → [-1]'."""
    changes = s.diff.changes_of(node_id)
    return (" — " + "; ".join(c.text() for c in changes)) if changes else ""


def _node_list(title: str, items: list[Markup], ops: list[str]) -> Markup | None:
    if not items:
        return None
    counts = ", ".join(f"{n} × {op}" for op, n in Counter(ops).most_common())
    return tag("details", tag("summary", tag("b", f"{title}: {len(items)} node"
                                               f"{'s' if len(items) != 1 else ''}"),
                              f" ({counts})"),
               tag("ul", items, class_="nodes"),
               open=len(items) <= LIST_OPEN_UP_TO, class_="diff")
