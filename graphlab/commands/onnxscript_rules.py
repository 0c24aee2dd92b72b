"""`graphlab explain MODEL --onnxscript-rules MODULE[:NAME]`: onnxscript's own verdicts.

Each rule is run by onnxscript over the model (see ``compiler_core.onnxscript_rules``); the
text says per rule where it matched, where it came closest and why not, at which node, with
the nodes named as GraphLab names them.  ``--json`` prints the same records the app shows.
"""

from __future__ import annotations

from compiler_core.errors import GraphLabError
from compiler_core.ir import Graph
from compiler_core.onnxscript_rules import RuleSite, RulesReport, RuleVerdict, explain_rules
from compiler_core.onnxscript_rules.records import MATCHED

from .common import print_json

SITES_SHOWN = 3          # matches, closest sites and reasons printed per rule
NODES_SHOWN = 6          # matched nodes printed per site


def add_option(parser) -> None:
    parser.add_argument("--onnxscript-rules", metavar="MODULE[:NAME]",
                        help="judge onnxscript rewrite rules with onnxscript itself: a module "
                             "(e.g. onnxscript.rewriter.ort_fusions), a .py file, or NAME in "
                             "it (a rule, a rule set, a list); it runs as code: name only "
                             "modules you trust")


def run(args, graph: Graph) -> int:
    if args.pattern or args.all_sites:
        raise GraphLabError("--onnxscript-rules explains onnxscript's rules, not library "
                            "patterns", hint="leave out --pattern and --all-sites, or run "
                                             "explain twice")
    report = explain_rules(graph, args.onnxscript_rules, node=args.node)
    if args.json:
        print_json({"onnxscript_rules": report})
    else:
        print("\n".join(report_lines(report, args.model)))
    return 0


def report_lines(report: RulesReport, model: str) -> list[str]:
    counts = report.summary
    lines = [f"onnxscript rules from {report.spec} on {model} ({report.node_count} "
             f"nodes), judged by onnxscript {report.onnxscript_version}:",
             f"  {counts['matched']} matched, {counts['near miss']} came close, "
             f"{counts['no partial match']} found no partial match, {counts['raised']} raised"]
    lines += [f"  note: {note}" for note in report.notes]
    quiet: dict[str, list[str]] = {}
    group = None
    for verdict in report.rules:
        source = _group(verdict.source, report.spec)
        if report.node is None and verdict.verdict == "no partial match":
            quiet.setdefault(source, []).append(verdict.name)
            continue
        if source != group:
            lines.append(source)
            group = source
        lines += (_at_node_lines(verdict, report.node) if report.node is not None
                  else rule_lines(verdict))
    if quiet:
        lines.append("no partial match anywhere (not even the node the rule ends at):")
        lines += [f"  {source}: {', '.join(names)}" for source, names in quiet.items()]
    return lines


def rule_lines(verdict: RuleVerdict) -> list[str]:
    if verdict.error is not None:
        return [f"  {verdict.name}: ✗ raised {verdict.error}"]
    matches = verdict.matches
    head = f"  {verdict.name}: {_count(len(matches), 'match', 'matches')}"
    if verdict.near_miss_count:
        head += f", {_count(verdict.near_miss_count, 'near miss', 'near misses')}"
    lines = [head]
    for match in matches[:SITES_SHOWN]:
        lines.append(f"    ✓ {match.root.name}{_with(match)}")
    if len(matches) > SITES_SHOWN:
        lines.append(f"      … and {len(matches) - SITES_SHOWN} more")
    closest = verdict.closest
    if closest:
        lines.append(f"    closest ({_count(len(closest), 'site', 'sites')}, "
                     f"{len(closest[0].nodes)} node{'s' if len(closest[0].nodes) != 1 else ''}"
                     f" matched):")
        for site in closest[:SITES_SHOWN]:
            lines += site_lines(site, indent="      ")
        if len(closest) > SITES_SHOWN:
            lines.append(f"      … and {len(closest) - SITES_SHOWN} more sites alike")
    others = [(r, n) for r, n in verdict.reasons if r not in {s.reason for s in closest}]
    for reason, count in others[:SITES_SHOWN]:
        lines.append(f"    ✗ {_count(count, 'other site', 'other sites')}: {reason}")
    return lines


def site_lines(site: RuleSite, indent: str) -> list[str]:
    """One site: status and reason at its root, where it failed, what matched so far."""
    lines = [f"{indent}✗ at {site.root.name}: {site.status}: {site.reason or '(no reason given)'}"]
    if site.where:
        lines.append(f"{indent}    ({site.where})")
    failed = ", ".join([f"value {v}" for v in site.failed_values]
                       + [n.name for n in site.failed_at])
    lines.append(f"{indent}    failed at  "
                 f"{failed or '(onnxscript names no node: its check judged the whole match)'}")
    if site.blocking:
        lines.append(f"{indent}    read by    {', '.join(n.name for n in site.blocking)} "
                     f"(outside the match)")
    if site.nodes:
        lines.append(f"{indent}    matched    {_names(site.nodes)}")
    return lines


def _at_node_lines(verdict: RuleVerdict, node: str) -> list[str]:
    if verdict.error is not None:
        return [f"  {verdict.name}: ✗ raised {verdict.error}"]
    inside = [m for m in verdict.matches if node in {n.name for n in m.nodes}]
    site = verdict.at_node
    if site is not None and site.status == MATCHED:
        return [f"  {verdict.name}: ✓ matches at {node}{_with(site)}"]
    lines = [f"  {verdict.name}: ✓ {node} is part of its match at {m.root.name}" for m in inside]
    if site is None:
        return lines or [f"  {verdict.name}: not tried at {node}"]
    if site.score == 0:   # not even the node the rule ends at: one line says why
        return lines + [f"  {verdict.name}: ✗ {site.status}: {site.reason}"]
    return lines + [f"  {verdict.name}:"] + site_lines(site, indent="    ")


def _group(source: str, spec: str) -> str:
    """'onnxscript.rewriter.ort_fusions.gelu:gelu_rules[1]' under spec '...ort_fusions' ->
    'gelu:gelu_rules'."""
    group = source.rsplit("[", 1)[0]
    module = spec.split(":", 1)[0]
    for prefix in (module + ".", module + ":"):
        if group.startswith(prefix):
            return group[len(prefix):]
    return group


def _with(site: RuleSite) -> str:
    others = [n for n in site.nodes if n != site.root]
    return f"  (with {_names(others)})" if others else ""


def _names(refs) -> str:
    names = [r.name for r in refs]
    more = f", … {len(names) - NODES_SHOWN} more" if len(names) > NODES_SHOWN else ""
    return ", ".join(names[:NODES_SHOWN]) + more


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
