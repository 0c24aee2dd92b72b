"""Each rule judged on the graph its pass receives, with every match the pass did not rewrite.

A fusion often relies on the passes before it: attention fusion finds rotary as the one node
``recognize_rotary`` makes, after cleanup has removed what an exporter left in the way.  Judging
a pattern on the model as loaded answers a question nobody asked, and can contradict what
``compile`` does.  So a pattern is judged where its pass meets it: on the graph that pass
receives in the pipeline.  A site the pattern matched there but the pass left as it was is a
*decline* with its reason — the one the pass recorded (naming the node that refused it, when
one did), or, when the pass recorded none, a sentence saying so — so the pattern report and the
pipeline never disagree silently.

The records here are built from a ``PipelineResult`` and plain pattern records, so the CLI
(``graphlab explain``), the notebook (``CompileResult.patterns``) and the app's Patterns tab
show the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ...errors import GraphLabError
from ...ir import Node
from ...patterns import Pattern, PatternRecord, explain
from ...patterns.records import MatchRecord, NearMissRecord
from ...records import record_field, text_or_none, to_json
from .base import Decline
from .pass_registry import all_passes, get_pass
from .rulebook import registered_patterns
from .snapshots import PipelineResult

UNRECORDED = "matched, but {pass_name} left it as it was and recorded no reason"


@dataclass(frozen=True)
class JudgedGraph:
    """Which graph a pattern was judged on: the input of pass ``index`` of the pipeline, or
    (``index`` None) the model as loaded."""

    pipeline: str
    index: int | None = record_field(omit=True, default=None)
    pass_name: str = record_field(key="pass", convert=text_or_none, default="")
    after: str = record_field(convert=text_or_none, default="")   # the pass before (first: "")
    nodes: int = 0
    why: str = record_field(omit=True, default="")   # why this graph, when not a pass's input

    json_derived = ("pass_number", ("description", "describe"))
    json_order = ("pipeline", "pass", "pass_number")

    @property
    def is_input(self) -> bool:
        return self.index is None

    @property
    def pass_number(self) -> int | None:
        """The pass's 1-based number in the pipeline (None: the model as loaded)."""
        return None if self.index is None else self.index + 1

    def describe(self) -> str:
        """'the graph pass 22 of O2 (fuse_attention) receives, after recognize_rotary
        (125 nodes)'."""
        if self.index is None:
            what = f"the input model ({self.nodes} nodes)"
        else:
            after = f", after {self.after}" if self.after else ", the input model"
            what = (f"the graph pass {self.index + 1} of {self.pipeline} ({self.pass_name}) "
                    f"receives{after} ({self.nodes} nodes)")
        return f"{what}: {self.why}" if self.why else what


@dataclass(frozen=True)
class JudgedPattern:
    """One pattern's report on one judged graph, with what the pass did with each match."""

    report: PatternRecord = record_field(omit=True)
    graph: JudgedGraph
    # per match: the pass rewrote it (JSON: in each match, and ``pass_rewrites`` as "rewritten")
    rewritten: tuple[bool, ...] = record_field(omit=True, default=())
    declines: tuple[Decline, ...] = ()    # the pass's refusals concerning this pattern
    by_pass: bool = record_field(omit=True, default=False)   # the pass of ``graph`` runs it

    json_derived = ("name", "description", ("matches", "judged_matches"), "near_misses",
                    "reasons", ("pass", "graph.pass_name", text_or_none),
                    ("rewritten", "pass_rewrites"))
    json_order = ("name", "description", "matches", "near_misses", "reasons", "pass", "graph",
                  "rewritten", "declines")

    @property
    def name(self) -> str:
        return self.report.name

    @property
    def description(self) -> str:
        return self.report.description

    @property
    def matches(self) -> tuple[MatchRecord, ...]:
        return self.report.matches

    @property
    def near_misses(self) -> tuple[NearMissRecord, ...]:
        return self.report.near_misses

    @property
    def reasons(self) -> dict[str, int]:
        return self.report.reasons

    @property
    def strong_misses(self) -> tuple[NearMissRecord, ...]:
        return self.report.strong_misses

    @property
    def weak_misses(self) -> tuple[NearMissRecord, ...]:
        return self.report.weak_misses

    def grouped(self) -> list[tuple[str, list[NearMissRecord]]]:
        return self.report.grouped()

    @property
    def rewrites(self) -> int:
        return sum(self.rewritten)

    @property
    def pass_rewrites(self) -> int | None:
        """How many matches its pass rewrote (None: no pass runs it on this graph)."""
        return self.rewrites if self.by_pass else None

    def judged_matches(self) -> list[dict]:
        """The matches as JSON, each saying whether the pass rewrote it (when a pass ran)."""
        records = to_json(self.matches)
        for record, done in zip(records, self.rewritten):
            record["rewritten"] = done
        return records

    def __repr__(self) -> str:
        where = self.graph.pass_name or "the input model"
        matches, misses = len(self.matches), len(self.near_misses)
        return (f"<JudgedPattern {self.name} on {where}: {matches} "
                f"match{'es' if matches != 1 else ''} ({self.rewrites} rewritten), "
                f"{len(self.declines)} declined, {misses} near "
                f"miss{'es' if misses != 1 else ''}>")


