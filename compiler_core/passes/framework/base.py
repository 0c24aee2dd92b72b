"""What a pass is: a named graph transformation that says what it did and what it declined.

A pass mutates the graph it is given (the PassManager guards it: the first change copies it
for the previous snapshot, which stays intact) and returns a PassResult.  Every node it creates carries
provenance (``ctx.provenance(rule, sources)``); every rewrite it *declines* because it would
change the model's results is recorded with a reason — that record is what the app shows.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Iterator

from ...ir import Graph, Node, Provenance
from ...patterns.language import Pattern
from ...patterns.records import NodeRef, PatternRecord
from ...records import name_of, names, record_field

if TYPE_CHECKING:
    from ...hardware.roofline import TargetLike
    from .pattern_pass import ReportCache


@dataclass(frozen=True)
class Decline:
    """A rewrite the pass could have made but refused, and why."""

    site: str    # name of the node where the rewrite would have applied (or of the graph)
    rule: str
    reason: str
    node_id: int | None = None   # that node's id; None when the site is the whole graph
    # The node whose presence refused it (another reader of an interior value), when one
    # did: the app highlights it as the near misses' blocking consumer.
    blocking: NodeRef | None = record_field(key="blocking_node", convert=name_of, default=None)
    # the nodes the rewrite would have taken, when known
    nodes: tuple[NodeRef, ...] = record_field(convert=names, default=())


@dataclass
class PassResult:
    rewrites: int = 0
    notes: list[str] = field(default_factory=list)
    declined: list[Decline] = field(default_factory=list)
    pattern_reports: list[PatternRecord] = field(default_factory=list)
    _recorded: set[Decline] = field(default_factory=set, repr=False, compare=False)

    def decline(self, site: Node | str, rule: str, reason: str, blocking: Node | None = None,
                nodes: tuple[Node, ...] | list[Node] = ()) -> None:
        """Record a declined rewrite once (a site can be refused for several reasons by one
        rule, e.g. two inner ops of a fused node; the same refusal is recorded once).
        ``blocking``: the node that refused it (a reader outside the rewrite), if one did;
        ``nodes``: what the rewrite would have taken."""
        name, node_id = (site.name, site.id) if isinstance(site, Node) else (site, None)
        self._add(Decline(name, rule, reason, node_id, NodeRef.of(blocking),
                          tuple(NodeRef.of(n) for n in nodes)))

    def _add(self, decline: Decline) -> None:
        if decline not in self._recorded:   # a set: a pass may decline thousands of sites
            self._recorded.add(decline)
            self.declined.append(decline)

    def merge(self, other: "PassResult") -> None:
        """Accumulate the result of another iteration of the same pass."""
        self.rewrites += other.rewrites
        self.notes += [n for n in other.notes if n not in self.notes]
        for decline in other.declined:
            self._add(decline)
        if other.pattern_reports:
            self.pattern_reports = other.pattern_reports


@dataclass
class PassContext:
    """Options shared by every pass of one pipeline run."""

    bindings: dict[str, int] = field(default_factory=dict)
    pass_name: str = ""
    explain: bool = True          # collect near misses for the patterns the pass uses
    # False: near misses judged only where a rule turns them into declines (all `graphlab
    # compile` prints); the patterns' reports then list their matches alone
    all_near_misses: bool = True
    fold_size_limit: int = 1 << 20  # constant folding never creates a constant larger (bytes)
    target: "TargetLike" = None   # the chip passes plan for (a name, a file, or None: the default)
    # Inputs a pass may run the model on to observe real values (quantization calibration):
    # a list of {input name: array} batches; None lets the pass generate valid random ones.
    calibration_inputs: list[dict] | None = None
    # The node the pass is rewriting right now, kept by the rewrite primitives (``working_on``)
    # so a pass that raises can be reported with the node it failed at; None: not known.
    current_node: Node | None = None
    # Pattern reports shared by the passes while the graph does not change (the PassManager's,
    # ``pattern_pass.ReportCache``); None: every report is made afresh.
    reports: "ReportCache | None" = None

    @contextmanager
    def working_on(self, node: Node) -> Iterator[Node]:
        """Mark ``node`` as the pass's current site for the duration of the block.

        On an exception the mark stays (the PassManager reads it to name the node); on a normal
        exit the previous mark comes back, so a later failure elsewhere is not pinned on it.
        """
        previous, self.current_node = self.current_node, node
        yield node
        self.current_node = previous

    def provenance(self, rule: str, sources: list[Node] | tuple[Node, ...],
                   source: str = "") -> Provenance:
        """Provenance for a node this pass creates from ``sources``: their ids (``replaced``)
        and the input model's nodes they came from (``sources``, original ids kept);
        ``source`` is where the rule is written, when a Rule object made the node."""
        ids: list[int] = []
        for node in sources:
            if node.provenance is not None and node.provenance.sources:
                ids.extend(node.provenance.sources)  # a rewrite of a rewrite: keep the originals
            else:
                ids.append(node.id)
        return Provenance(self.pass_name, rule, tuple(dict.fromkeys(ids)), source,
                          tuple(dict.fromkeys(node.id for node in sources)))


class Pass(ABC):
    """Base class.  Subclasses set ``name`` and ``family`` and implement ``run``.

    The class docstring's first paragraph is the pass's description in `graphlab passes` and in
    the app, so write it for a student.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    fixed_point: ClassVar[bool] = False   # rerun until a run makes no rewrite
    # The pass plans for the chip (ctx.target): its result, and every view of it, changes
    # with the target, so a build keyed without the target would show another chip's plan.
    reads_target: ClassVar[bool] = False
    # The pass plans for fixed tensor sizes (an accelerator runs no other): a pipeline holding
    # it binds every symbolic dim, at the sizes the compile entry decides.
    needs_fixed_sizes: ClassVar[bool] = False
    # A pass that changes results by design (quantization) says how far its outputs may drift,
    # relative to each output's scale, and why; the PassManager checks it and every later pass
    # with the loosest tolerance seen so far.  None: the pass must keep results (1e-4).
    tolerance: ClassVar[float | None] = None
    tolerance_reason: ClassVar[str] = ""
    # Graph properties (names in ``properties.PROPERTIES``) that must hold before the pass runs
    # and that hold after it.  The PassManager's check mode asserts both.
    requires: ClassVar[tuple[str, ...]] = ()
    ensures: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def description(cls) -> str:
        doc = inspect.getdoc(cls) or ""
        return " ".join(doc.split("\n\n", 1)[0].split())

    def patterns(self) -> list[Pattern]:
        """The patterns this pass runs, or that say what it looks for, each titled with the name
        its reports carry: `graphlab explain` lists every registered pass's."""
        return []

    @abstractmethod
    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        """Rewrite ``graph`` in place and say what was done."""
