"""`graphlab explain MODEL`: where each pattern matches, why not elsewhere, and what its pass did.

Each pattern of the registered passes (a rule's own, or one a pass says it looks for) is judged
on the graph its pass receives in the pipeline (default O2), as `compile` runs it, so a fusion
that relies on earlier passes (attention on the RotaryEmbedding node recognize_rotary makes) is
judged where it runs; the graph is named on every report.
Every site the pattern matched there but the pass did not rewrite is listed as declined, with
the reason the pass gave and the node that refused it.  Near misses are grouped by reason,
strongest first; the weak ones (that failed near the pattern's root) are folded.  ``--json``
prints the same records the app and the notebook show.
"""

from __future__ import annotations

from compiler_core.compilation import compile_model
from compiler_core.errors import GraphLabError
from compiler_core.passes.framework.base import Decline
from compiler_core.passes.framework.judged import (JudgedPattern, PassVerdict, judge_pipeline,
                                                   pass_index)
from compiler_core.passes.framework.rulebook import registered_patterns
from compiler_core.patterns import STRONG_SCORE, Pattern, PatternRecord

from ..user_input import parse_bindings
from . import onnxscript_rules
from .common import (add_edits_option, add_json_flag, add_model_argument, add_plugins_option,
                     edits_line, load_edited, print_json)
from .pattern_files import add_patterns_option, chosen_patterns

