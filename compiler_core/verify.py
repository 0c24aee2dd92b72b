"""Differential numerical check: run two graphs on the same inputs with onnxruntime and compare.

This is how every pass proves it kept the model's meaning.  Inputs come from the user (an .npz
file) or are generated from the input signature so that they are *valid* for the model: token
ids inside the embedding table, 0/1 attention masks, non-negative indices, symbolic dims bound to
small sizes.  Errors are measured relative to the output's scale (its largest magnitude), which
is what "the model computes the same thing" means for float outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto

from .errors import RunFailedError, RuntimeLoadError, VerificationError
from .input_sizes import SizePlan, collect_facts, solve
from .input_sizes.candidates import candidate_plans
from .input_sizes.trials import Attempt, first_that_runs
from .ir import Graph, Node, Value, model_for_runtime
from .ir.dtypes import dtype_name, to_numpy
from .ort_child import ort_message
from .quantized_outputs import OutputAllowance, rounding_allowance
from .quantized_outputs import describe as describe_allowance
from .records import record_field, to_json

DEFAULT_RTOL = 1e-4        # error allowed, relative to the output's scale (fp32 passes)
DEFAULT_ATOL = 1e-6        # floor for outputs whose scale is ~0
# Float16 kernels (onnxruntime's fused operators) round once where the model rounds after
# each op: a few float16 ulps (2^-11 each) of an output's scale, as users of float16
# models expect; exporting with them is checked at this tolerance.
FLOAT16_RTOL = 5e-3
MAX_INPUT_BYTES = 1 << 30  # refuse to generate inputs larger than this in total
# Ops that pass indices through unchanged, so a Gather behind them still bounds the input.
_INDEX_PASSTHROUGH = {"Cast", "Unsqueeze", "Reshape", "Flatten", "Squeeze", "Identity",
                      "Expand", "Slice"}
_INDEX_CONSUMERS = {"Gather": (1, "axis"), "GatherElements": (1, "axis"),
                    "GatherND": (1, None), "OneHot": (0, None)}


@dataclass
class OutputCheck:
    name: str
    max_abs_err: float
    max_rel_err: float
    scale: float
    ok: bool
    note: str = ""


@dataclass
class VerifyReport:
    outputs: list[OutputCheck] = field(default_factory=list)
    rtol: float = DEFAULT_RTOL
    # how the outputs were judged when not by the tolerance alone (quantization steps, the
    # input model at the same onnxruntime level); '' otherwise
    basis: str = ""

    json_derived = ("max_abs_err", "max_rel_err", "ok")
    json_order = json_derived

    @property
    def max_abs_err(self) -> float:
        return max((o.max_abs_err for o in self.outputs), default=0.0)

    @property
    def max_rel_err(self) -> float:
        return max((o.max_rel_err for o in self.outputs), default=0.0)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)


# ---------------------------------------------------------------------------------- running
def run(graph: Graph, inputs: dict) -> dict[str, np.ndarray]:
    """Execute the graph with onnxruntime (its own optimizations off: we test *our* graph)."""
    return run_batches(graph, [inputs])[0]


def run_batches(graph: Graph, batches: list[dict]) -> list[dict[str, np.ndarray]]:
    """Execute the graph on each input dict in turn, loading it into onnxruntime once."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4  # failures are reported as VerificationError, not logged
    with model_for_runtime(graph) as model:
        try:
            session = ort.InferenceSession(model if isinstance(model, bytes) else str(model),
                                           options, providers=["CPUExecutionProvider"])
        except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise RuntimeLoadError(f"onnxruntime cannot load graph {graph.name!r}: "
                                   f"{ort_message(err)}", where=graph.name,
                                   hint="an op may be unsupported by onnxruntime") from None
    names = [o.name for o in session.get_outputs()]
    outputs = []
    for inputs in batches:
        feed = {i.name: inputs[i.name] for i in session.get_inputs() if i.name in inputs}
        try:
            results = session.run(names, feed)
        except Exception as err:  # noqa: BLE001
            cause = ort_message(err)
            raise RunFailedError(
                f"onnxruntime failed to run graph {graph.name!r} on inputs "
                f"{describe_inputs(feed)}: {cause}", where=graph.name, cause=cause,
                hint="a model exported at fixed sizes only runs at those: bind its dims to "
                     "them (e.g. batch=1,seq=128) or give real inputs in an .npz file") from None
        outputs.append(dict(zip(names, results)))
    return outputs


