"""Round-trip conformance against onnx's backend node tests (used by test_conformance.py).

Each case: run the original model with onnxruntime and keep the cases it passes; import the
model into GraphLab's IR, export it again, check it with onnx.checker, run it, and compare with
the reference outputs using the case's own tolerances.
"""

from __future__ import annotations

import glob
import os
import warnings
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from compiler_core.ir import load_model, to_model_proto
from written_back import first_snapshot_written_wrong


@dataclass
class Case:
    name: str
    model: onnx.ModelProto
    inputs: list
    outputs: list
    rtol: float
    atol: float


def collect_cases() -> list[Case]:
    """The installed onnx package's node tests: the data directory if shipped, else the cases."""
    data_dir = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    paths = sorted(glob.glob(os.path.join(data_dir, "*", "model.onnx")))
    if paths:
        return [_case_from_dir(p) for p in paths]
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    return [Case(c.name, c.model, list(c.data_sets[0][0]), list(c.data_sets[0][1]),
                 c.rtol, c.atol) for c in cases if c.data_sets]


def _case_from_dir(model_path: str) -> Case:
    folder = os.path.dirname(model_path)
    model = onnx.load(model_path)
    data = os.path.join(folder, "test_data_set_0")

    def read(kind: str) -> list:
        items = []
        for path in sorted(glob.glob(os.path.join(data, f"{kind}_*.pb")),
                           key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0])):
            tensor = onnx.TensorProto()
            with open(path, "rb") as handle:
                tensor.ParseFromString(handle.read())
            items.append(numpy_helper.to_array(tensor))
        return items

    return Case(os.path.basename(folder), model, read("input"), read("output"), 1e-3, 1e-7)


def run_model(model_bytes: bytes, model: onnx.ModelProto, inputs: list) -> list:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in model.graph.input]
    feed = dict(zip(names, inputs))
    return session.run([o.name for o in model.graph.output], feed)


def outputs_match(expected: list, got: list, rtol: float, atol: float) -> bool:
    if len(expected) != len(got):
        return False
    for e, g in zip(expected, got):
        if isinstance(e, list) or isinstance(g, list):
            if not isinstance(e, list) or not isinstance(g, list) or len(e) != len(g):
                return False
            if not outputs_match(e, g, rtol, atol):
                return False
            continue
        if e is None or g is None:
            if e is not g:
                return False
            continue
        e, g = np.asarray(e), np.asarray(g)
        if e.shape != g.shape:
            return False
        if e.dtype.kind in "fc":
            if not np.allclose(e.astype(np.float64), g.astype(np.float64), rtol=rtol, atol=atol,
                               equal_nan=True):
                return False
        elif e.dtype.kind in "OSU":
            if not all(str(a) == str(b) for a, b in zip(e.reshape(-1), g.reshape(-1))):
                return False
        elif not np.array_equal(e, g):
            return False
    return True


def original_passes(case: Case) -> bool:
    try:
        got = run_model(case.model.SerializeToString(), case.model, case.inputs)
    except Exception:  # noqa: BLE001 - any onnxruntime failure excludes the case
        return False
    return outputs_match(case.outputs, got, case.rtol, case.atol)


def round_trip(case: Case) -> str | None:
    """None if the exported model reproduces the reference outputs, else what went wrong."""
    try:
        graph = load_model(case.model.SerializeToString())
        graph.check()
        exported = to_model_proto(graph)
        onnx.checker.check_model(exported)
        got = run_model(exported.SerializeToString(), exported, case.inputs)
    except Exception as err:  # noqa: BLE001 - reported per case
        return f"{type(err).__name__}: {str(err).strip().splitlines()[0][:300] if str(err).strip() else ''}"
    if not outputs_match(case.outputs, got, case.rtol, case.atol):
        return "outputs differ from the reference"
    return None


def optimized(case: Case, pipeline: str) -> str | None:
    """None if every pass's output writes and reads back whole and the model after
    ``pipeline`` reproduces the reference outputs when onnxruntime runs it as the verifier
    does (its own optimizations off), else what went wrong."""
    from compiler_core.passes import PassManager
    from compiler_core.verify import run

    try:
        graph = load_model(case.model.SerializeToString())
        result = PassManager(pipeline, check=True).run(graph)
        final = result.final
        problem = first_snapshot_written_wrong(result.snapshots)
        if problem:
            return problem
        outputs = run(final, {v.name: a for v, a in zip(graph.inputs, case.inputs)})
    except Exception as err:  # noqa: BLE001 - reported per case
        return f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"
    got = [outputs[v.name] for v in graph.outputs]
    if not outputs_match(case.outputs, got, max(case.rtol, 1e-4), max(case.atol, 1e-6)):
        return "outputs differ from the reference"
    return None