@dataclass(frozen=True)
class PassVerdict:
    """Every pattern judged on one graph, and every rewrite the pass declined there."""

    graph: JudgedGraph
    patterns: tuple[JudgedPattern, ...] = ()
    declines: tuple[Decline, ...] = ()     # all of the pass's declines, in its order
    # what the asked node was found as, or why not
    note: str = record_field(convert=text_or_none, default="")

    json_derived = (("pass", "graph.pass_name", text_or_none),)
    json_order = ("graph", "pass", "note")

    @property
    def every_decline(self) -> tuple[Decline, ...]:
        """The pass's declines, then the matches it left without recording why."""
        told = set(self.declines)
        extra = [d for p in self.patterns for d in p.declines if d not in told]
        return (*self.declines, *dict.fromkeys(extra))


# --------------------------------------------------------------------------- one pass
def judged_graph(result: PipelineResult, index: int | None, pipeline: str,
                 why: str = "") -> JudgedGraph:
    if index is None:
        return JudgedGraph(pipeline, None, nodes=len(result.initial), why=why)
    snapshot = result.snapshots[index]
    after = result.snapshots[index - 1].pass_name if index > 0 else ""
    return JudgedGraph(pipeline, index, snapshot.pass_name, after, snapshot.nodes_before, why)


def judge_pass(result: PipelineResult, index: int, pipeline: str,
               reports: Sequence[PatternRecord] | None = None, note: str = "") -> PassVerdict:
    """Pass ``index``'s patterns (its own reports, or ``reports`` made on its input graph)
    with what it did to every match: rewritten, or declined and why."""
    snapshot = result.snapshots[index]
    graph = judged_graph(result, index, pipeline)
    reports = list(snapshot.pattern_reports if reports is None else reports)
    touched = set(snapshot.diff.removed) | set(snapshot.diff.modified)
    owners = _owners(reports, snapshot.declined)
    judged = []
    for report_index, report in enumerate(reports):
        own = [d for d, owner in zip(snapshot.declined, owners) if owner == report_index]
        rewritten, extra = [], []
        for match in report.matches:
            ids = {n.id for n in match.nodes}
            # a match the pass declined at one of its nodes was not rewritten, even when
            # another rewrite took some of its nodes
            declined = any(d.node_id in ids for d in own)
            done = bool(ids & touched) and not declined
            rewritten.append(done)
            if not done and not declined and not any(_concerns(d, ids) for d in own):
                extra.append(Decline(match.root.name, report.name,
                                     UNRECORDED.format(pass_name=snapshot.pass_name),
                                     match.root.id, None, tuple(match.nodes)))
        judged.append(JudgedPattern(report, graph, tuple(rewritten), tuple(own + extra), True))
    return PassVerdict(graph, tuple(judged), tuple(snapshot.declined), note)


def _owners(reports: Sequence[PatternRecord], declines: Sequence[Decline]) -> list[int | None]:
    """For each decline, the report it concerns (named by its rule, else the one whose match
    or near miss is at its nodes, else the pass's only report); None when none is."""
    owners: list[int | None] = []
    for decline in declines:
        owner = next((i for i, r in enumerate(reports) if r.name == decline.rule), None)
        if owner is None:
            owner = next((i for i, r in enumerate(reports)
                          if any(_concerns(decline, {n.id for n in m.nodes}) for m in r.matches)
                          or decline.node_id in {m.site.id for m in r.near_misses}), None)
        if owner is None and len(reports) == 1:
            owner = 0
        owners.append(owner)
    return owners


def _concerns(decline: Decline, ids: set[int]) -> bool:
    return decline.node_id in ids or any(n.id in ids for n in decline.nodes)


