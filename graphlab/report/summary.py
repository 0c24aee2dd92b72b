"""The report's opening: the outcome in one paragraph, then the model as loaded (signature,
parameters, opsets) and its ops before and after the pipeline."""

from __future__ import annotations

from compiler_core.ir.summary import op_histogram, summarize

from ..units import format_bytes, format_seconds
from .markup import Markup, tag
from .story import Story


def outcome(story: Story) -> Markup:
    result = story.result
    checked = [s.verify for s in result.snapshots if s.verify is not None]
    if checked:
        failed = [s.pass_name for s in result.snapshots if s.verify is not None
                  and not s.verify.ok]
        check = (f"outputs changed beyond tolerance after {', '.join(failed)}" if failed else
                 f"every pass keeps the outputs within tolerance (largest error "
                 f"{max(r.max_abs_err for r in checked):.2g})")
        if result.verifier is not None:
            check += f", on {result.verifier.describe_inputs()}"
    else:
        check = story.verify_note or "not run"
    speedup = story.costs.speedup
    changed = sum(1 for s in result.snapshots if s.changed)
    edited = (f" (edited first: {len(story.edits)} edit{'s' if len(story.edits) != 1 else ''},"
              f" listed under The model)" if story.edits else "")
    return tag("p", tag("b", story.label), edited, f" went through pipeline {story.pipeline} "
                    f"({len(result.snapshots)} passes, {changed} of them changed the graph) in "
                    f"{format_seconds(result.seconds)}: ",
               tag("b", f"{len(result.initial)} → {len(result.final)} nodes"),
               f"; estimated time on {story.target.name} "
               f"{format_seconds(story.costs.before.total_est_seconds)} → "
               f"{format_seconds(story.costs.after.total_est_seconds)}"
               + ("" if speedup is None else f" ({speedup:.2f}× faster)")
               + f"; arena peak {format_bytes(story.memory_before.peak_bytes)} → "
                 f"{format_bytes(story.memory_after.peak_bytes)}. Numerical check: {check}."
               + (f" Symbolic dims priced at {story.sizes.describe()}."
                  if story.sizes.chosen else ""),
               class_="outcome")


def model_section(story: Story) -> list[Markup]:
    info = summarize(story.result.initial)
    facts = [("graph name", info["name"]),
             ("producer", info["producer"] or "unknown"),
             ("opsets", ", ".join(f"{d} {v}" for d, v in info["opset"].items())),
             ("parameters", f"{info['params']:,} in {info['initializers']} initializers"),
             ("inputs", "; ".join(_signature(v) for v in info["inputs"])),
             ("outputs", "; ".join(_signature(v) for v in info["outputs"]))]
    parts = [tag("table", tag("tbody", [tag("tr", tag("th", k), tag("td", v))
                                        for k, v in facts]), class_="facts-table")]
    if story.edits:
        parts += [tag("h4", "Edits made to the model before the pipeline"),
                  tag("ol", [tag("li", line) for line in story.edits], class_="edits")]
    if info["warnings"]:
        parts += [tag("h4", "Import warnings"),
                  tag("ul", [tag("li", w) for w in info["warnings"]], class_="notes")]
    before, after = op_histogram(story.result.initial), op_histogram(story.result.final)
    ops = list(before) + [op for op in after if op not in before]
    parts += [tag("h4", "Ops before and after the pipeline"), tag("table", tag(
        "thead", tag("tr", tag("th", "op"), tag("th", "before"), tag("th", "after"))),
        tag("tbody", [tag("tr", tag("td", op), tag("td", before.get(op, 0), class_="num"),
                          tag("td", after.get(op, 0), class_="num"),
                          class_=None if before.get(op, 0) == after.get(op, 0) else "changed")
                      for op in ops]), class_="ops-histogram")]
    return parts


def _signature(value: dict) -> str:
    shape = "?" if value["shape"] is None else \
        "[" + ", ".join("?" if d is None else str(d) for d in value["shape"]) + "]"
    return f"{value['name']}: {value['dtype']}{shape}"
