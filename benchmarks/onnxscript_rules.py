"""What each onnxscript rule reports on the bundled samples (or on your models), by onnxscript's
own verdict: the samples where it matched (how many sites), and where it came closest elsewhere
and why not.

    python benchmarks/onnxscript_rules.py                              # ort_fusions, every sample
    python benchmarks/onnxscript_rules.py --rules my_rules.py a.onnx   # your rules, your models
    python benchmarks/onnxscript_rules.py --markdown                   # a table for the docs

Each model is judged as given (GraphLab's import, shapes inferred), before any pass: the
verdicts `graphlab explain MODEL --onnxscript-rules RULES` prints one model at a time.  The
closest site shown per rule is the best of all models by onnxscript's tracer score.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler_core.ir import load_model  # noqa: E402
from compiler_core.onnxscript_rules import explain_rules, load_rules  # noqa: E402
from graphlab.samples import list_samples  # noqa: E402

DEFAULT_RULES = "onnxscript.rewriter.ort_fusions"
REASON_CHARS = 90


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help=".onnx files (default: every bundled sample)")
    parser.add_argument("--rules", default=DEFAULT_RULES, metavar="MODULE[:NAME]")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args(argv)
    models = [(Path(m).stem, m) for m in args.models] or \
        [(s.name, s.path) for s in list_samples()]
    catalog = load_rules(args.rules)
    started = time.perf_counter()
    rows: dict[str, dict] = {}
    for label, path in models:
        report = explain_rules(load_model(path), catalog)
        for verdict in report.rules:
            row = rows.setdefault(verdict.source, {"name": verdict.name, "matched": [],
                                                   "closest": None, "raised": []})
            if verdict.error:
                row["raised"].append(f"{label}: {verdict.error}")
            if verdict.matches:
                row["matched"].append(f"{label} ({len(verdict.matches)})")
            for site in verdict.closest[:1]:
                if row["closest"] is None or site.score > row["closest"][1].score:
                    row["closest"] = (label, site)
    seconds = time.perf_counter() - started
    print_table(rows, args.markdown)
    print(f"\n{len(rows)} rules from {args.rules} on {len(models)} models in {seconds:.1f} s")
    return 0


def print_table(rows: dict[str, dict], markdown: bool) -> None:
    header = ("rule", "matched in (sites)",
              "closest elsewhere: model, node, nodes matched, why not")
    lines = [header] + [(row["name"], ", ".join(row["matched"]) or "—", _closest(row))
                        for row in rows.values()]
    if markdown:
        print("| " + " | ".join(header) + " |\n|---|---|---|")
        for line in lines[1:]:
            print("| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |")
        return
    widths = [max(len(line[i]) for line in lines) for i in range(2)]
    for line in lines:
        print(f"{line[0]:<{widths[0]}}  {line[1]:<{widths[1]}}  {line[2]}")


def _closest(row: dict) -> str:
    if row["raised"]:
        return "raised: " + "; ".join(row["raised"])
    if row["closest"] is None:
        return "no partial match in any model"
    label, site = row["closest"]
    reason = site.reason if len(site.reason) <= REASON_CHARS else \
        site.reason[:REASON_CHARS - 1] + "…"
    failed = f", failed at {site.failed_at[0].name}" if site.failed_at else ""
    return f"{label}, {site.root.name}, {len(site.nodes)}: {site.status}: {reason}{failed}"


if __name__ == "__main__":
    sys.exit(main())
