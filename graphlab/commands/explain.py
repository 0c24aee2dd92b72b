"""`graphlab explain MODEL`: where each library pattern matches, and why it does not elsewhere.

Near misses are grouped by reason ("3 sites: Softmax input 0: expected Add, found Where"), each
with where it failed, what was expected and what was found.  ``--json`` prints the same
reports the app shows.
"""

from __future__ import annotations

from compiler_core.errors import GraphLabError
from compiler_core.patterns import PatternReport, explain, list_patterns

from . import onnxscript_rules
from .common import (add_json_flag, add_model_argument, add_plugins_option, load_graph,
                     print_json)
from .pattern_files import add_patterns_option, chosen_patterns

SITES_SHOWN = 3         # example sites printed per reason
ALTERNATIVES_SHOWN = 4  # OR branches printed for a near miss when one node is asked about


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "explain", help="show where patterns match and why they did not match elsewhere")
    add_model_argument(parser)
    parser.add_argument("--pattern", action="append", metavar="NAME",
                        help="a library pattern to explain (repeatable; default: all of "
                             f"them: {', '.join(list_patterns())})")
    add_patterns_option(parser)
    parser.add_argument("--node", metavar="NODE",
                        help="explain only what concerns this node (by name)")
    parser.add_argument("--all-sites", action="store_true",
                        help="also list sites where nothing but the root op matched")
    onnxscript_rules.add_option(parser)
    add_plugins_option(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    graph = load_graph(args.model)
    if args.onnxscript_rules:
        return onnxscript_rules.run(args, graph)
    unknown = sorted(set(args.pattern or ()) - set(list_patterns()))
    if unknown:
        raise GraphLabError(f"unknown pattern {', '.join(map(repr, unknown))}",
                            hint="known patterns: " + ", ".join(list_patterns()))
    if args.node is not None and graph.node_by_name(args.node) is None:
        raise GraphLabError(f"no node named {args.node!r} in the model",
                            hint="`graphlab show MODEL` lists the node names")
    patterns = chosen_patterns(args.pattern, args.patterns)
    reports = explain(graph, patterns, node=args.node, all_sites=args.all_sites)
    if args.json:
        print_json({"patterns": [r.to_dict() for r in reports]})
        return 0
    quiet = [r.name for r in reports if not r.matches and not r.near_misses]
    for report in reports:
        if report.name not in quiet:
            print("\n".join(report_lines(report, detailed=args.node is not None)))
    if quiet:
        hint = "" if args.all_sites or args.node else (
            " (sites that failed right below the root op are not listed: --all-sites lists "
            "them, --node NAME explains one node)")
        print(f"no match and no near miss: {', '.join(quiet)}{hint}")
    return 0


def report_lines(report: PatternReport, detailed: bool = False) -> list[str]:
    """A pattern's report as text: matches, then near misses grouped by reason."""
    lines = [f"{report.name}: {_count(len(report.matches), 'match', 'matches')}, "
             f"{_count(len(report.near_misses), 'near miss', 'near misses')}",
             f"  {report.description}"]
    for match in report.matches:
        others = [n.name for n in match.nodes if n is not match.root]
        lines.append(f"  ✓ {match.root.name}" + (f"  (with {', '.join(others)})" if others else ""))
    for reason, misses in report.grouped():
        lines.append(f"  ✗ {_count(len(misses), 'site', 'sites')}: {reason}")
        for miss in misses[:SITES_SHOWN]:
            failure = miss.failure
            lines.append(f"      at {miss.site.name} (score {failure.score:.2f}): "
                         f"{failure.path_text}")
            lines.append(f"        expected {failure.expected}")
            lines.append(f"        found    {failure.found}")
            if detailed:
                others = [a for a in miss.alternatives() if a.reason != failure.reason
                          or a.path_text != failure.path_text]
                for alternative in others[:ALTERNATIVES_SHOWN]:
                    lines.append(f"        or: {alternative.reason}  ({alternative.path_text})")
        if len(misses) > SITES_SHOWN:
            lines.append(f"      … and {len(misses) - SITES_SHOWN} more")
    return lines


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