SITES_SHOWN = 3         # example sites printed per reason
ALTERNATIVES_SHOWN = 4  # OR branches printed for a near miss when one node is asked about
DEFAULT_PIPELINE = "O2"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "explain", help="show where patterns match, why they did not match elsewhere, and "
                        "what each pass did with its matches")
    add_model_argument(parser)
    parser.add_argument("--pattern", action="append", metavar="NAME",
                        help="a pattern to explain: one of the passes' (a rule's pattern, "
                             "such as conv_bn or attention) or one a pass of the pipeline "
                             "reports (repeatable; default: all of them; an unknown name "
                             "lists them)")
    add_patterns_option(parser)
    parser.add_argument("--node", metavar="NODE",
                        help="explain only what concerns this node (by name; a node a pass "
                             "renamed or replaced is followed to what stands for it)")
    parser.add_argument("--all-sites", action="store_true",
                        help="also list weak near misses and sites where nothing but the "
                             "root op matched")
    parser.add_argument("-p", "--pipeline", metavar="P", default=DEFAULT_PIPELINE,
                        help="judge each pattern on the graph its pass receives in this "
                             f"pipeline (a preset or a list of passes; default "
                             f"{DEFAULT_PIPELINE})")
    parser.add_argument("--before", metavar="PASS",
                        help="judge on the graph this pass receives (a name, or its number "
                             "in the pipeline): its own patterns, or those asked for")
    parser.add_argument("--bind", metavar="k=v,...", default=None,
                        help="sizes of symbolic dims the pipeline specializes, as for compile")
    onnxscript_rules.add_option(parser)
    add_edits_option(parser)
    add_plugins_option(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    graph, edited = load_edited(args.model, args.edits)
    if edited and not args.json:
        print(edits_line(edited))
    if args.onnxscript_rules and not args.before:   # judged on the model as loaded
        return onnxscript_rules.run(args, graph)
    result = compile_model(graph, args.pipeline, parse_bindings(args.bind)).result
    if args.onnxscript_rules:
        return onnxscript_rules.run(args, result.graph_before(pass_index(result, args.before)))
    known = list(dict.fromkeys([*registered_patterns(), *(r.name for s in result.snapshots
                                                          for r in s.pattern_reports)]))
    unknown = sorted(set(args.pattern or ()) - set(known))
    if unknown:
        raise GraphLabError(f"unknown pattern {', '.join(map(repr, unknown))}",
                            hint="known patterns: " + ", ".join(known))
    chosen = chosen_patterns(args.pattern, args.patterns)
    names = None if chosen is None else [p for p in chosen if isinstance(p, str)]
    extra = [] if chosen is None else [p for p in chosen if isinstance(p, Pattern)]
    verdicts = judge_pipeline(result, args.pipeline, patterns=names, extra=extra,
                              before=args.before, node=args.node, all_sites=args.all_sites)
    if args.json:
        print_json({"pipeline": args.pipeline,
                    **({"edits": edited} if edited else {}),
                    "judged": verdicts,
                    "patterns": [p for v in verdicts for p in v.patterns]})
        return 0
    detailed = args.node is not None
    quiet: list[str] = []
    for verdict in verdicts:
        lines = verdict_lines(verdict, detailed, args.all_sites,
                              others=chosen is None and not detailed)
        if lines:
            print("\n".join(lines))
        quiet += [_where(p) for p in verdict.patterns
                  if not p.matches and not p.near_misses and not p.declines]
    if quiet:
        hint = "" if args.all_sites or args.node else (
            " (sites that failed right below the root op are not listed: --all-sites lists "
            "them, --node NAME explains one node)")
        print(f"no match and no near miss: {', '.join(quiet)}{hint}")
    return 0


def _where(judged: JudgedPattern) -> str:
    return f"{judged.name} ({judged.graph.pass_name})" if judged.graph.pass_name \
        else judged.name


def verdict_lines(verdict: PassVerdict, detailed: bool = False, all_misses: bool = False,
                  others: bool = True) -> list[str]:
    """One judged graph: which it is, each pattern's report, and the pass's other declines."""
    lines: list[str] = []
    shown: set[Decline] = set()
    for judged in verdict.patterns:
        if judged.matches or judged.near_misses or judged.declines:
            lines += report_lines(judged, detailed, all_misses)
        shown.update(judged.declines)
    rest = [d for d in verdict.declines if d not in shown]
    if others and rest:
        lines.append(f"{verdict.graph.pass_name} also declined:")
        lines += [f"  ✗ {_decline_text(d)}" for d in rest]
    if not lines and not verdict.note:
        return []   # nothing to say about this graph: its patterns are in the last line
    return [f"── judged on {verdict.graph.describe()}",
            *([f"   {verdict.note}"] if verdict.note else []), *lines]


def report_lines(report: PatternRecord | JudgedPattern, detailed: bool = False,
                 all_misses: bool = False) -> list[str]:
    """A pattern's report as text: matches (rewritten or declined, when judged in a pass),
    declines, then near misses grouped by reason, strong ones first; the weak ones folded
    unless ``detailed`` or ``all_misses``."""
    judged = report if isinstance(report, JudgedPattern) else None
    lines = [f"{report.name}: {_count(len(report.matches), 'match', 'matches')}, "
             f"{_count(len(report.near_misses), 'near miss', 'near misses')}"
             + (f"; {judged.graph.pass_name} rewrote {judged.rewrites}, declined "
                f"{len(judged.declines)}" if judged and judged.by_pass else ""),
             f"  {report.description}"]
    rewritten = judged.rewritten if judged else ()
    declined_sites = {d.node_id for d in judged.declines} if judged else set()
    for i, match in enumerate(report.matches):
        if i < len(rewritten) and not rewritten[i]:
            continue   # listed with its decline below
        others = [n.name for n in match.nodes if n != match.root]
        lines.append(f"  ✓ {match.root.name}" + (f"  (with {', '.join(others)})" if others else ""))
    miss_sites = {m.site.id for m in report.near_misses}
    for decline in (judged.declines if judged else ()):
        if decline.node_id not in miss_sites:
            lines.append(f"  ✗ declined {_decline_text(decline)}")
    groups = report.grouped()
    strong = [(r, m) for r, m in groups if m[0].score >= STRONG_SCORE]
    weak = [(r, m) for r, m in groups if m[0].score < STRONG_SCORE]
    full = strong + weak if detailed or all_misses else strong
    for reason, misses in full:
        lines.append(f"  ✗ {_count(len(misses), 'site', 'sites')}: {reason}")
        for miss in misses[:SITES_SHOWN]:
            lines.append(f"      at {miss.site.name} (score {miss.score:.2f}): {miss.path}")
            lines.append(f"        expected {miss.expected}")
            lines.append(f"        found    {miss.found}")
            if miss.site.id in declined_sites and judged is not None:
                lines.append(f"        declined by {judged.graph.pass_name}")
            if detailed:
                others = [a for a in miss.alternatives if a.get("reason") != miss.reason
                          or a.get("path") != miss.path]
                for alternative in others[:ALTERNATIVES_SHOWN]:
                    lines.append(f"        or: {alternative.get('reason')}  "
                                 f"({alternative.get('path')})")
        if len(misses) > SITES_SHOWN:
            lines.append(f"      … and {len(misses) - SITES_SHOWN} more")
    if weak and full is strong:
        count = sum(len(m) for _, m in weak)
        lines.append(f"  {_count(count, 'weak near miss', 'weak near misses')} (score < "
                     f"{STRONG_SCORE:.2f}; --all-sites or --node NAME shows them):")
        lines += [f"    ✗ {_count(len(m), 'site', 'sites')}: {r}" for r, m in weak]
    return lines


def _decline_text(decline: Decline) -> str:
    blocking = f"  (blocked by {decline.blocking.name})" if decline.blocking else ""
    return f"at {decline.site}: {decline.reason}{blocking}"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
