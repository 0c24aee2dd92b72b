"""Fixes to offer for a near miss: the edit that makes the fusion fire, tried before it is
offered, with what it does to the model's outputs.

Where a pattern failed at one value the model could be given — a constant (the GELU's √2
written as 1.5), an attribute (a ReduceMean over the wrong axis) — the failure says so
(``patterns.failure.Wanted``) and the edit setting it is the candidate; where another reader
of an interior value blocked a fusion, deleting that reader (when nothing else reads it) or
bypassing it are.  Each candidate is applied to the model and the pipeline run again: it is
offered only if its pass then rewrites more than before, or its pattern now matches at the
site.  When the same site then fails at
another value the model could be given (the variance's ReduceMean after the mean's), that
edit joins the fix, up to ``MAX_CHAIN`` edits.  Every offered fix carries its numerical
effect, measured in onnxruntime: an edit changes what the model computes, and by how much is
the user's to judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compilation import compile_model
from ..errors import GraphLabError
from ..passes import PipelineResult
from ..patterns import STRONG_SCORE
from ..patterns.failure import Wanted
from ..records import record_field
from .apply import EditedModel, apply_edits
from .effect import NumericalEffect, numerical_effect
from .records import Bypass, Delete, Edit, SetAttribute, SetTensor

MAX_TRIALS = 12   # pipeline runs one call may spend trying candidates
MAX_CHAIN = 3     # edits one fix may hold (each found where the fix before it failed)


@dataclass(frozen=True)
class Problem:
    """A near miss or a decline of one pass, with the first edits that might fix it."""

    pass_index: int
    pass_name: str
    pattern: str
    site: str
    reason: str
    candidates: tuple[Edit, ...]


@dataclass(frozen=True)
class Suggestion:
    """A fix tried and found to fire: the edits, what the pass did before and after, and
    how much the model's outputs move."""

    pass_name: str = record_field(key="pass")
    pass_number: int
    pattern: str
    site: str
    problem: str
    edits: tuple[Edit, ...]
    rewrites_before: int
    rewrites_after: int
    effect: NumericalEffect | None = None
    effect_error: str = record_field(default="", omit_empty=True)

    json_derived = ("outcome",)

    def outcome(self) -> str:
        """'then conv_bn matches at bn_shared and fold_batchnorm rewrites 2 (was 1)'."""
        return (f"then {self.pattern} matches at {self.site} and {self.pass_name} rewrites "
                f"{self.rewrites_after} (was {self.rewrites_before})")

    def describe(self) -> str:
        edits = "; ".join(edit.describe() for edit in self.edits)
        effect = self.effect.summary() if self.effect else (
            f"effect not measured: {self.effect_error}")
        return (f"{self.pattern} at {self.site} ({self.pass_name}): {self.problem}\n"
                f"  fix: {edits}\n  {self.outcome()}; {effect}")


def problems(result: PipelineResult, model: EditedModel, site: str | None = None
             ) -> list[Problem]:
    """The strong near misses and blocked declines of every pass, each with the edits of
    the model (by its names) that might fix it; ``site``: only those at that node."""
    nodes = {n.name for n in model.model.graph.node}
    constants = {t.name for t in model.model.graph.initializer} | {
        n.output[0] for n in model.model.graph.node if n.op_type == "Constant" and n.output}
    found: dict[tuple[int, str, str], Problem] = {}
    for index, snapshot in enumerate(result.snapshots):
        for report in snapshot.pattern_reports:
            for miss in report.near_misses:
                if miss.score < STRONG_SCORE or (site and miss.site.name != site):
                    continue
                edits = [*_wanted_edits(miss.wanted, nodes, constants),
                         *_blocker_edits(miss.blocking_node, nodes)]
                key = (index, report.name, miss.site.name)
                if edits and key not in found:
                    found[key] = Problem(index, snapshot.pass_name, report.name,
                                         miss.site.name, miss.reason, tuple(edits))
        for decline in snapshot.declined:
            if site and decline.site != site:
                continue
            edits = _blocker_edits(decline.blocking, nodes)
            key = (index, decline.rule, decline.site)
            if edits and key not in found:
                found[key] = Problem(index, snapshot.pass_name, decline.rule, decline.site,
                                     decline.reason, tuple(edits))
    return list(found.values())


def suggest_edits(source, pipeline: str, bindings: dict[str, int] | None = None,
                  size_hints: dict[str, int] | None = None, edits=(), *,
                  site: str | None = None, trials: int = MAX_TRIALS) -> list[Suggestion]:
    """The fixes that make a near miss or decline of ``pipeline`` fire on the model
    ``source`` (after ``edits``, the user's so far), each tried; ``site``: only fixes for
    the near misses at that node."""
    edits = list(edits)
    base = apply_edits(source, edits)
    runner = _Runner(source, base, edits, pipeline, bindings or {}, size_hints or {}, trials)
    before = runner.result_of(base)
    offered: dict[tuple[Edit, ...], Suggestion] = {}
    for problem in problems(before, base, site):
        fix = runner.first_fix(problem, before)
        known = offered.get(fix.edits) if fix is not None else None
        if fix is not None and (known is None or _rewrote_more(fix) > _rewrote_more(known)):
            offered[fix.edits] = fix   # one entry per fix: where it makes a pass rewrite
    return sorted(offered.values(), key=_disturbance)


