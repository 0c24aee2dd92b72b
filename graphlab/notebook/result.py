"""`graphlab.compile(model)`: a pipeline run kept with everything the CLI reports about it.

The result holds compiler_core's own records — the snapshots (one per pass, with its diff and
pattern reports), the roofline before and after, the memory plan — each with a readable repr;
``to_dict()`` is what `compile`, `roofline`, `memory` and `explain` print with ``--json``.
The analyses run when first asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from compiler_core.compilation import Compilation, compile_model
from compiler_core.errors import GraphLabError
from compiler_core.hardware import CostComparison, MemoryPlan, compare_costs, plan_memory
from compiler_core.hardware.node_schedule import schedule_node
from compiler_core.hardware.representative_sizes import ChosenSizes
from compiler_core.hardware.targets import DEFAULT_TARGET, get_target
from compiler_core.ir import Graph
from compiler_core.passes import PipelineResult, Snapshot
from compiler_core.passes.framework.diff import GraphDiff
from compiler_core.passes.framework.judged import JudgedPattern, judge_pipeline
from compiler_core.profiling.pipeline import MeasuredPipeline
from compiler_core.runtime_check import LEVELS
from compiler_core.records import to_json
from compiler_core.wording import plural

from ..report.measured import claim_lines
from ..samples import size_hints
from ..user_input import parse_bindings
from .display import (MODES, first_view, in_colab, notebook_display, typed_sizes, start_app,
                      workspace_report, live_output, report_document, report_output,
                      server_possible)
from .models import Model, ModelLike, read_model


def compile(model: ModelLike, pipeline: str | list = "O2",  # noqa: A001 - the API's name
            bindings: dict[str, int] | str | None = None, target: str | None = None, *,
            verify: bool = False) -> "CompileResult":
    """Run a pipeline (a preset, "p1,p2,..." or a list of pass names) on a model.
    ``bindings``: sizes of symbolic dims ({"batch": 1} or "batch=1"); dims left out take
    representative sizes the analyses price at, as in `graphlab compile` and the app
    (``result.sizes`` says which and why; the pipeline specializes only the dims bound here).
    ``target``: a built-in target or a target file (default asic32); ``verify``: check every
    pass with onnxruntime against the input model (`graphlab compile --verify`)."""
    read = read_model(model)
    given = parse_bindings(bindings) if isinstance(bindings, str) else dict(bindings or {})
    compiled = compile_model(read.graph, pipeline, given, target,
                             size_hints=size_hints(read.path) if read.path else {},
                             verify=verify)
    return CompileResult(read.label, compiled, target or DEFAULT_TARGET, source=read)


@dataclass(frozen=True)
class CompileResultRecord:
    """A notebook run as JSON: the records the CLI's compile, roofline, memory (with
    --pipeline) and explain print with --json."""

    model: str
    pipeline: str
    sizes: ChosenSizes
    target: str
    compile: dict
    roofline: dict
    memory: dict
    patterns: list[JudgedPattern]


class CompileResult:
    """One pipeline run on one model (see the module docstring)."""

    def __init__(self, model: str, compilation: Compilation, target: str, source=None):
        self.model = model
        self.compilation = compilation
        self.target = target    # the chip the analyses price on (and a partition plans for)
        self.source = source    # the model as read (for show(): its file or sample name)

    @property
    def pipeline(self) -> str:
        return self.compilation.decisions.pipeline

    @property
    def sizes(self) -> ChosenSizes:
        """Every symbolic input dim's size, and where it came from."""
        return self.compilation.decisions.sizes

    @property
    def result(self) -> PipelineResult:
        return self.compilation.result

    # -- the run -------------------------------------------------------------------------------
    @property
    def bindings(self) -> dict[str, int]:
        """The sizes the analyses price at (the pipeline bound only the dims given)."""
        return self.compilation.bindings

    @property
    def initial(self) -> Graph:
        return self.result.initial

    @property
    def final(self) -> Graph:
        return self.result.final

    @property
    def snapshots(self) -> list[Snapshot]:
        return self.result.snapshots

    @property
    def diffs(self) -> list[GraphDiff]:
        return [s.diff for s in self.snapshots]

    def snapshot(self, pass_name: str) -> Snapshot:
        """The first snapshot of the pass with this name."""
        found = next((s for s in self.snapshots if s.pass_name == pass_name), None)
        if found is None:
            raise GraphLabError(f"the pipeline has no pass {pass_name!r}",
                                hint="passes: " + ", ".join(s.pass_name for s in self.snapshots))
        return found

    # -- the analyses --------------------------------------------------------------------------
    @cached_property
    def patterns(self) -> list[JudgedPattern]:
        """Every library pattern judged on the graph its pass receives in this run, as
        `graphlab explain MODEL -p PIPELINE` shows it: matches (rewritten or declined, and
        why), near misses ranked; a pattern no pass runs, on the model as loaded.  Each one
        says which graph it judged (``.graph``)."""
        return [judged for verdict in judge_pipeline(self.result, self.pipeline)
                for judged in verdict.patterns]

    @cached_property
    def roofline(self) -> CostComparison:
        """The roofline before (``.before``) and after (``.after``) the pipeline."""
        sized = self.compilation.sized
        return compare_costs(sized(self.initial), sized(self.final), self.target, self.bindings)

    @cached_property
    def memory(self) -> MemoryPlan:
        """The arena plan of the pipeline's output."""
        return plan_memory(self.compilation.sized(self.final), self.bindings)

    def schedule(self, node: str, *, array: str | None = None, dataflow: str = "os",
                 timing: str = "overlap") -> dict:
        """A node's GEMMs on the target's systolic array (the record of `graphlab schedule
        --json`); ``array`` "RxC" overrides the target's."""
        from ..user_input import parse_array

        rows, cols = parse_array(array)
        return schedule_node(self.compilation.sized(self.final), node, bindings=self.bindings, rows=rows, cols=cols,
                             dataflow=dataflow, timing=timing, target=self.target)

    def measure(self, *, repeats: int = 5, warmup: int = 1, threads: int = 0) -> "Measurement":
        """The model as loaded and the graph after every pass that changed it, run in
        onnxruntime's profiler on this machine (measured as a target first, if it never was),
        each as written for onnxruntime, beside its predicted time: what `graphlab report
        --measured` shows, with the seed claims checked (``.claims``)."""
        from compiler_core.profiling.machine import DEFAULT_THREADS, busy_note, machine_target
        from compiler_core.profiling.pipeline import measure_pipeline
        from compiler_core.profiling.runner import ProfileSettings

        target = machine_target(threads or DEFAULT_THREADS)
        settings = ProfileSettings(warmup=warmup, repeats=repeats, threads=threads)
        measured = measure_pipeline(self.result, target, self.bindings, settings)
        return Measurement(self.model, measured, busy_note())

    # -- as the CLI prints it ------------------------------------------------------------------
    def record(self) -> CompileResultRecord:
        """The run's records as the CLI prints them (a result holding graphs is no record
        itself)."""
        from ..commands.compile import compile_report
        from ..commands.model_options import Analysed
        from ..commands.roofline import roofline_record

        analysed = Analysed(self.initial, self.final, self.sizes, self.pipeline,
                            self.compilation)
        return CompileResultRecord(
            self.model, self.pipeline, self.sizes, self.target,
            compile_report(self.compilation, None),
            roofline_record(analysed, get_target(self.target)),
            {"sizes": to_json(self.sizes), **to_json(self.memory)}, self.patterns)

    def to_dict(self) -> dict:
        """The CLI's --json records as JSON-ready data (the name notebooks call)."""
        return to_json(self.record())

    def show(self, *, mode: str = "auto", height: int = 800) -> None:
        """The pass debugger on this run, inline in Jupyter (see `graphlab.show`)."""
        show(self, mode=mode, height=height)

    def as_model(self) -> Model:
        """Its final graph, as a model to read (GraphLab's output)."""
        return Model(self.final, f"{self.model} after {self.pipeline}")

    def __repr__(self) -> str:
        changed = [s for s in self.snapshots if s.changed]
        lines = [f"<CompileResult {self.model}, pipeline {self.pipeline}: {len(self.initial)} "
                 f"-> {len(self.final)} nodes, {len(self.snapshots)} passes ({len(changed)} "
                 f"changed the graph) in {self.result.seconds:.2f} s",
                 f"  sizes: {self.sizes.describe()}"]
        lines += [f"  {s.index + 1:>3}. {s.pass_name:<28} {s.nodes_before:>5} -> "
                  f"{s.nodes_after:<5} ({plural(s.rewrites, 'rewrite')})" for s in changed]
        return "\n".join(lines) + ">"


