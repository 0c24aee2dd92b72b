"""Run a model the way its users run it: onnxruntime at a chosen optimization level, in a child.

GraphLab's own numerical check runs onnxruntime with its optimizer off, to test *our* graph.
Users run onnxruntime at its default level (ORT_ENABLE_ALL), where onnxruntime rewrites the
graph again — and a malformed-but-accepted node can make that rewrite crash the whole process
(a segmentation fault, not an exception).  So this check loads and runs the model in a child
process: a crash there is a failed check with the signal named, never a dead CLI, builder or
server.  The child imports only onnxruntime and numpy (``compiler_core.ort_child``).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import GraphLabError
from .records import record_field

# onnxruntime's levels, by the names users pass on the command line.
LEVELS = {
    "disabled": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
DEFAULT_LEVEL = "all"          # onnxruntime's own default: what a user's InferenceSession does
DEFAULT_TIMEOUT_SECONDS = 300  # a load that takes longer is reported as stuck, not waited on
POLL_SECONDS = 0.005           # how often the parent looks for a child's answers


def level_names(levels) -> list[str]:
    """Levels as onnxruntime names them (ORT_ENABLE_ALL, ...): the form records show them in."""
    return [LEVELS[level] for level in levels]


def by_level_name(values: dict) -> dict:
    """A mapping keyed by levels as users name them, keyed as onnxruntime names them."""
    return {LEVELS[level]: value for level, value in values.items()}


@dataclass
class RuntimeOutcome:
    """What happened when onnxruntime loaded (and ran) a model at one level.

    ``stage`` is where it ended: "ran" (outputs available), "load" (the session could not be
    created), "run" (the session failed on the inputs), "crash" (the process died: a signal,
    with onnxruntime's own last words in ``error``) or "timeout".
    """

    level: str = record_field(omit=True)   # written as onnxruntime names it (level_name)
    stage: str
    error: str = ""
    outputs: list[dict[str, np.ndarray]] = record_field(omit=True, default_factory=list)
    # the model onnxruntime made of it (when asked to save it)
    optimized: bytes | None = record_field(omit=True, default=None)

    json_derived = (("level", "level_name"), "ok")
    json_order = ("level", "ok")

    @property
    def ok(self) -> bool:
        return self.stage == "ran"

    @property
    def level_name(self) -> str:
        """The level as onnxruntime names it (ORT_ENABLE_ALL, ...)."""
        return LEVELS[self.level]

    def describe(self) -> str:
        """One line for a report: `loads and runs at ORT_ENABLE_ALL` or what went wrong."""
        level = self.level_name
        if self.ok:
            return f"loads and runs in onnxruntime at {level}"
        verb = {"load": "fails to load", "run": "fails to run", "crash": "crashes onnxruntime",
                "timeout": "does not finish loading and running"}[self.stage]
        return f"{verb} at {level}: {self.error}" if self.error else f"{verb} at {level}"


def check_level(level: str) -> str:
    """The level's short name, or a ValueError listing the names there are."""
    if level not in LEVELS:
        raise ValueError(f"unknown onnxruntime level {level!r}: choose one of "
                         f"{', '.join(LEVELS)}")
    return level


def run_isolated(model: bytes | Path, batches: list[dict] | None = None, *,
                 level: str = DEFAULT_LEVEL, threads: int = 1,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS,
                 save_optimized: bool = False) -> RuntimeOutcome:
    """Load ``model`` (serialized ONNX, or the path of an .onnx file, e.g. one with external
    data) in a child onnxruntime at ``level`` and run each batch.

    With no batches the child only creates the session (does the model load at all?).  With
    ``save_optimized`` the outcome carries the model onnxruntime's optimizer made of it
    (``SessionOptions.optimized_model_filepath``).
    """
    return run_isolated_many([(model, batches)], level=level, threads=threads,
                             timeout=timeout, save_optimized=save_optimized)[0]


def onnxruntime_optimized(model: bytes, level: str = "extended", *,
                          timeout: float = DEFAULT_TIMEOUT_SECONDS) -> bytes:
    """The model onnxruntime's own optimizer makes of ``model`` at ``level`` (what it runs), made
    in a child process; a GraphLabError says why there is none."""
    outcome = run_isolated(model, level=level, timeout=timeout, save_optimized=True)
    if outcome.stage != "ran" or outcome.optimized is None:
        raise GraphLabError(f"onnxruntime could not optimize the model: {outcome.describe()}",
                            hint="the model must load in onnxruntime; try a lower level")
    return outcome.optimized


def run_isolated_many(jobs: list[tuple], *,
                      level: str = DEFAULT_LEVEL, threads: int = 1,
                      timeout: float = DEFAULT_TIMEOUT_SECONDS,
                      save_optimized: bool = False) -> list[RuntimeOutcome]:
    """``run_isolated`` for many (model, batches) or (model, batches, level) jobs, one outcome
    per job, in order; a job's own level overrides ``level``.

    One child serves the jobs in turn (starting onnxruntime costs more than checking a small
    model).  When a model kills the child, or runs longer than ``timeout``, that model's
    outcome says so and a fresh child takes up the jobs after it.
    """
    check_level(level)
    levels = [check_level(job[2]) if len(job) > 2 else level for job in jobs]
    outcomes: list[RuntimeOutcome] = []
    with tempfile.TemporaryDirectory(prefix="graphlab-ort-") as scratch:
        folder = Path(scratch)
        written: dict[int, Path] = {}   # one file per distinct model; the others link to it
        for number, (model, batches, *_) in enumerate(jobs):
            if levels[number] != level:
                (folder / f"{number}.level").write_text(LEVELS[levels[number]])
            if isinstance(model, bytes):
                _write_model(folder / f"{number}.onnx", model, written)
            else:   # the file stays where it is: its external data lies beside it
                (folder / f"{number}.path").write_text(str(Path(model).resolve()))
            with open(folder / f"{number}.inputs.pkl", "wb") as handle:
                pickle.dump(batches or [], handle, protocol=pickle.HIGHEST_PROTOCOL)
        while len(outcomes) < len(jobs):
            outcomes += _serve(folder, len(outcomes), levels, level, threads, timeout,
                               save_optimized)
        if save_optimized:
            for number, outcome in enumerate(outcomes):
                saved = folder / f"{number}.optimized.onnx"
                outcome.optimized = saved.read_bytes() if saved.exists() else None
    return outcomes


def _write_model(path: Path, model: bytes, written: dict[int, Path]) -> None:
    """Write ``model`` to ``path``, or link the file already written for the same bytes (a
    model tried on many inputs is written once)."""
    if id(model) in written:
        try:
            os.link(written[id(model)], path)
            return
        except OSError:
            pass
    path.write_bytes(model)
    written[id(model)] = path


def _serve(folder: Path, start: int, levels: list[str], level: str, threads: int,
           timeout: float, save_optimized: bool) -> list[RuntimeOutcome]:
    """Run jobs ``start``.. in one child (job i at ``levels[i]``, the child's default
    ``level``); the outcomes up to and including the one that ended it early (a crash or a
    timeout), or all of them."""
    count = len(levels)
    command = [sys.executable, "-m", "compiler_core.ort_child", str(folder), LEVELS[level],
               str(threads), str(start), str(count)] + (["save"] if save_optimized else [])
    log = folder / f"{start}.stderr"
    with open(log, "w") as stderr:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr,
                                 env=child_environment())
    outcomes: list[RuntimeOutcome] = []
    last_progress = time.monotonic()
    while True:
        returncode = child.poll()
        while start + len(outcomes) < count and (answer := _answer(folder,
                                                                   start + len(outcomes))):
            outcomes.append(RuntimeOutcome(levels[start + len(outcomes)], *answer))
            last_progress = time.monotonic()
        if start + len(outcomes) == count:
            child.wait()
            return outcomes
        if returncode is not None:
            death = _death(returncode, log.read_text(errors="replace"))
            return outcomes + [RuntimeOutcome(levels[start + len(outcomes)], "crash", death)]
        if time.monotonic() - last_progress > timeout:
            child.kill()
            child.wait()
            return outcomes + [RuntimeOutcome(levels[start + len(outcomes)], "timeout",
                                              f"gave up after {timeout:g} s")]
        time.sleep(POLL_SECONDS)


def _answer(folder: Path, job: int) -> tuple | None:
    path = folder / f"{job}.answer.pkl"
    if not path.exists():
        return None
    with open(path, "rb") as handle:
        return pickle.load(handle)


def child_environment() -> dict[str, str]:
    """The parent's environment, with this package importable from wherever it was loaded."""
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH"))
                                        if p)
    return env


def _death(returncode: int, stderr: str) -> str:
    """Why the child died: the signal's name (SIGSEGV, ...) and onnxruntime's last line."""
    if returncode < 0:
        try:
            cause = f"the process was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            cause = f"the process was killed by signal {-returncode}"
    else:
        cause = f"the process exited with status {returncode}"
    last = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return f"{cause} ({last[-1][:300]})" if last else cause
