"""The differential property behind the fuzz test and benchmark: every preset, on every model,
must give a model onnxruntime loads and runs — optimizer off and at its default ENABLE_ALL —
with the original's outputs on the same inputs, or refuse cleanly with a GraphLabError.

Models are compiled in this process; all runs (the original and every preset's output, at each
level) go through ``runtime_check.run_isolated_many``, so onnxruntime starts once per level for
a whole batch of cases and a segfault is one case's verdict, not the fuzzer's death.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto, helper

from compiler_core.errors import GraphLabError, PassFailedError, PropertyViolationError
from compiler_core.ir import Graph, load_model, to_bytes
from compiler_core.passes import PassManager, resolve_pipeline
from compiler_core.quantized_outputs import rounding_allowance
from compiler_core.runtime_check import run_isolated_many
from compiler_core.verify import DEFAULT_RTOL, compare_outputs, make_inputs
from random_graphs import Case
from written_back import first_snapshot_written_wrong

PRESETS = ("clean", "O1", "O2", "O2-nhwc", "O2-int8", "O2-partition")
OK = "ok"
REFUSED = "clean refusal"        # a GraphLabError with a message: acceptable (not a pass's
                                 # own failure or broken promise: those are crashes)
CRASH = "crash"                  # a non-GraphLabError exception, or onnxruntime (optimizer off)
                                 # cannot load, run or survive our output
MISCOMPILE = "miscompile"        # outputs differ beyond the pipeline's tolerance
LOAD_FAILURE = "load failure at ENABLE_ALL"  # the original runs there, our output does not
ORIGINAL_FAILS = "original fails at ENABLE_ALL"  # onnxruntime's own fault, inherited by ours
INVALID = "invalid case"         # the generated model itself fails: a generator bug
OUTCOMES = (OK, REFUSED, CRASH, MISCOMPILE, LOAD_FAILURE, ORIGINAL_FAILS, INVALID)
FAILURES = (CRASH, MISCOMPILE, LOAD_FAILURE, INVALID)
# Quantized outputs (a pass in the pipeline asked for a looser tolerance than exact passes get)
# are only checked for names, shapes, dtypes and finite values: random weights and inputs are
# int8's worst case (no real distribution to calibrate on; a Softmax of wide-ranging scores
# can pick another maximum), so how close they come measures the quantizer, not the passes.
# A model computing in float16 is checked against this bound: onnxruntime runs float16 ops it
# has no float16 kernel for (BatchNormalization, ...) in float32 behind inserted Casts, and
# keeps consecutive ones in float32, so a rewrite that puts a float16 Transpose between them
# (NHWC layout) rounds where the original did not — a few float16 ulps (2^-11 each), not a
# miscompile.  A model that arrives quantized (QDQ) is allowed a few steps of its output's
# quantization grid, as `--verify` allows it: onnxruntime's own QDQ fusions at ENABLE_ALL
# round some activations to the next code, on the original and on our output alike.
FLOAT16_BOUND = 5e-3


class WrittenWrong(AssertionError):
    """A snapshot that does not write and read back whole: a crash of the exporter's kind."""


@dataclass
class Verdict:
    outcome: str
    detail: str = ""


@dataclass
class _Compiled:
    """One case through the presets: the models to run, or why there is none."""

    case: Case
    inputs: dict = field(default_factory=dict)
    models: dict[str, bytes] = field(default_factory=dict)   # preset -> exported output
    tolerance: dict[str, float] = field(default_factory=dict)
    allowance: dict | None = None        # quantization steps, for a model quantized already
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # decided without running


def check_cases(cases: list[Case], presets=PRESETS) -> list[dict[str, Verdict]]:
    """For each case, each preset's verdict."""
    compiled = [_compile(case, presets) for case in cases]
    jobs: dict[tuple[int, bytes], int] = {}  # presets often agree: each model runs once
    slots: dict[tuple[int, str], int] = {}
    for number, item in enumerate(compiled):
        if not item.inputs:
            continue
        for name, model in [("original", item.case.model.SerializeToString()),
                            *item.models.items()]:
            slots[(number, name)] = jobs.setdefault((number, model), len(jobs))
    batches = [(model, [compiled[number].inputs]) for number, model in jobs]
    outcomes = {level: run_isolated_many(batches, level=level) for level in ("disabled", "all")}
    ran = {slot: {level: outcomes[level][job] for level in outcomes}
           for slot, job in slots.items()}
    return [{preset: item.verdicts.get(preset) or _judge(item, preset, ran, number)
             for preset in presets} for number, item in enumerate(compiled)]


def _compile(case: Case, presets) -> _Compiled:
    item = _Compiled(case)
    try:
        graph = load_model(case.model.SerializeToString())
        item.inputs = make_inputs(graph, case.bindings)
        item.allowance = rounding_allowance(graph)
    except Exception as err:  # noqa: BLE001 - every failure is a verdict
        verdict = _exception_verdict(err)
        item.verdicts = {preset: verdict for preset in presets}
        return item
    done: dict[tuple[str, ...], tuple[Graph, float]] = {(): (graph, DEFAULT_RTOL)}
    for preset in sorted(presets, key=lambda p: len(resolve_pipeline(p))):
        try:
            final, rtol = _run_pipeline(resolve_pipeline(preset), done,
                                        case.bindings if case.specialize else None)
            item.models[preset] = to_bytes(final)
            item.tolerance[preset] = rtol
        except Exception as err:  # noqa: BLE001
            item.verdicts[preset] = _exception_verdict(err)
    return item


