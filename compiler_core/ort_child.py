"""The child process of ``runtime_check.run_isolated``: load one model, run it, write the answer.

Usage: ``python -m compiler_core.ort_child FOLDER LEVEL THREADS``.  FOLDER holds model.onnx
and inputs.pkl (a list of {input name: array} batches); the answer goes to answer.pkl as
(stage, error, outputs).  If onnxruntime kills this process, no answer is written and the
parent reports the signal.  Only onnxruntime and numpy are imported here, so a child starts
fast.
"""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path


def main(folder: str, level: str, threads: str) -> None:
    import onnxruntime as ort

    where = Path(folder)
    with open(where / "inputs.pkl", "rb") as handle:
        batches = pickle.load(handle)
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.intra_op_num_threads = int(threads)
    options.log_severity_level = 3  # errors only: their last line explains a crash
    answer: tuple = ("ran", "", [])
    try:
        session = ort.InferenceSession(str(where / "model.onnx"), options,
                                       providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
        answer = ("load", ort_message(err), [])
    else:
        names = [o.name for o in session.get_outputs()]
        outputs = []
        for batch in batches:
            feed = {i.name: batch[i.name] for i in session.get_inputs() if i.name in batch}
            try:
                outputs.append(dict(zip(names, session.run(names, feed))))
            except Exception as err:  # noqa: BLE001
                answer = ("run", ort_message(err), [])
                break
        else:
            answer = ("ran", "", outputs)
    with open(where / "answer.pkl", "wb") as handle:
        pickle.dump(answer, handle, protocol=pickle.HIGHEST_PROTOCOL)


def ort_message(err: Exception) -> str:
    """onnxruntime's error on one line, without its source locations."""
    text = " ".join(str(err).split())
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = re.sub(r"\S*onnxruntime_src\S*:\d+ (\S+\(.*?\) )?", "", text)
    return text[:500]


if __name__ == "__main__":
    main(*sys.argv[1:4])