def judge_graph(result: PipelineResult, index: int | None, pipeline: str,
                reports: Sequence[PatternRecord], why: str = "",
                note: str = "") -> PassVerdict:
    """Patterns no pass of the pipeline runs here, judged on the input of pass ``index`` (or
    on the model as loaded): matches and near misses, no rewrite to compare with."""
    graph = judged_graph(result, index, pipeline, why)
    return PassVerdict(graph, tuple(JudgedPattern(r, graph) for r in reports), (), note)


# --------------------------------------------------------------------------- the pipeline
@dataclass
class _Plan:
    index: int | None
    patterns: list[Pattern | str] = field(default_factory=list)   # str: use the pass's record
    why: str = ""


def judge_pipeline(result: PipelineResult, pipeline: str, *,
                   patterns: Iterable[str] | None = None, extra: Sequence[Pattern] = (),
                   before: str | None = None, node: str | None = None,
                   all_sites: bool = False) -> list[PassVerdict]:
    """Every pattern judged on the graph its pass receives (see the module docstring).

    ``patterns``: names of registered patterns (default: all, unless ``extra`` is given);
    ``extra``: patterns of the user's (text files), which no pass runs.  A pattern no pass of the
    pipeline runs is judged on the model as loaded, and says so.  ``before``: judge only on
    the input of that pass (a name, its first occurrence, or a 1-based number) — its own
    patterns, or those asked for.  ``node``: only what concerns that node, found on each
    judged graph by name, or, when a pass renamed or replaced it, as what stands for it there
    (``PassVerdict.note`` says which).  ``all_sites`` keeps sites that failed at the root.
    """
    if patterns is not None:
        names: list[str] | None = list(patterns)
    else:
        names = [] if extra else None   # None: every pattern
    wanted = set(names or ())
    plans: list[_Plan] = []
    runs: dict[str, list[int]] = {}   # pattern name -> passes reporting it
    for snapshot in result.snapshots:
        for report in snapshot.pattern_reports:
            runs.setdefault(report.name, []).append(snapshot.index)
    if before is not None:
        index = pass_index(result, before)
        pass_name = result.snapshots[index].pass_name
        own = [r.name for r in result.snapshots[index].pattern_reports]
        if patterns is None and not extra:
            chosen = own or list(registered_patterns())
        else:
            chosen = list(names or ())
        mine = [n for n in chosen if n in own]
        others: list[Pattern | str] = [n for n in chosen if n not in own] + list(extra)
        if mine:
            plans.append(_Plan(index, mine))
        if others:
            plans.append(_Plan(index, others, f"{pass_name} runs no pattern" if not own else
                               f"{pass_name} does not run "
                               + ("it" if len(others) == 1 else "them")))
    else:
        for snapshot in result.snapshots:
            own = [r.name for r in snapshot.pattern_reports
                   if names is None or r.name in wanted]
            if own:
                plans.append(_Plan(snapshot.index, own))
        known = list(registered_patterns()) if names is None else names
        loose = [n for n in known if n not in runs]
        if loose:
            plans.append(_Plan(None, list(loose),
                               f"no pass of {pipeline} runs "
                               + ("it" if len(loose) == 1 else "them")))
        if extra:
            plans.append(_Plan(None, list(extra), "your patterns (--before PASS judges them "
                                                  "on the graph a pass receives)"))
    asked = patterns is not None or bool(extra)   # named: an attempt rooted at the node too
    return [_judge_plan(result, pipeline, plan, node, all_sites, asked) for plan in plans]


def _judge_plan(result: PipelineResult, pipeline: str, plan: _Plan, node: str | None,
                all_sites: bool, asked: bool) -> PassVerdict:
    graph = result.graph_before(plan.index) if plan.index is not None else result.initial
    target, note = (None, "") if node is None else find_node(result, plan.index, node)
    own = {r.name: r for r in result.snapshots[plan.index].pattern_reports} \
        if plan.index is not None else {}
    pass_runs = plan.index is not None and not plan.why and all(
        isinstance(p, str) and p in own for p in plan.patterns)
    if node is not None and target is None:
        reports: list[PatternRecord] = []
    elif pass_runs and node is None and not all_sites:
        reports = [own[p] for p in plan.patterns]   # what the pass itself saw
    else:
        live = [_pattern_of(result, plan.index, p) for p in plan.patterns]
        reports = [r.record() for r in explain(graph, live, node=target, all_sites=all_sites,
                                               rooted=asked)]
        # a pass's own pattern keeps the name its report has
        reports = [_named(r, p) for r, p in zip(reports, plan.patterns)]
    if pass_runs:
        return judge_pass(result, plan.index, pipeline, reports, note)
    return judge_graph(result, plan.index, pipeline, reports, plan.why, note)