@dataclass
class Measurement:
    """A run measured (`CompileResult.measure`): ``.pipeline`` holds the records."""

    model: str
    pipeline: MeasuredPipeline
    busy: str | None = None     # why the times may be long (the machine was busy)

    @property
    def claims(self) -> list[str]:
        """The seeds' claims (fusion's latency gain, attention fusion's traffic saving)
        beside what this machine measured."""
        return claim_lines(self.pipeline)

    def __repr__(self) -> str:
        lines = [f"<Measurement {self.model} on {self.pipeline.target.display_name}"]
        lines += [f"  {line}" for line in self.claims[1:]]
        if self.busy:
            lines.append(f"  note: {self.busy}")
        lines.append("  each pass that changed the graph, best run in ms (predicted):")
        for entry in self.pipeline.passes:
            measured = ", ".join(f"{LEVELS[level]} {ms:.3f}" for level, ms
                                 in entry.best_ms.items())
            lines.append(f"    {entry.pass_name:<22} {entry.nodes:>5} nodes  {measured}  "
                         f"({entry.predicted_ms:.3f})")
        return "\n".join(lines) + ">"


def show(model: ModelLike, pipeline: str = "O2", bindings: dict[str, int] | str | None = None,
         target: str | None = None, *, versus: str | None = None, both_after: bool = False,
         mode: str = "auto", height: int = 800) -> None:
    """Show the pass debugger on ``model`` inline (a CompileResult brings its own pipeline,
    bindings and target), with the static report in the same output for when its server is
    gone.  ``versus``: compare with a sample, or with onnxruntime's optimized model
    ("onnxruntime:extended"); ``both_after``: compare the pipeline's outputs.  ``mode``:
    "app" (the live app, the report as its fallback), "report" (the static report only),
    "auto" (as "app" where a server can run, else "report")."""
    if mode not in MODES:
        raise GraphLabError(f"unknown mode {mode!r}", hint=f"modes: {', '.join(MODES)}")
    display = notebook_display()
    result = model if isinstance(model, CompileResult) else None
    if result is not None:
        model, pipeline, bindings, target = (result.source or result.initial, result.pipeline,
                                             result.compilation.decisions.bound,
                                             result.target)
    sizes = typed_sizes(bindings)
    target = target or DEFAULT_TARGET
    get_target(target)
    if mode == "report" or (mode == "auto" and not server_possible()):
        why = ("mode='report'" if mode == "report"
               else "no server can run in this Python")
        display(report_output(report_document(result or compile(model, pipeline, sizes,
                                                                 target)), height, why),
                raw=True)
        return
    app = start_app(model, first_view(pipeline, sizes, target, versus, both_after), height)
    if result is not None:
        document = report_document(result)
    elif versus:   # the app's first view is the comparison; the report tells the pipeline
        document = report_document(compile(model, pipeline, sizes, target))
    else:          # the pipeline the app has just run, told without running it again
        document = workspace_report(app["workspace"], target)
    scope = " (the report has no comparison: that needs the live app)" if versus else ""
    if in_colab():   # Dash drew the live app through Colab's proxy; the report goes below
        display(report_output(document, height, "the live app is in the frame above while "
                                                "this notebook's kernel runs"), raw=True)
        return
    display(live_output(app["url"], app["token"], document, height, scope), raw=True)
