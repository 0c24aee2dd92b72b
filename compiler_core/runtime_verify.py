"""Verification that sees what users see: a pipeline's models at onnxruntime's default level.

The numerical check (``verify.Verifier``) runs onnxruntime with its optimizer off, to test
GraphLab's graph and nothing else.  A user's ``InferenceSession`` optimizes at ORT_ENABLE_ALL,
where a node onnxruntime accepts can still crash its optimizer.  So each model is also loaded
and run at that level in a child process (``runtime_check.run_isolated``) on the verifier's
inputs, and its outputs are compared with the reference at the tolerance the numerical check
uses.  When a model fails, the snapshots are bisected for the pass that broke it — after
checking the input model, which may fail already (then no pass is to blame).
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import Graph, model_for_runtime
from .passes.framework.manager import PipelineResult
from .records import record_field
from .runtime_check import DEFAULT_LEVEL, LEVELS, RuntimeOutcome, run_isolated
from .verify import Verifier, VerifyReport, compare_outputs, with_inference_semantics
from .wording import plural

CHECK_WHEN = ("final", "each", "off")  # which models `compile --runtime-check` runs


@dataclass
class LevelCheck:
    """One model loaded and run at one onnxruntime level, and its outputs compared."""

    outcome: RuntimeOutcome = record_field(omit=True)
    report: VerifyReport | None = record_field(omit=True, default=None)  # None: it did not run

    json_derived = (("level", "outcome.level_name"), ("stage", "outcome.stage"),
                    ("error", "outcome.error"), "ok", ("max_abs_err", "report.max_abs_err"),
                    ("rtol", "report.rtol"))
    json_order = ("level", "ok")

    @property
    def ok(self) -> bool:
        return self.outcome.ok and self.report is not None and self.report.ok

    def describe(self) -> str:
        """`loads and runs in onnxruntime at ORT_ENABLE_ALL; outputs match (...)` or why not."""
        if self.report is None:
            return self.outcome.describe()
        if self.report.ok:
            basis = f"; {self.report.basis}" if self.report.basis else ""
            return (f"{self.outcome.describe()}; outputs match the input model's (max abs "
                    f"error {self.report.max_abs_err:.3g}{basis})")
        failing = [o for o in self.report.outputs if not o.ok]
        differ = "differs" if len(failing) == 1 else "differ"
        return (f"{self.outcome.describe()}, but {plural(len(failing), 'output')} {differ} "
                f"from the input model's: " + "; ".join(
                    f"{o.name}: {o.note or f'max abs error {o.max_abs_err:.3g}'}"
                    for o in failing))


def check_at_level(verifier: Verifier, graph: Graph, rtol: float,
                   level: str = DEFAULT_LEVEL) -> LevelCheck:
    """Run ``graph`` at ``level`` in a child on the verifier's inputs; compare with its reference.

    Like ``Verifier.check``, the graph runs with inference semantics."""
    with model_for_runtime(with_inference_semantics(graph)) as model:
        outcome = run_isolated(model, [verifier.inputs], level=level)
    if not outcome.ok:
        return LevelCheck(outcome)
    return LevelCheck(outcome, verifier.judge(outcome.outputs[0], rtol))


def against_input_at_level(check: LevelCheck, input_check: LevelCheck, verifier: Verifier,
                           rtol: float) -> LevelCheck:
    """``check`` judged like with like when it fails against the reference: a model that
    gives what the input model gives at the same onnxruntime level is what its users would
    get from the input.  onnxruntime's own rewrites there (its QDQ → QLinear fusion, float
    fusions) move the input's outputs too, by more than the tolerance on quantized models."""
    if check.ok or not check.outcome.ok or not input_check.outcome.ok:
        return check
    level = LEVELS[check.outcome.level]
    like = compare_outputs(input_check.outcome.outputs[0], check.outcome.outputs[0], rtol,
                           allowance=verifier.allowance)
    if not like.ok:
        return check
    like.basis = (f"compared with the input model at {level}, where onnxruntime's own "
                  f"rewrites move the input's outputs by "
                  f"{input_check.report.max_abs_err:.3g} too")
    return LevelCheck(check.outcome, like)