def _run_pipeline(names: list[str], done: dict, bindings) -> tuple[Graph, float]:
    """The graph after the passes ``names`` and the tolerance a check of it uses.  Presets
    share prefixes (O1 starts with clean, O2-int8 with O2): the passes of the longest prefix
    already run are not run again, the rest run from its snapshot — the same passes, in the
    same order, on the same graph, so the same result as a PassManager run of the whole list."""
    start = max((k for k in done if list(k) == names[:len(k)]), key=len)
    graph, rtol = done[start]
    if len(start) == len(names):
        return graph, rtol
    result = PassManager(names[len(start):], bindings=bindings, check=True).run(graph)
    problem = first_snapshot_written_wrong(result.snapshots)
    if problem:
        raise WrittenWrong(problem)
    for index, snap in enumerate(result.snapshots):
        done[tuple(names[:len(start) + index + 1])] = (
            snap.graph, max(rtol, result.tolerance_after(index)[0]))
    return done[tuple(names)]


def _exception_verdict(err: Exception) -> Verdict:
    """A message for the user is a refusal; a pass that raised (its error wrapped with its
    name) or broke what it promised is a crash, however well it is worded."""
    if isinstance(err, GraphLabError) and str(err).strip() and \
            not isinstance(err, (PassFailedError, PropertyViolationError)):
        return Verdict(REFUSED, f"{type(err).__name__}: {err}")
    frame = traceback.extract_tb(err.__traceback__)[-1]
    return Verdict(CRASH, f"{type(err).__name__}: {' '.join(str(err).split())[:300]} "
                          f"(at {frame.filename.rsplit('/', 2)[-1]}:{frame.lineno})")


def _judge(item: _Compiled, preset: str, ran: dict, number: int) -> Verdict:
    original = ran[(number, "original")]
    if not original["disabled"].ok:
        return Verdict(INVALID, f"the generated model {original['disabled'].describe()}")
    reference = original["disabled"].outputs[0]
    tolerance = item.tolerance[preset]
    bound = max(tolerance, FLOAT16_BOUND if _computes_in_float16(item.case) else 0.0)
    compare = _same_form if tolerance > DEFAULT_RTOL else (
        lambda ref, got: _worst(compare_outputs(ref, got, bound, allowance=item.allowance)))
    ours = ran[(number, preset)]
    if not ours["disabled"].ok:
        return Verdict(CRASH, f"our output {ours['disabled'].describe()}")
    wrong = compare(reference, ours["disabled"].outputs[0])
    if wrong and item.allowance and original["all"].ok:
        # QDQ folded to integer kernels computes what onnxruntime's own fusion of the original
        # computes; on a CPU without 8-bit dot products (no VNNI) those kernels saturate, away
        # from the float arithmetic of the QDQ graph (`verify.Verifier.judge`)
        if not compare(original["all"].outputs[0], ours["disabled"].outputs[0]):
            wrong = ""
        elif theirs := compare(reference, original["all"].outputs[0]):
            return Verdict(ORIGINAL_FAILS, f"onnxruntime's integer kernels move the original "
                                           f"too: {theirs}")
    if wrong:
        return Verdict(MISCOMPILE, f"optimizer off: {wrong}")
    # Where onnxruntime fails the original on its own, our output is still judged: it is ok
    # if it loads and matches (the pipeline steered clear of the fault), inherited if not.
    if not ours["all"].ok:
        if not original["all"].ok:
            return Verdict(ORIGINAL_FAILS, f"inherited: {original['all'].describe()}")
        return Verdict(LOAD_FAILURE, f"our output {ours['all'].describe()}")
    wrong = compare(reference, ours["all"].outputs[0])
    if wrong:
        if not original["all"].ok:
            return Verdict(ORIGINAL_FAILS, f"inherited: {original['all'].describe()}")
        theirs = compare(reference, original["all"].outputs[0])
        if theirs:
            return Verdict(ORIGINAL_FAILS, f"the original differs too: {theirs}")
        return Verdict(MISCOMPILE, f"at ENABLE_ALL: {wrong}")
    return Verdict(OK)


def _same_form(reference: dict, got: dict) -> str:
    """What is wrong with ``got`` beyond its values: a missing output, another shape or
    dtype, a non-finite value where the reference is finite ("" if nothing)."""
    for name, ref in reference.items():
        if name not in got:
            return f"output {name!r} is missing"
        if (got[name].shape, got[name].dtype) != (ref.shape, ref.dtype):
            return (f"output {name!r} is {got[name].dtype}{list(got[name].shape)}, not "
                    f"{ref.dtype}{list(ref.shape)}")
        if ref.dtype.kind == "f" and not np.isfinite(got[name][np.isfinite(ref)]).all():
            return f"output {name!r} has non-finite values where the original's are finite"
    return ""


def _computes_in_float16(case: Case) -> bool:
    return any(node.op_type == "Cast" and helper.get_node_attr_value(node, "to") == TensorProto.FLOAT16
               for node in case.model.graph.node)


def _worst(report) -> str:
    """The worst output of a failed comparison ("" if it passed)."""
    bad = [o for o in report.outputs if not o.ok]
    if not bad:
        return ""
    worst = max(bad, key=lambda o: o.max_abs_err / max(o.scale, 1e-12))
    return (f"output {worst.name!r} off by {worst.max_abs_err:.3g} (scale {worst.scale:.3g}, "
            f"tolerance {report.rtol:g}){' ' + worst.note if worst.note else ''}")