def _rewrote_more(fix: Suggestion) -> bool:
    return fix.rewrites_after > fix.rewrites_before


def _disturbance(fix: Suggestion) -> tuple:
    """The fixes that move the outputs least first (unmeasured ones last): a fix that makes
    a fusion fire by changing what the model computes a lot is rarely the one wanted."""
    if fix.effect is None:
        return (2, 0.0)
    worst = fix.effect.max_relative_change
    return (1 if any(o.note for o in fix.effect.outputs) else 0,
            worst if worst == worst else float("inf"))


class _Runner:
    """Applies candidate fixes and runs the pipeline on them, within a budget of runs."""

    def __init__(self, source, base: EditedModel, edits: list[Edit], pipeline: str,
                 bindings: dict[str, int], size_hints: dict[str, int], trials: int):
        self.source, self.base, self.edits, self.pipeline = source, base, edits, pipeline
        self.bindings, self.size_hints, self.left = bindings, size_hints, trials
        self.runs: dict[tuple[Edit, ...], tuple[EditedModel, PipelineResult] | None] = {}

    def run(self, chain: list[Edit]) -> tuple[EditedModel, PipelineResult] | None:
        """The model with ``chain`` applied and its pipeline's result (None: an edit was
        refused, or the budget is spent); each chain runs once."""
        key = tuple(chain)
        if key not in self.runs:
            if self.left <= 0:
                return None
            try:
                trial = apply_edits(self.source, [*self.edits, *chain])
            except GraphLabError:
                self.runs[key] = None
                return None
            self.left -= 1
            self.runs[key] = trial, self.result_of(trial)
        return self.runs[key]

    def result_of(self, edited: EditedModel) -> PipelineResult:
        return compile_model(edited.graph, self.pipeline, self.bindings,
                             size_hints=self.size_hints).result

    def first_fix(self, problem: Problem, before: PipelineResult) -> Suggestion | None:
        """The first candidate (or chain of edits starting with it) that makes the pass
        rewrite more; None when none does within the budget."""
        was = before.snapshots[problem.pass_index].rewrites
        matched = _matched_at(before, problem)
        for first in problem.candidates:
            chain = [first]
            while True:
                ran = self.run(chain)
                if ran is None:
                    break
                trial, after = ran
                now = after.snapshots[problem.pass_index].rewrites
                if now > was or (_matched_at(after, problem) and not matched):
                    return self._suggestion(problem, chain, was, now, trial)
                more = self._next_edit(after, trial, problem)
                if more is None or more in chain or len(chain) >= MAX_CHAIN:
                    break
                chain.append(more)
        return None

    def _next_edit(self, after: PipelineResult, trial: EditedModel, problem: Problem
                   ) -> Edit | None:
        """Where the same pattern now fails at the same site on another value to set."""
        for again in problems(after, trial, problem.site):
            if again.pattern == problem.pattern and again.pass_index == problem.pass_index:
                return next((e for e in again.candidates
                             if isinstance(e, (SetTensor, SetAttribute))), None)
        return None

    def _suggestion(self, problem: Problem, chain: list[Edit], was: int, now: int,
                    trial: EditedModel) -> Suggestion:
        effect, error = None, ""
        try:
            effect = numerical_effect(self.base.graph, trial.graph, self.bindings or None)
        except GraphLabError as err:
            error = err.message
        return Suggestion(problem.pass_name, problem.pass_index + 1, problem.pattern,
                          problem.site, problem.reason, tuple(chain), was, now, effect, error)


def _matched_at(result: PipelineResult, problem: Problem) -> bool:
    """Does the problem's pattern match at its site in its pass (a fix may make a rule fire
    where another rule of the pass fired before: the pass's count stays, the match is new)."""
    snapshot = result.snapshots[problem.pass_index]
    return any(match.root.name == problem.site for report in snapshot.pattern_reports
               if report.name == problem.pattern for match in report.matches)


def _wanted_edits(wanted: Wanted | None, nodes: set[str], constants: set[str]) -> list[Edit]:
    if wanted is None:
        return []
    if wanted.what == "tensor" and wanted.target in constants:
        return [SetTensor(wanted.target, _frozen(wanted.value))]
    if wanted.what == "attribute" and wanted.target in nodes:
        return [SetAttribute(wanted.target, wanted.attribute, _frozen(wanted.value))]
    return []


def _blocker_edits(blocking, nodes: set[str]) -> list[Edit]:
    if blocking is None or blocking.name not in nodes:
        return []
    return [Delete(blocking.name), Bypass(blocking.name)]


def _frozen(value):
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value