@dataclass
class RuntimeVerdict:
    """What `compile --verify` says about the pipeline at one onnxruntime level.

    ``final`` checks the pipeline's output; with ``when == "each"``, ``per_pass`` checks every
    pass's output (an unchanged pass shares its predecessor's answer).  On a failure,
    ``input_check`` says whether the input model fails already (then no pass is to blame);
    otherwise ``culprit`` is the index of the first pass whose output fails while its input
    passes, and ``culprit_check`` that output's check.
    """

    level: str = record_field(convert=LEVELS.__getitem__)   # as onnxruntime names it
    when: str = record_field(key="checked")
    final: LevelCheck
    pass_names: list[str] = record_field(omit=True)
    per_pass: list[LevelCheck] = record_field(omit=True, default_factory=list)
    # the file written for a runtime (compile --runtime ...)
    export: LevelCheck | None = None
    export_note: str | None = None  # why the export was checked at a looser tolerance
    input_check: LevelCheck | None = record_field(omit=True, default=None)
    culprit: int | None = record_field(key="first_failing_index", default=None)
    culprit_check: LevelCheck | None = record_field(omit=True, default=None)

    # the `runtime_check` record of `graphlab compile --json`
    json_derived = ("ok", ("stage", "shown_check.outcome.stage"), ("error", "failure_text"),
                    "input_fails", ("first_failing_pass", "culprit_name"),
                    ("summary", "headline"))
    json_order = ("level", "checked", "ok", "stage", "error", "input_fails",
                  "first_failing_pass", "first_failing_index")

    @property
    def ok(self) -> bool:
        return (self.final.ok and all(check.ok for check in self.per_pass)
                and (self.export is None or self.export.ok))

    @property
    def only_export_fails(self) -> bool:
        """Every pass's output is fine; what breaks is their translation for the runtime."""
        return self.final.ok and self.export is not None and not self.export.ok

    @property
    def input_fails(self) -> bool:
        return self.input_check is not None and not self.input_check.ok

    @property
    def culprit_name(self) -> str | None:
        return None if self.culprit is None else self.pass_names[self.culprit]

    def failing_check(self) -> LevelCheck | None:
        """The check that explains a failure: the input's, or the first failing pass's."""
        if self.ok:
            return None
        if self.only_export_fails:
            return self.export
        return self.input_check if self.input_fails else self.culprit_check

    def headline(self) -> str:
        """One line for a report."""
        if self.ok:
            what = "every pass's output" if self.when == "each" else "final model"
            written = "" if self.export is None else "; the file written for onnxruntime too"
            if self.export is not None and self.export_note:
                written += f" ({self.export_note})"
            return f"{what}: {self.final.describe()}{written}"
        if self.only_export_fails:
            note = f" ({self.export_note})" if self.export_note else ""
            return (f"the final model passes, but the file written for onnxruntime (fused "
                    f"nodes as its operators) {self.export.describe()}{note}")
        if self.input_fails:
            return (f"the input model already {self.input_check.describe()} — no pass is to "
                    f"blame; the final model {self.final.describe()}")
        return (f"pass {self.culprit + 1} ({self.culprit_name}) is the first whose output "
                f"{self.culprit_check.describe()}")

    @property
    def shown_check(self) -> LevelCheck:
        """The check a one-line report shows: the failing one, or the final model's."""
        return self.failing_check() or self.final

    @property
    def failure_text(self) -> str:
        """What went wrong, in the shown check's words ('' when nothing did)."""
        return "" if self.ok else self.shown_check.describe()


def check_pipeline(result: PipelineResult, verifier: Verifier, *, level: str = DEFAULT_LEVEL,
                   each: bool = False, exported: Graph | None = None,
                   export_tolerance: tuple[float, str] | None = None) -> RuntimeVerdict:
    """Check a ``PipelineResult``'s final model (or every pass's, with ``each``) at ``level``,
    and ``exported`` — the final model as written for a runtime — when one was made, at the
    pipeline's tolerance or ``export_tolerance`` (rtol, why) when that is looser: the export's
    operators may round differently (float16 kernels).

    On a failure the input model is checked, then the first failing pass found: by a scan
    when every pass was checked, else by bisecting the snapshots."""
    snapshots = result.snapshots
    cache: dict[int, LevelCheck] = {}

    def check(index: int) -> LevelCheck:
        """Pass ``index``'s output (-1: the input model); an unchanged pass reuses the answer."""
        while index >= 0 and not snapshots[index].changed:
            index -= 1
        if index not in cache:
            graph = result.initial if index < 0 else snapshots[index].graph
            rtol = result.tolerance_after(index)[0] if index >= 0 else verifier.rtol
            made = check_at_level(verifier, graph, rtol, level)
            if index >= 0 and not made.ok:
                made = against_input_at_level(made, check(-1), verifier, rtol)
            cache[index] = made
        return cache[index]

    last = len(snapshots) - 1
    per_pass = [check(i) for i in range(len(snapshots))] if each else []
    verdict = RuntimeVerdict(level, "each" if each else "final", check(last),
                             [s.pass_name for s in snapshots], per_pass)
    if exported is not None:
        rtol = result.tolerance_after(last)[0]
        if export_tolerance is not None and export_tolerance[0] > rtol:
            rtol, verdict.export_note = export_tolerance[0], (
                f"{export_tolerance[1]}: compared with tolerance {export_tolerance[0]:g} of "
                f"each output's scale")
        verdict.export = check_at_level(verifier, exported, rtol, level)
        if not verdict.export.ok:
            verdict.export = against_input_at_level(verdict.export, check(-1), verifier, rtol)
    if verdict.ok or verdict.only_export_fails:
        return verdict
    verdict.input_check = check(-1)
    if not verdict.input_fails:
        verdict.culprit = (next(i for i, c in enumerate(per_pass) if not c.ok) if each
                           else _first_failing(check, last))
        verdict.culprit_check = check(verdict.culprit)
    return verdict


def _first_failing(check, last: int) -> int:
    """Bisect: the first pass whose output fails, given that the input passes and ``last``
    fails.  It assumes a failure, once a pass introduces it, persists; the pass it names always
    has a passing input and a failing output."""
    good, bad = -1, last
    while bad - good > 1:
        middle = (good + bad) // 2
        if check(middle).ok:
            good = middle
        else:
            bad = middle
    return bad
