"""`graphlab.compile(model)`: a pipeline run kept with everything the CLI reports about it.

The result holds compiler_core's own records — the snapshots (one per pass, with its diff and
pattern reports), the roofline before and after, the memory plan — each with a readable repr;
``to_dict()`` is what `compile`, `roofline`, `memory` and `explain` print with ``--json``.
The analyses run when first asked for.
"""

from __future__ import annotations

from functools import cached_property

from compiler_core.errors import GraphLabError
from compiler_core.hardware import CostComparison, MemoryPlan, compare_costs, plan_memory
from compiler_core.hardware.node_schedule import schedule_node
from compiler_core.hardware.representative_sizes import ChosenSizes, choose_sizes
from compiler_core.hardware.targets import DEFAULT_TARGET, get_target
from compiler_core.ir import Graph
from compiler_core.passes import PassManager, PipelineResult, Snapshot
from compiler_core.passes.framework.diff import GraphDiff
from compiler_core.passes.framework.judged import JudgedPattern, judge_pipeline
from compiler_core.records import to_json
from compiler_core.wording import plural

from ..samples import size_hints
from ..user_input import parse_bindings
from .models import ModelLike, read_model


def compile(model: ModelLike, pipeline: str | list = "O2",  # noqa: A001 - the API's name
            bindings: dict[str, int] | str | None = None, target: str | None = None, *,
            verify: bool = False) -> "CompileResult":
    """Run a pipeline (a preset, "p1,p2,..." or a list of pass names) on a model.
    ``bindings``: sizes of symbolic dims ({"batch": 1} or "batch=1"); dims left out take
    representative sizes, as in `graphlab roofline` and the app (``result.sizes`` says which
    and why).  ``target``: a built-in target or a target file (default asic32); ``verify``:
    check every pass with onnxruntime against the input model (`graphlab compile --verify`)."""
    read = read_model(model)
    given = parse_bindings(bindings) if isinstance(bindings, str) else dict(bindings or {})
    sizes = choose_sizes(read.graph, given, size_hints(read.path) if read.path else {})
    chosen = target or DEFAULT_TARGET
    get_target(chosen)   # an unknown target is refused before the pipeline runs
    result = PassManager(pipeline, bindings=sizes.bindings, target=chosen,
                         verify=verify).run(read.graph)
    return CompileResult(read.label, _pipeline_text(pipeline), sizes, chosen, result,
                         source=read)


class CompileResult:
    """One pipeline run on one model (see the module docstring)."""

    def __init__(self, model: str, pipeline: str, sizes: ChosenSizes, target: str,
                 result: PipelineResult, source=None):
        self.model = model
        self.pipeline = pipeline
        self.sizes = sizes      # every symbolic input dim's size, and where it came from
        self.target = target
        self.result = result
        self.source = source    # the model as read (for show(): its file or sample name)

    # -- the run -------------------------------------------------------------------------------
    @property
    def bindings(self) -> dict[str, int]:
        return self.sizes.bindings

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
        return compare_costs(self.initial, self.final, self.target, self.bindings)

    @cached_property
    def memory(self) -> MemoryPlan:
        """The arena plan of the pipeline's output."""
        return plan_memory(self.final, self.bindings)

    def schedule(self, node: str, *, array: str | None = None, dataflow: str = "os",
                 timing: str = "overlap") -> dict:
        """A node's GEMMs on the target's systolic array (the record of `graphlab schedule
        --json`); ``array`` "RxC" overrides the target's."""
        from ..user_input import parse_array

        rows, cols = parse_array(array)
        return schedule_node(self.final, node, bindings=self.bindings, rows=rows, cols=cols,
                             dataflow=dataflow, timing=timing, target=self.target)

    # -- as the CLI prints it ------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The CLI's --json records: compile, roofline and memory (with --pipeline), explain."""
        from ..commands.compile import compile_report, sizes_record
        from ..commands.model_options import Analysed
        from ..commands.roofline import roofline_record

        analysed = Analysed(self.initial, self.final, self.sizes, self.pipeline, self.result)
        return {"model": self.model, "pipeline": self.pipeline, "sizes": to_json(self.sizes),
                "target": self.target,
                "compile": compile_report(self.result, None, sizes=sizes_record(
                    self.sizes, self.sizes.bindings)),   # it binds them all
                "roofline": roofline_record(analysed, get_target(self.target)),
                "memory": {"sizes": to_json(self.sizes), **to_json(self.memory)},
                "patterns": [record.to_dict() for record in self.patterns]}

    def show(self, *, mode: str = "auto", height: int = 800) -> None:
        """The pass debugger on this run, inline in Jupyter (see `graphlab.show`)."""
        from .display import show

        show(self, mode=mode, height=height)

    def __repr__(self) -> str:
        changed = [s for s in self.snapshots if s.changed]
        lines = [f"<CompileResult {self.model}, pipeline {self.pipeline}: {len(self.initial)} "
                 f"-> {len(self.final)} nodes, {len(self.snapshots)} passes ({len(changed)} "
                 f"changed the graph) in {self.result.seconds:.2f} s",
                 f"  sizes: {self.sizes.describe()}"]
        lines += [f"  {s.index + 1:>3}. {s.pass_name:<28} {s.nodes_before:>5} -> "
                  f"{s.nodes_after:<5} ({plural(s.rewrites, 'rewrite')})" for s in changed]
        return "\n".join(lines) + ">"


def _pipeline_text(pipeline) -> str:
    """The pipeline as `graphlab compile -p` would take it (pass objects by their name)."""
    if isinstance(pipeline, str):
        return pipeline
    return ",".join(entry if isinstance(entry, str) else getattr(entry, "name", type(entry).__name__)
                    for entry in pipeline)