def describe_inputs(inputs: dict) -> str:
    """`ids int64[2, 8], mask int64[2, 8]`: what a run was fed, for messages."""
    return ", ".join(f"{name} {array.dtype}{list(array.shape)}" for name, array in inputs.items())


# ---------------------------------------------------------------------------------- comparing
def compare_outputs(reference: dict, candidate: dict, rtol: float = DEFAULT_RTOL,
                    atol: float = DEFAULT_ATOL,
                    allowance: dict[str, OutputAllowance] | None = None) -> VerifyReport:
    """Per-output max abs / max rel error; ``ok`` when abs error <= rtol * scale + atol, plus
    the output's quantization allowance when the model quantizes at run time."""
    report = VerifyReport(rtol=rtol, basis=describe_allowance(allowance))
    for name, ref in reference.items():
        if name not in candidate:
            report.outputs.append(OutputCheck(name, float("inf"), float("inf"), 0.0, False,
                                              "output missing from the candidate"))
            continue
        report.outputs.append(_compare_one(name, ref, candidate[name], rtol, atol,
                                           (allowance or {}).get(name)))
    return report


def _compare_one(name: str, ref, got, rtol: float, atol: float,
                 allowance: OutputAllowance | None = None) -> OutputCheck:
    if not isinstance(ref, np.ndarray) or not isinstance(got, np.ndarray):
        same = _nested_equal(ref, got)
        return OutputCheck(name, 0.0 if same else float("inf"), 0.0 if same else float("inf"),
                           0.0, same, "" if same else "non-tensor outputs differ")
    if ref.shape != got.shape:
        return OutputCheck(name, float("inf"), float("inf"), 0.0, False,
                           f"shape {list(got.shape)} instead of {list(ref.shape)}")
    if ref.size == 0:
        return OutputCheck(name, 0.0, 0.0, 0.0, True)
    if ref.dtype.kind not in "fc" and not (allowance and ref.dtype.kind in "iu"):
        diff = ref != got
        bad = float(np.count_nonzero(diff))
        return OutputCheck(name, bad and float("inf"), bad and float("inf"), 0.0, not bad,
                           f"{int(bad)} elements differ" if bad else "")
    r = ref.astype(np.float64)
    g = got.astype(np.float64)
    both_nan = np.isnan(r) & np.isnan(g)
    same_inf = np.isinf(r) & (r == g)
    diff = np.where(both_nan | same_inf, 0.0, np.abs(r - g))
    diff = np.where(np.isnan(diff), np.inf, diff)
    finite = np.abs(r[np.isfinite(r)])
    scale = float(finite.max()) if finite.size else 0.0
    max_abs = float(diff.max())
    rel = diff / np.maximum(np.abs(np.where(np.isfinite(r), r, 0.0)), max(scale, 1e-12) * 1e-3)
    allowed = rtol * scale + atol + (allowance.atol(scale) if allowance else 0.0)
    return OutputCheck(name, max_abs, float(rel.max()), scale, max_abs <= allowed)


def _nested_equal(a, b) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_nested_equal(x, y) for x, y in zip(a, b))
    return a == b if not isinstance(a, np.ndarray) else False


def verify(reference: Graph, candidate: Graph, inputs: dict | None = None,
           bindings: dict[str, int] | None = None, rtol: float | None = None) -> VerifyReport:
    """Run both graphs on the same inputs and compare every output of the reference."""
    return Verifier(reference, inputs, bindings, rtol).check(candidate)


_HALF_TYPES = frozenset({TensorProto.FLOAT16, TensorProto.BFLOAT16})


def computes_in_half(graph: Graph) -> bool:
    """Whether some node of the graph computes a float16 or bfloat16 result (a model kept in
    float16, or one that casts part of its work down)."""
    return any(value is not None and value.elem_type in _HALF_TYPES and value.stored is None
               for node in graph.nodes if node.op_type != "Constant" for value in node.outputs)


def with_inference_semantics(graph: Graph) -> Graph:
    """A copy in which training-mode Dropout and BatchNormalization behave as in inference.

    A model exported in training mode draws a fresh dropout mask on every run, so two runs can
    never agree; what a deployment compiler must preserve is the inference function.
    """
    copy = graph.copy()
    off = None
    for node in copy.nodes:
        if node.op_type == "Dropout" and node.domain == "" and node.input(2) is not None:
            mode = node.input(2).constant_value()
            if mode is None or bool(np.asarray(mode).reshape(-1)[0]):
                off = off or copy.add_initializer("inference_mode_off", np.array(False))
                node.replace_input(2, off)
        elif node.op_type == "BatchNormalization" and node.attrs.get("training_mode"):
            copy.set_node_attr(node, "training_mode", 0)
    return copy


