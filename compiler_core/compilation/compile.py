"""``compile_model``: decide, run the pipeline, keep what every view reads.

The CLI (`compile`, `explain`, the hardware commands), the app's builds, the notebook's
``graphlab.compile`` and the HTML report all compile through here, so they run the same
passes at the same bindings for the same target and print the same record
(``Compilation.record()``, which ``records.to_json`` writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..errors import VerificationError
from ..ir import Graph
from ..ir.summary import op_histogram
from ..passes import Instrument, PassManager, PipelineResult, Snapshot, resolve_passes
from ..passes.framework.pass_registry import PipelineEntry
from ..records import record_field, text_or_none
from .decisions import Decisions, decided_for, pipeline_text
from .sizing import sized

# verify=VERIFY_IF_RUNNABLE: check every pass when onnxruntime runs the input model; otherwise
# compile unchecked and say why (``Compilation.verify_note``).
VERIFY_IF_RUNNABLE = "if runnable"

Progress = Callable[[int, int, str], None]


class Compilation:
    """One pipeline run on one model: what was decided, every pass's snapshot, the
    numerical check; graphs at the decided sizes for the hardware models (``sized``)."""

    def __init__(self, decisions: Decisions, result: PipelineResult, verify_note: str = ""):
        self.decisions = decisions
        self.result = result
        self.verify_note = verify_note   # why a check asked for did not run ("" if it did)
        self._sized: dict[int, tuple[Graph, Graph]] = {}

    def __getstate__(self) -> dict:
        """Pickled without the sized copies (graphs are found again by identity)."""
        return {**self.__dict__, "_sized": {}}

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
    def bindings(self) -> dict[str, int]:
        """The sizes every analysis prices at: the user's, representative for the rest."""
        return self.decisions.sizes.bindings

    def sized(self, graph: Graph) -> Graph:
        """``graph`` (the input or a snapshot's) with the shapes the decided sizes fix, made
        once per graph."""
        kept = self._sized.get(id(graph))
        if kept is None or kept[0] is not graph:
            kept = self._sized[id(graph)] = (graph, sized(graph, self.bindings))
        return kept[1]

    def verification(self) -> dict | None:
        """The numerical check's outcome (None: not checked)."""
        checked = [s.verify for s in self.snapshots if s.verify is not None]
        if not checked:
            return None
        return {"max_abs_err": max(r.max_abs_err for r in checked),
                "ok": all(r.ok for r in checked),
                "inputs": self.result.verifier.inputs_record()}

    def record(self) -> "CompilationRecord":
        """What the CLI prints with --json, the notebook returns and the app's build keeps
        (through ``records.to_json``; a compilation holds graphs, its record only figures)."""
        return CompilationRecord(self.decisions, len(self.initial), len(self.final),
                                 op_histogram(self.final),
                                 [{**s.summary(), "modified": s.modified_nodes()}
                                  for s in self.snapshots],
                                 self.verification(), self.verify_note)


@dataclass(frozen=True)
class CompilationRecord:
    """A compilation in figures: the decisions, node counts, the final op histogram, each
    pass (with what changed on each node it modified) and the numerical check."""

    decided: Decisions
    nodes_before: int
    nodes_after: int
    op_histogram_after: dict[str, int]
    passes: list[dict]
    verify: dict | None
    verify_note: str = record_field(convert=text_or_none)   # why a check did not run


def compile_model(source: Graph, pipeline: str | Sequence[PipelineEntry] | None = "O2",
                  bindings: dict[str, int] | None = None, target: str | None = None, *,
                  size_hints: dict[str, int] | None = None, verify: bool | str = False,
                  verify_inputs: dict | None = None,
                  calibration_inputs: list[dict] | None = None,
                  instruments: Sequence[Instrument] = (), check: bool = False,
                  on_progress: Progress | None = None,
                  all_near_misses: bool = True, declines: bool = True) -> Compilation:
    """Compile ``source`` (a loaded graph, never changed): ``bindings`` are the user's sizes
    of symbolic dims, ``size_hints`` a sample's usual sizes, ``target`` a target name or file
    (default asic32); ``verify`` True, False or VERIFY_IF_RUNNABLE; ``check`` runs the graph
    and property checks after every pass (tests); without ``all_near_misses`` near misses are judged
    only where a rule declines for them, and the snapshots' pattern reports list matches
    alone (a caller that shows only the declines saves re-running every failed site); without
    ``declines`` no near miss is judged at all, so the snapshots list only the declines that
    cost nothing to find (a caller that shows none, such as `compile --json`, saves judging
    every site where a pattern almost matched: a fifth of a 10,000-node chain's compile)."""
    passes = resolve_passes(pipeline)
    decisions = decided_for(source, passes, pipeline_text(pipeline), bindings, target,
                            size_hints)

    def run(checked: bool) -> PipelineResult:
        return PassManager(passes, bindings=decisions.bound,
                           target=decisions.target, verify=checked,
                           verify_inputs=verify_inputs if checked else None,
                           calibration_inputs=calibration_inputs, instruments=instruments,
                           check=check, all_near_misses=all_near_misses, explain=declines
                           ).run(source, on_progress=on_progress)

    if verify != VERIFY_IF_RUNNABLE:
        return Compilation(decisions, run(bool(verify)))
    try:
        return Compilation(decisions, run(True))
    except VerificationError as err:
        return Compilation(decisions, run(False), f"not checked: {err}")
