"""The failures a model can be reduced around, each a test a candidate passes or not.

- ``crash``: onnxruntime dies (a signal) loading or running the model at a level;
- ``load-error``: onnxruntime refuses it at a level with the same message (names and numbers
  aside);
- ``mismatch``: its outputs at a level differ from its outputs with the optimizer off — or,
  with a pipeline, GraphLab's output of it differs from it;
- ``pass-error``: a pass of the pipeline raises (the same pass, the same exception type).

onnxruntime always runs in a child process.  For the runtime failures a candidate also has to
load and run with onnxruntime's optimizer off (when the original model does): a sub-graph the
reducer cut badly fails there too, and is not the fault being reduced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import GraphLabError, PassFailedError
from ..runtime_check import LEVELS, RuntimeOutcome, run_isolated_many
from ..verify import DEFAULT_RTOL, compare_outputs
from .subgraph import Built

KINDS = ("crash", "load-error", "mismatch", "pass-error")
CHECK_SECONDS = 60   # a candidate onnxruntime takes longer over is taken as not failing


@dataclass
class Verdict:
    """A candidate's answer: does it fail the same way, and what was seen (one line)."""

    fails: bool
    seen: str


class Failure:
    """A failure to keep: ``check`` runs candidates and says which still fail."""

    kind: str
    level: str = "all"

    def check(self, candidates: list[Built]) -> list[Verdict]:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


def signature(message: str) -> str:
    """onnxruntime's message without the parts that name this model's values and sizes."""
    text = re.sub(r"\([^()]*\)", "()", message)
    text = re.sub(r"\([^()]*\)", "()", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"|\S*/\S*", "_", text)
    return re.sub(r"\d+", "N", text)


class RuntimeFailure(Failure):
    """onnxruntime crashes, or refuses the model, at ``level``."""

    def __init__(self, kind: str, level: str, original: RuntimeOutcome, valid_off: bool):
        self.kind, self.level = kind, level
        self.stage = "crash" if kind == "crash" else "load"
        self.signature = signature(original.error)
        self.first_seen = original.error
        self.valid_off = valid_off   # the original runs with the optimizer off: so must cuts

    def check(self, candidates: list[Built]) -> list[Verdict]:
        jobs = []
        for built in candidates:
            jobs.append((built.data, [built.feed], self.level))
            if self.valid_off:
                jobs.append((built.data, [built.feed], "disabled"))
        outcomes = run_isolated_many(jobs, timeout=CHECK_SECONDS)
        step = 2 if self.valid_off else 1
        verdicts = []
        for k in range(len(candidates)):
            at_level = outcomes[k * step]
            same = at_level.stage == self.stage and (
                self.stage == "crash" or signature(at_level.error) == self.signature)
            if same and self.valid_off and not outcomes[k * step + 1].ok:
                verdicts.append(Verdict(False, "fails with the optimizer off too: "
                                        + outcomes[k * step + 1].describe()))
            else:
                verdicts.append(Verdict(same, at_level.describe()))
        return verdicts

    def describe(self) -> str:
        verb = "crashes onnxruntime" if self.stage == "crash" else "fails to load"
        return f"{verb} at {LEVELS[self.level]}: {self.first_seen}"


class LevelMismatch(Failure):
    """Outputs at ``level`` differ from the optimizer-off outputs beyond ``rtol``."""

    kind = "mismatch"

    def __init__(self, level: str, rtol: float = DEFAULT_RTOL):
        self.level, self.rtol = level, rtol

    def check(self, candidates: list[Built]) -> list[Verdict]:
        jobs = [job for b in candidates for job in ((b.data, [b.feed], "disabled"),
                                                     (b.data, [b.feed], self.level))]
        outcomes = run_isolated_many(jobs, timeout=CHECK_SECONDS)
        return [_mismatch(outcomes[2 * k], outcomes[2 * k + 1], self.rtol)
                for k in range(len(candidates))]

    def describe(self) -> str:
        return (f"outputs at {LEVELS[self.level]} differ from onnxruntime's with its optimizer "
                f"off by more than {self.rtol:g} of their scale")


