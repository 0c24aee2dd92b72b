"""The child process of ``runtime_check``: load models one after another, run each, write answers.

Usage: ``python -m compiler_core.ort_child FOLDER LEVEL THREADS START COUNT [save]``.  FOLDER
holds, for each job number i, ``i.onnx`` (or ``i.path``: the path of the model's file, for a
model with external data) and ``i.inputs.pkl`` (a list of {input name: array} batches); with
``save``, the model onnxruntime made of it at LEVEL is written to ``i.optimized.onnx``; a job
with an ``i.level`` file runs at the level it names instead of LEVEL (a reducer checks one
candidate at two levels in one child); job
i's answer goes to ``i.answer.pkl`` as (stage, error, outputs) as soon as it is known, so when
onnxruntime kills this process the parent knows which model did it and which ones are done.
Only onnxruntime and numpy are imported here, so a child starts fast; one child serves many
models, so onnxruntime is imported once for all of them.
"""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path


def main(folder: str, level: str, threads: str, start: str, count: str, save: str = "") -> None:
    import onnxruntime as ort

    where = Path(folder)
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.intra_op_num_threads = int(threads)
    options.log_severity_level = 3  # errors only: their last line explains a crash
    for job in range(int(start), int(count)):
        with open(where / f"{job}.inputs.pkl", "rb") as handle:
            batches = pickle.load(handle)
        own_level = where / f"{job}.level"
        options.graph_optimization_level = getattr(
            ort.GraphOptimizationLevel, own_level.read_text() if own_level.exists() else level)
        if save:
            options.optimized_model_filepath = str(where / f"{job}.optimized.onnx")
        pointer = where / f"{job}.path"
        model = pointer.read_text() if pointer.exists() else str(where / f"{job}.onnx")
        answer = run_one(ort, model, options, batches)
        partial = where / f"{job}.answer.part"
        with open(partial, "wb") as handle:
            pickle.dump(answer, handle, protocol=pickle.HIGHEST_PROTOCOL)
        partial.rename(where / f"{job}.answer.pkl")  # whole answers only: the parent may look now


def run_one(ort, model: str | bytes, options, batches: list[dict]) -> tuple:
    """(stage, error, outputs) for one model (a path or serialized bytes): "load", "run" or
    "ran"."""
    try:
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
        return ("load", ort_message(err), [])
    names = [o.name for o in session.get_outputs()]
    outputs = []
    for batch in batches:
        feed = {i.name: batch[i.name] for i in session.get_inputs() if i.name in batch}
        try:
            outputs.append(dict(zip(names, session.run(names, feed))))
        except Exception as err:  # noqa: BLE001
            return ("run", ort_message(err), [])
    return ("ran", "", outputs)


def ort_message(err: Exception) -> str:
    """onnxruntime's error on one line, without its source locations."""
    text = " ".join(str(err).split())
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = re.sub(r"\S*onnxruntime_src\S*:\d+ (\S+\(.*?\) )?", "", text)
    return text[:500]


if __name__ == "__main__":
    main(*sys.argv[1:7])
