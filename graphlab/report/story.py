"""Everything the report tells, gathered once from compiler_core's records (no markup here):
the pipeline's snapshots, the roofline before and after it, the memory plans, and what the
pattern library finds in the model as loaded."""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler_core.compilation import Compilation
from compiler_core.compilation.pass_schedules import SystolicStory, systolic_story
from compiler_core.compilation.pass_traffic import PipelineTraffic, pipeline_traffic
from compiler_core.editing import EditedModel
from compiler_core.hardware.representative_sizes import ChosenSizes
from compiler_core.hardware import CostComparison, MemoryPlan, Target, compare_costs, \
    get_target, plan_memory
from compiler_core.passes import PipelineResult
from compiler_core.passes.framework.rulebook import registered_patterns
from compiler_core.patterns import PatternReport, explain
from compiler_core.profiling.pipeline import MeasuredPipeline


@dataclass(frozen=True)
class NodeLabel:
    name: str
    op: str

    def __str__(self) -> str:
        return f"{self.name} ({self.op})"


@dataclass
class Story:
    label: str                  # the model as the user named it (sample or file name)
    pipeline: str               # the pipeline as asked for ("O2", or a pass list)
    target: Target
    sizes: ChosenSizes          # what the symbolic dims were priced at, and why
    result: PipelineResult
    verify_note: str            # why there is no numerical check ("" when there is one)
    costs: CostComparison
    memory_before: MemoryPlan
    memory_after: MemoryPlan
    traffic: PipelineTraffic    # FLOPs, bytes, time and arena peak after every pass
    systolic: SystolicStory     # the GEMMs on the array after every pass, the busiest one
    model_patterns: list[PatternReport]
    nodes: dict[int, NodeLabel] = field(default_factory=dict)   # every id the pipeline saw
    measured: MeasuredPipeline | None = None   # with `report --measured`
    edits: tuple[str, ...] = ()        # the edits made to the model first, one line each

    @property
    def bindings(self) -> dict[str, int]:
        return self.sizes.bindings

    def node(self, node_id: int) -> NodeLabel:
        return self.nodes.get(node_id, NodeLabel(f"#{node_id}", "?"))


def tell(compilation: Compilation, label: str, target: Target | None = None,
         why_unchecked: str = "", measured: MeasuredPipeline | None = None,
         edited: EditedModel | None = None) -> Story:
    """The story of one compilation (the heavy analyses run here, once), priced on
    ``target`` (default: the one its passes planned for, else the default target);
    ``why_unchecked``: what to say when the passes were not checked numerically and the
    compilation does not say why; ``measured``: its passes measured (`measure`);
    ``edited``: the edits the model was made with (`graphlab edit`, `--edits`)."""
    decisions = compilation.decisions
    target = target or get_target(decisions.target)
    bindings = compilation.bindings
    result = compilation.result
    initial, final = compilation.sized(result.initial), compilation.sized(result.final)
    return Story(
        label=label, pipeline=decisions.pipeline, target=target, sizes=decisions.sizes,
        result=result, verify_note=compilation.verify_note or why_unchecked,
        costs=compare_costs(initial, final, target, bindings),
        memory_before=plan_memory(initial, bindings),
        memory_after=plan_memory(final, bindings),
        traffic=pipeline_traffic(result, target, bindings),
        systolic=systolic_story(result, target, bindings),
        model_patterns=explain(result.initial, registered_patterns().values()),
        nodes=_node_labels(result), measured=measured,
        edits=tuple(edited.applied()) if edited else ())


def _node_labels(result: PipelineResult) -> dict[int, NodeLabel]:
    labels: dict[int, NodeLabel] = {}
    for graph in [result.initial] + [s.graph for s in result.snapshots]:
        for node in graph.nodes:
            labels.setdefault(node.id, NodeLabel(node.name, node.qualified_op))
    return labels