def _mismatch(off: RuntimeOutcome, on: RuntimeOutcome, rtol: float) -> Verdict:
    if not (off.ok and on.ok):
        return Verdict(False, (off if not off.ok else on).describe())
    report = compare_outputs(off.outputs[0], on.outputs[0], rtol)
    if report.ok:
        return Verdict(False, "outputs agree")
    bad = [o for o in report.outputs if not o.ok]
    return Verdict(True, f"{len(bad)} output(s) differ; {bad[0].name}: max abs error "
                         f"{bad[0].max_abs_err:.3g} at scale {bad[0].scale:.3g}")


class PipelineFailure(Failure):
    """GraphLab's pipeline on the candidate: a pass raises (``pass-error``) or its output
    computes something else (``mismatch``)."""

    def __init__(self, kind: str, pipeline: str, original: str = "", rtol: float = DEFAULT_RTOL):
        self.kind, self.pipeline, self.rtol = kind, pipeline, rtol
        self.first_seen = original
        self.signature = pass_error_signature(original) if kind == "pass-error" else None
        self.level = "disabled"

    def check(self, candidates: list[Built]) -> list[Verdict]:
        return [self._one(b) for b in candidates]

    def _one(self, built: Built) -> Verdict:
        from ..ir import load_model, to_bytes
        from ..compilation import compile_model

        try:
            graph = load_model(built.data)
        except GraphLabError as err:
            return Verdict(False, f"GraphLab cannot import it: {err.message}")
        try:
            final = compile_model(graph, self.pipeline).final
        except PassFailedError as err:
            same = self.kind == "pass-error" and pass_error_signature(str(err)) == self.signature
            return Verdict(same, err.message)
        except GraphLabError as err:
            return Verdict(False, f"refused: {err.message}")
        if self.kind == "pass-error":
            return Verdict(False, "the pipeline ran")
        off, out = run_isolated_many([(built.data, [built.feed]), (to_bytes(final), [built.feed])],
                                     level="disabled", timeout=CHECK_SECONDS)
        return _mismatch(off, out, self.rtol)

    def describe(self) -> str:
        if self.kind == "pass-error":
            return f"pipeline {self.pipeline} raises: {self.first_seen}"
        return (f"GraphLab's {self.pipeline} output differs from the model by more than "
                f"{self.rtol:g} of the outputs' scale")


def pass_error_signature(message: str) -> tuple[str, str] | None:
    """(pass name, exception type) of a PassFailedError's message."""
    found = re.match(r"pass (\S+) failed .*?: (\w+): ", message)
    return (found.group(1), found.group(2)) if found else None



def failure_of(kind: str, model: bytes, feed: dict, *, level: str = "all",
               pipeline: str | None = None, rtol: float = DEFAULT_RTOL) -> Failure:
    """The failure of ``kind`` as the whole model shows it (its message kept, to recognize it
    in candidates).  ``pipeline``: a mismatch or pass error of GraphLab's passes, not
    onnxruntime's."""
    if kind not in KINDS:
        raise GraphLabError(f"unknown failure {kind!r}", hint=f"choose one of {', '.join(KINDS)}")
    if kind == "pass-error" or (kind == "mismatch" and pipeline):
        if not pipeline:
            raise GraphLabError("a pass error needs the pipeline that raises",
                                hint="give it with -p PIPELINE")
        first = PipelineFailure(kind, pipeline, rtol=rtol)
        seen = first.check([Built(_parsed(model), feed)])[0].seen
        return PipelineFailure(kind, pipeline, seen, rtol)
    if kind == "mismatch":
        return LevelMismatch(level, rtol)
    at_level, off = run_isolated_many([(model, [feed], level), (model, [feed], "disabled")])
    return RuntimeFailure(kind, level, at_level, off.ok)


def _parsed(model: bytes):
    import onnx

    return onnx.load_from_string(model)
