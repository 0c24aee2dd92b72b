"""The whole page: one HTML file with its stylesheet inlined, so it opens from disk, from an
e-mail or from a USB stick — no server, no network."""

from __future__ import annotations

from importlib import resources

from compiler_core.records import to_json

from ..version import __version__
from .hardware import memory_section, roofline_section
from .measured import measured_section
from .markup import Markup, join, tag
from .passes import pass_sections, pass_table
from .patterns import pattern_tables
from .story import Story
from .summary import model_section, outcome
from .systolic import systolic_section
from .traffic import traffic_section

READING_GUIDE = (
    "This page follows one model through a pipeline of compiler passes. The table lists every "
    "pass with the nodes it was given and left, the rewrites it made, its time and the "
    "numerical check (the pass's output run against the original model with onnxruntime). "
    "Each pass that did something has its own section: the nodes it removed, the nodes it "
    "added and what they were made from, and — for passes that look for patterns — where a "
    "pattern matched and where it almost did, with the reason it did not.")


def render(story: Story) -> str:
    """The report as one self-contained HTML document."""
    sections = [
        ("summary", "Summary", [outcome(story), tag("p", READING_GUIDE, class_="muted")]),
        ("model", "The model", model_section(story)),
        ("passes", "Passes", [pass_table(story)]),
        ("roofline", "Roofline", roofline_section(story)),
        ("traffic", "Pass by pass", traffic_section(story)),
        *([("measured", "Measured on this machine", measured_section(story))]
          if story.measured is not None else []),
        ("memory", "Memory plan", memory_section(story)),
        ("systolic", "Systolic array", systolic_section(story)),
        ("pass-details", "What each pass did", pass_sections(story)
         or [tag("p", "No pass changed anything or saw a pattern.", class_="muted")]),
        ("model-patterns", "Patterns in the model as loaded",
         [tag("p", "What every pattern of the library finds in the model before any pass: "
                   "near misses say which part of the pattern failed and why.", class_="muted"),
          *(pattern_tables(to_json([r.record() for r in story.model_patterns]))
            or [tag("p", "No pattern matches or nearly matches.", class_="muted")])]),
    ]
    title = f"GraphLab report: {story.label}"
    body = tag("body",
               tag("header", tag("h1", title),
                   tag("nav", [tag("a", heading, href=f"#{key}") for key, heading, _ in sections])),
               tag("main", [tag("section", tag("h2", heading), content, id=key)
                            for key, heading, content in sections]),
               tag("footer", f"Made by graphlab {__version__}."))
    head = tag("head", tag("meta", charset="utf-8"),
               tag("meta", name="viewport", content="width=device-width, initial-scale=1"),
               tag("title", title), tag("style", Markup(_stylesheet())))
    return "<!DOCTYPE html>\n" + join([tag("html", head, body, lang="en")])


def _stylesheet() -> str:
    return resources.files("graphlab.report").joinpath("report.css").read_text(encoding="utf-8")
