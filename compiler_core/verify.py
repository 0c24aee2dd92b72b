"""Differential numerical check: run two graphs on the same inputs with onnxruntime and compare.

This is how every pass proves it kept the model's meaning.  Inputs come from the user (an .npz
file) or are generated from the input signature so that they are *valid* for the model: token
ids inside the embedding table, 0/1 attention masks, non-negative indices, symbolic dims bound to
small sizes.  Errors are measured relative to the output's scale (its largest magnitude), which
is what "the model computes the same thing" means for float outputs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .errors import VerificationError
from .ir import Graph, Node, Value, model_for_runtime
from .ir.dtypes import dtype_name, to_numpy
from .ort_child import ort_message

DEFAULT_RTOL = 1e-4        # error allowed, relative to the output's scale (fp32 passes)
DEFAULT_ATOL = 1e-6        # floor for outputs whose scale is ~0
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

    @property
    def max_abs_err(self) -> float:
        return max((o.max_abs_err for o in self.outputs), default=0.0)

    @property
    def max_rel_err(self) -> float:
        return max((o.max_rel_err for o in self.outputs), default=0.0)

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outputs)

    def to_dict(self) -> dict:
        return {"max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err, "ok": self.ok,
                "rtol": self.rtol, "outputs": [asdict(o) for o in self.outputs]}


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
            raise VerificationError(f"onnxruntime cannot load graph {graph.name!r}: "
                                    f"{_first_line(err)}", where=graph.name,
                                    hint="an op may be unsupported by onnxruntime") from None
    names = [o.name for o in session.get_outputs()]
    outputs = []
    for inputs in batches:
        feed = {i.name: inputs[i.name] for i in session.get_inputs() if i.name in inputs}
        try:
            results = session.run(names, feed)
        except Exception as err:  # noqa: BLE001
            raise VerificationError(
                f"onnxruntime failed to run graph {graph.name!r} on inputs "
                f"{describe_inputs(feed)}: {ort_message(err)}", where=graph.name,
                hint="a model exported at fixed sizes only runs at those: bind its dims to "
                     "them (e.g. batch=1,seq=128) or give real inputs in an .npz file") from None
        outputs.append(dict(zip(names, results)))
    return outputs


def describe_inputs(inputs: dict) -> str:
    """`ids int64[2, 8], mask int64[2, 8]`: what a run was fed, for messages."""
    return ", ".join(f"{name} {array.dtype}{list(array.shape)}" for name, array in inputs.items())


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0][:400] if str(err).strip() else type(err).__name__


# ---------------------------------------------------------------------------------- comparing
def compare_outputs(reference: dict, candidate: dict, rtol: float = DEFAULT_RTOL,
                    atol: float = DEFAULT_ATOL) -> VerifyReport:
    """Per-output max abs / max rel error; ``ok`` when abs error <= rtol * scale + atol."""
    report = VerifyReport(rtol=rtol)
    for name, ref in reference.items():
        if name not in candidate:
            report.outputs.append(OutputCheck(name, float("inf"), float("inf"), 0.0, False,
                                              "output missing from the candidate"))
            continue
        report.outputs.append(_compare_one(name, ref, candidate[name], rtol, atol))
    return report


def _compare_one(name: str, ref, got, rtol: float, atol: float) -> OutputCheck:
    if not isinstance(ref, np.ndarray) or not isinstance(got, np.ndarray):
        same = _nested_equal(ref, got)
        return OutputCheck(name, 0.0 if same else float("inf"), 0.0 if same else float("inf"),
                           0.0, same, "" if same else "non-tensor outputs differ")
    if ref.shape != got.shape:
        return OutputCheck(name, float("inf"), float("inf"), 0.0, False,
                           f"shape {list(got.shape)} instead of {list(ref.shape)}")
    if ref.size == 0:
        return OutputCheck(name, 0.0, 0.0, 0.0, True)
    if ref.dtype.kind not in "fc":
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
    return OutputCheck(name, max_abs, float(rel.max()), scale, max_abs <= rtol * scale + atol)


def _nested_equal(a, b) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_nested_equal(x, y) for x, y in zip(a, b))
    return a == b if not isinstance(a, np.ndarray) else False


def verify(reference: Graph, candidate: Graph, inputs: dict | None = None,
           bindings: dict[str, int] | None = None, rtol: float = DEFAULT_RTOL) -> VerifyReport:
    """Run both graphs on the same inputs and compare every output of the reference."""
    return Verifier(reference, inputs, bindings, rtol).check(candidate)


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


class Verifier:
    """Checks many candidates against one reference, running the reference only once.

    Both sides run with inference semantics (see ``with_inference_semantics``).
    """

    def __init__(self, reference: Graph, inputs: dict | None = None,
                 bindings: dict[str, int] | None = None, rtol: float = DEFAULT_RTOL):
        self.inputs = inputs if inputs is not None else make_inputs(reference, bindings)
        self.rtol = rtol
        self.reference_outputs = run(with_inference_semantics(reference), self.inputs)

    def check(self, candidate: Graph, rtol: float | None = None) -> VerifyReport:
        """Compare ``candidate`` with the reference (``rtol`` overrides the verifier's own)."""
        outputs = run(with_inference_semantics(candidate), self.inputs)
        return compare_outputs(self.reference_outputs, outputs,
                               self.rtol if rtol is None else rtol)


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


def bind_dims(graph: Graph, bindings: dict[str, int] | None = None) -> dict[str, int]:
    """A size for every symbolic dim of the graph inputs: the user's, else a small default."""
    bound = dict(bindings or {})
    for value in graph.inputs:
        for axis, dim in enumerate(value.shape or ()):
            if isinstance(dim, str) and dim not in bound:
                bound[dim] = _default_size(dim, axis, len(value.shape))
    return bound


def _default_size(dim: str, axis: int, rank: int) -> int:
    lowered = dim.lower()
    if "batch" in lowered or axis == 0 and rank > 1:
        return 2
    if rank == 4 and axis >= 2:
        return 32  # spatial dims of an image: large enough for a few strided convs
    return 8


def make_inputs(graph: Graph, bindings: dict[str, int] | None = None,
                seed: int = 0) -> dict[str, np.ndarray]:
    """Valid random inputs for every graph input (deterministic for a given seed)."""
    rng = np.random.default_rng(seed)
    sizes = bind_dims(graph, bindings)
    inputs: dict[str, np.ndarray] = {}
    total = 0
    for value in graph.inputs:
        if value.type_proto is not None or value.elem_type is None:
            raise VerificationError(f"cannot generate data for input {value.name!r} "
                                    f"({value.describe_type()})", where=value.name,
                                    hint="give the inputs in an .npz file")
        shape = tuple(sizes[d] if isinstance(d, str) else (1 if d is None else d)
                      for d in (value.shape or ()))
        nbytes = int(np.prod(shape, dtype=np.int64)) * to_numpy(value.elem_type).itemsize
        total += nbytes
        if total > MAX_INPUT_BYTES:
            raise VerificationError(f"input {value.name!r} with shape {list(shape)} would need "
                                    f"{nbytes / 2**20:.0f} MiB", where=value.name,
                                    hint="bind symbolic dims to smaller sizes (--bind)")
        inputs[value.name] = _sample(value, shape, rng)
    return inputs


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