INTEGER_LEVEL = "extended"   # where onnxruntime runs QDQ groups as integer ops


class Verifier:
    """Checks many candidates against one reference, running the reference only once.

    Both sides run with inference semantics (see ``with_inference_semantics``).
    """

    def __init__(self, reference: Graph, inputs: dict | None = None,
                 bindings: dict[str, int] | None = None, rtol: float | None = None):
        # by default the model's own precision sets it: a float16 model's kernels and a
        # pass that folds its weights round differently by a few float16 ulps
        self.half = computes_in_half(reference)
        self.rtol = rtol if rtol is not None else FLOAT16_RTOL if self.half else DEFAULT_RTOL
        model = with_inference_semantics(reference)
        self.allowance = rounding_allowance(model)   # None unless it quantizes at run time
        # None when the user gave the inputs; else how they were made, at which sizes
        self.generated: GeneratedInputs | None = None
        try:
            if inputs is None:
                self.generated = fit_inputs(model, bindings)
                self.inputs = self.generated.inputs
                self.reference_outputs = self.generated.outputs
            else:
                self.inputs, self.reference_outputs = inputs, run(model, inputs)
        except RuntimeLoadError as err:
            raise RuntimeLoadError(
                f"{err.message.rstrip('. ')}, so nothing can be checked against it",
                where=err.where,
                hint="onnxruntime refuses the model as it was given, before any pass ran: "
                     "check how it was exported") from None
        self._model = model
        self._integer_outputs: dict | None = None

    def inputs_record(self) -> dict:
        """What the check ran on, for reports: shapes, and the sizes and why when generated."""
        shapes = {name: list(np.shape(array)) for name, array in self.inputs.items()}
        if self.generated is None:
            return {"generated": False, "shapes": shapes}
        return {"generated": True, "shapes": shapes, **to_json(self.generated)}

    def describe_inputs(self) -> str:
        """`generated inputs src float32[5, 2, 64] at seq=5 (...), batch=2` or `given ...`."""
        inputs = f"given inputs {describe_inputs(self.inputs)}" if self.generated is None \
            else self.generated.describe()
        if self.half and self.rtol > DEFAULT_RTOL:
            inputs += (f"; the model computes in half precision (float16 or bfloat16), so "
                       f"outputs are compared within {self.rtol:g} of their scale (float32: "
                       f"{DEFAULT_RTOL:g})")
        return inputs

    def check(self, candidate: Graph, rtol: float | None = None) -> VerifyReport:
        """Compare ``candidate`` with the reference (``rtol`` overrides the verifier's own)."""
        return self.judge(run(with_inference_semantics(candidate), self.inputs), rtol)

    def judge(self, outputs: dict, rtol: float | None = None) -> VerifyReport:
        """A candidate's outputs (on ``inputs``) against the reference.

        A model that quantizes at run time is also held to the input as onnxruntime runs it
        with its own QDQ fusion (``INTEGER_LEVEL``): a candidate whose QDQ groups are integer
        kernels computes what those kernels compute, and on CPUs without 8-bit dot products
        (no VNNI) they saturate intermediate sums, moving outputs by tens of steps from the
        float arithmetic of the QDQ graph, in the input model exactly as in ours."""
        rtol = self.rtol if rtol is None else rtol
        report = compare_outputs(self.reference_outputs, outputs, rtol, allowance=self.allowance)
        if report.ok or self.allowance is None:
            return report
        if self._integer_outputs is None:
            self._integer_outputs = self._input_at_integer_level()
        if not self._integer_outputs:
            return report
        integer = compare_outputs(self._integer_outputs, outputs, rtol, allowance=self.allowance)
        if not integer.ok:
            return report
        integer.basis += (f"; held to the input model run by onnxruntime at ORT_ENABLE_"
                          f"{INTEGER_LEVEL.upper()} (its integer kernels for the QDQ groups)")
        return integer

    def _input_at_integer_level(self) -> dict:
        """The input's outputs at ``INTEGER_LEVEL``, in a child onnxruntime as every run at an
        optimization level is (its optimizer can crash); {} when it fails there."""
        from .runtime_check import run_isolated

        with model_for_runtime(self._model) as model:
            outcome = run_isolated(model, [self.inputs], level=INTEGER_LEVEL)
        return outcome.outputs[0] if outcome.ok else {}