def _named(record: PatternRecord, asked: Pattern | str) -> PatternRecord:
    if isinstance(asked, str) and record.name != asked:
        return PatternRecord(asked, record.description, record.matches, record.near_misses)
    return record


def _pattern_of(result: PipelineResult, index: int | None, asked: Pattern | str) -> Pattern:
    """The live pattern behind a report name: the pattern of that name of the pass judged
    there, else of any registered pass."""
    if not isinstance(asked, str):
        return asked
    own = _patterns_of(result.snapshots[index].pass_name) if index is not None else {}
    found = own.get(asked) or registered_patterns().get(asked)
    if found is None:
        where = f" of pass {result.snapshots[index].pass_name}" if index is not None else ""
        raise GraphLabError(f"pattern {asked!r}{where} cannot be run again on one node",
                            hint="leave out --node and --all-sites to see its report")
    return found


def _patterns_of(pass_name: str) -> dict[str, Pattern]:
    if pass_name not in all_passes():
        return {}
    return {pattern.title: pattern for pattern in get_pass(pass_name).patterns()}


def pass_index(result: PipelineResult, which: str) -> int:
    """The snapshot index of a pass named by ``which`` (its first occurrence) or by its
    1-based number in the pipeline."""
    names = [s.pass_name for s in result.snapshots]
    if which.isdigit() and 1 <= int(which) <= len(names):
        return int(which) - 1
    if which in names:
        return names.index(which)
    raise GraphLabError(f"the pipeline has no pass {which!r}",
                        hint="passes: " + ", ".join(f"{i + 1} {n}" for i, n in enumerate(names)))


# --------------------------------------------------------------------------- --node
def find_node(result: PipelineResult, index: int | None, name: str) -> tuple[Node | None, str]:
    """The node called ``name`` on the input of pass ``index`` (or the model as loaded), and
    a sentence when it is not there under that name: renamed, replaced (by what, in which
    pass), or removed.  Raises when no graph of the run has such a node."""
    graph = result.graph_before(index) if index is not None else result.initial
    found = graph.node_by_name(name)
    if found is not None:
        return found, ""
    original = _first_named(result, name)
    if original is None:
        raise GraphLabError(f"no node named {name!r} in the model or in any pass's output",
                            hint="`graphlab show MODEL` lists the node names; `graphlab "
                                 "compile MODEL --print-ir-after all` those after each pass")
    where = f"the graph {result.snapshots[index].pass_name} receives" if index is not None \
        else "the input model"
    same = graph.node_by_id(original.id)
    if same is not None:
        return same, f"{name!r} is called {same.name!r} in {where}"
    stands, by = _replacement(result, index, original.id)
    if stands is not None:
        return stands, (f"{name!r} is not in {where}: {by} replaced it by {stands.op_type} "
                        f"{stands.name!r}, judged instead")
    removed = f"{by} removed it" if by else "it comes later in the pipeline"
    return None, f"{name!r} is not in {where}: {removed}"


def _first_named(result: PipelineResult, name: str) -> Node | None:
    for graph in (result.initial, *(s.graph for s in result.snapshots)):
        found = graph.node_by_name(name)
        if found is not None:
            return found
    return None


def _replacement(result: PipelineResult, index: int | None,
                 node_id: int) -> tuple[Node | None, str]:
    """What stands for ``node_id`` on the input of pass ``index``: the node made from it
    (following rewrites of rewrites), and the pass that replaced it; (None, pass) when it was
    removed with nothing made from it; (None, '') when it does not exist yet."""
    upto = len(result.snapshots) if index is None else index
    graph = result.graph_before(index) if index is not None else result.initial
    by = ""
    for snapshot in result.snapshots[:upto]:
        if node_id in snapshot.diff.removed and not by:
            by = snapshot.pass_name
    if not by:
        return None, ""
    for node in graph.nodes:
        if node.provenance is not None and node_id in node.provenance.sources:
            return node, node.provenance.pass_name or by
    return None, by


__all__ = ["JudgedGraph", "JudgedPattern", "PassVerdict", "UNRECORDED", "find_node",
           "judge_graph", "judge_pass", "judge_pipeline", "judged_graph", "pass_index"]