# ---------------------------------------------------------------------------------- inputs
def load_inputs(path: str, graph: Graph) -> dict[str, np.ndarray]:
    """Inputs from an .npz file, checked against the graph's input signature."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError) as err:
        raise VerificationError(f"cannot read inputs from {path}: {err}", where=path,
                                hint="give an .npz file written by numpy.savez") from None
    expected = {v.name: v for v in graph.inputs}
    missing = sorted(set(expected) - set(arrays))
    if missing:
        raise VerificationError(f"{path} has no array for input(s) {missing}; it has "
                                f"{sorted(arrays)}", where=path,
                                hint="name each array after a model input")
    for name, value in expected.items():
        array = arrays[name]
        if array.dtype.kind in "US" and to_numpy(value.elem_type) == object:
            array = arrays[name] = array.astype(object)  # numpy saves text as fixed-width
        if value.elem_type is not None and array.dtype != to_numpy(value.elem_type):
            raise VerificationError(f"input {name!r} in {path} is {array.dtype}, the model "
                                    f"expects {dtype_name(value.elem_type)}", where=name)
        if value.shape is not None and (len(value.shape) != array.ndim or any(
                isinstance(d, int) and d != s for d, s in zip(value.shape, array.shape))):
            raise VerificationError(f"input {name!r} in {path} has shape {list(array.shape)}, "
                                    f"the model expects {value.describe_type()}", where=name)
    return {name: arrays[name] for name in expected}


def make_inputs(graph: Graph, bindings: dict[str, int] | None = None, seed: int = 0,
                plan: SizePlan | None = None) -> dict[str, np.ndarray]:
    """Valid random inputs for every graph input (deterministic for a given seed), at the
    sizes of ``plan`` (by default: planned from ``bindings`` and the model's structure)."""
    rng = np.random.default_rng(seed)
    plan = plan or solve(collect_facts(graph), bindings)
    inputs: dict[str, np.ndarray] = {}
    total = 0
    for value in graph.inputs:
        if value.type_proto is not None or value.elem_type is None:
            raise VerificationError(f"cannot generate data for input {value.name!r} "
                                    f"({value.describe_type()})", where=value.name,
                                    hint="give the inputs in an .npz file")
        shape = plan.input_shape(value.name, value.shape or ())
        nbytes = int(np.prod(shape, dtype=np.int64)) * to_numpy(value.elem_type).itemsize
        total += nbytes
        if total > MAX_INPUT_BYTES:
            raise VerificationError(f"input {value.name!r} with shape {list(shape)} would need "
                                    f"{nbytes / 2**20:.0f} MiB", where=value.name,
                                    hint="bind symbolic dims to smaller sizes (--bind)")
        inputs[value.name] = _sample(value, shape, rng)
    return inputs


@dataclass
class GeneratedInputs:
    """Inputs made for a check, the sizes they were made at, why, and what was tried first."""

    inputs: dict[str, np.ndarray] = record_field(omit=True)
    plan: SizePlan = record_field(omit=True)
    outputs: dict[str, np.ndarray] = record_field(omit=True)  # the model's, on these inputs
    # sizes that did not run
    attempts: list[Attempt] = record_field(key="tried", default_factory=list)

    json_derived = (("sizes", "plan.sizes"), ("found", "plan.reasons"),
                    ("bound", "plan.bindings"), ("origin", "plan.origin"))
    json_order = ("sizes", "found", "bound", "origin")

    def describe(self) -> str:
        """`generated inputs src float32[5, 2, 64] at seq=5 (...), batch=2`."""
        text = f"generated inputs {describe_inputs(self.inputs)}"
        if self.plan.sizes:
            text += f" at {self.plan.describe()}"
        if self.attempts:
            text += (f"; found by trying {self.plan.origin} after {len(self.attempts)} "
                     f"other size(s) did not run")
        return text


def fit_inputs(graph: Graph, bindings: dict[str, int] | None = None,
               seed: int = 0) -> GeneratedInputs:
    """Inputs ``graph`` runs on, and its outputs on them.

    The sizes come from the model's structure (``input_sizes``); when onnxruntime refuses
    them, other sizes the model suggests are tried.  Refuses with every size tried when none
    runs."""
    facts = collect_facts(graph)
    plan = solve(facts, bindings)
    inputs = make_inputs(graph, seed=seed, plan=plan)
    try:
        return GeneratedInputs(inputs, plan, run(graph, inputs))
    except RunFailedError as err:
        if not plan.sizes:
            raise   # no free dim: no other size to try
        first = Attempt(dict(plan.sizes), plan.origin, err.cause)
    candidates = candidate_plans(facts, plan, bindings)
    found, attempts = first_that_runs(graph, candidates,
                                      lambda p: make_inputs(graph, seed=seed, plan=p))
    attempts.insert(0, first)
    if found is None:
        raise _no_sizes_error(graph, plan, attempts, bindings)
    inputs = make_inputs(graph, seed=seed, plan=found)
    return GeneratedInputs(inputs, found, run(graph, inputs), attempts)


def _no_sizes_error(graph: Graph, plan: SizePlan, attempts: list[Attempt],
                    bindings: dict[str, int] | None) -> RunFailedError:
    shown = "; ".join(a.describe() for a in attempts[:3])
    more = f" (and {len(attempts) - 3} more)" if len(attempts) > 3 else ""
    conflicts = f"; the model's structure says: {'; '.join(plan.conflicts[:2])}" \
        if plan.conflicts else ""
    named = [s for d in plan.dims if d.named for s in sorted(d.size.symbols())]
    example = ",".join(f"{s}=..." for s in dict.fromkeys(named))
    bound = f" with {', '.join(f'{k}={v}' for k, v in bindings.items())} bound" \
        if bindings else ""
    return RunFailedError(
        f"found no input sizes at which onnxruntime runs graph {graph.name!r}{bound}: tried "
        f"{shown}{more}{conflicts}", where=graph.name,
        hint=(f"pass the sizes the model was exported at with --bind {example}" if named
              else "its dims have no names to bind") + ", or give real inputs in an .npz "
                                                     "file (--inputs)")


def _sample(value: Value, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    dtype = to_numpy(value.elem_type)
    name = value.name.lower()
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype == object:
        return rng.choice(np.array(string_vocabulary(value), dtype=object), size=shape)
    if dtype.kind not in "iu":
        raise VerificationError(f"cannot generate data of type {dtype} for input "
                                f"{value.name!r}", where=value.name,
                                hint="give the inputs in an .npz file")
    if "mask" in name:
        mask = np.ones(shape, dtype=dtype)
        if len(shape) >= 2 and shape[0] > 1 and shape[-1] > 1:
            mask[1:, -1] = 0  # later sequences padded by one position, as in a real batch
        return mask
    if "position" in name and shape:
        return np.broadcast_to(np.arange(shape[-1], dtype=dtype), shape).copy()
    high = index_bound(value)
    return rng.integers(0, high if high else 4, size=shape).astype(dtype)


def string_vocabulary(value: Value) -> list[str]:
    """Strings a string input is compared with (constants, label keys), so lookups can hit."""
    words: set[str] = set()
    for node, _ in value.uses:
        for other in node.inputs:
            constant = other.constant_value() if other is not None else None
            if constant is not None and constant.dtype == object:
                words.update(_text(w) for w in constant.reshape(-1)[:64])
        for attr in node.attrs.values():
            if isinstance(attr, tuple) and attr and isinstance(attr[0], (str, bytes)):
                words.update(_text(w) for w in attr[:64])
    return sorted(words) + ["<other>"]


def _text(word: str | bytes) -> str:
    return word.decode("utf-8", "replace") if isinstance(word, bytes) else word


def index_bound(value: Value, depth: int = 4) -> int | None:
    """Exclusive upper bound for an integer input used as indices (e.g. embedding rows)."""
    bounds = []
    for node, index in value.uses:
        bound = _consumer_bound(node, index)
        if bound is None and node.op_type in _INDEX_PASSTHROUGH and index == 0 and depth:
            outs = [o for o in node.outputs if o is not None]
            bound = index_bound(outs[0], depth - 1) if outs else None
        if bound is not None:
            bounds.append(bound)
    return min(bounds) if bounds else None


def _consumer_bound(node: Node, index: int) -> int | None:
    spec = _INDEX_CONSUMERS.get(node.op_type)
    if spec is None or index != spec[0]:
        return None
    if node.op_type == "OneHot":
        depth = node.input(1).constant_value() if node.input(1) is not None else None
        return int(np.asarray(depth).reshape(-1)[0]) if depth is not None else None
    data = node.inputs[0]
    if data is None or data.shape is None:
        return None
    axis = node.attrs.get("axis", 0) if spec[1] else 0
    dim = data.shape[axis] if -len(data.shape) <= axis < len(data.shape) else None
    return dim if isinstance(dim, int) and dim > 0 else None
