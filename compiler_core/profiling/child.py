"""The child process of `runner`: profile models in onnxruntime, write the traces back.

Usage: ``python -m compiler_core.profiling.child FOLDER COUNT``.  Job i is described by
``i.job.pkl`` ({"model": path, "inputs": {name: array}, "level": onnxruntime's level name,
"threads", "warmup", "repeats"}); its answer, ``i.answer.pkl``, is (stage, error, events,
wall seconds per timed run), and onnxruntime's optimized model is saved as ``i.optimized.onnx``
(what the profiled node names refer to).  Only onnxruntime and numpy are imported here.
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from pathlib import Path

from compiler_core.ort_child import ort_message


def main(folder: str, count: str) -> None:
    import onnxruntime as ort

    where = Path(folder)
    for job in range(int(count)):
        with open(where / f"{job}.job.pkl", "rb") as handle:
            spec = pickle.load(handle)
        answer = profile_one(ort, spec, where / f"{job}")
        partial = where / f"{job}.answer.part"
        with open(partial, "wb") as handle:
            pickle.dump(answer, handle, protocol=pickle.HIGHEST_PROTOCOL)
        partial.rename(where / f"{job}.answer.pkl")


def profile_one(ort, spec: dict, stem: Path) -> tuple:
    """(stage, error, events, wall seconds of each timed run) for one job."""
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, spec["level"])
    options.intra_op_num_threads = spec["threads"]
    options.log_severity_level = 3
    options.enable_profiling = True
    options.profile_file_prefix = str(stem) + ".profile"
    options.optimized_model_filepath = str(stem) + ".optimized.onnx"
    # its weights beside it: the parent reads only the structure
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", stem.name + ".weights")
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    try:
        session = ort.InferenceSession(spec["model"], options,
                                       providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
        return ("load", ort_message(err), [], [])
    feed = {i.name: spec["inputs"][i.name] for i in session.get_inputs()
            if i.name in spec["inputs"]}
    wall = []
    try:
        for run in range(spec["warmup"] + spec["repeats"]):
            start = time.perf_counter()
            session.run(None, feed)
            if run >= spec["warmup"]:
                wall.append(time.perf_counter() - start)
    except Exception as err:  # noqa: BLE001
        session.end_profiling()
        return ("run", ort_message(err), [], [])
    with open(session.end_profiling()) as handle:
        events = [e for e in json.load(handle) if _kept(e)]
    return ("ran", "", events, wall)


def _kept(event: dict) -> bool:
    """The runs and the kernels: what the parent reads of the trace."""
    if event.get("cat") == "Session":
        return event.get("name") == "model_run"
    return event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time")


if __name__ == "__main__":
    main(*sys.argv[1:3])
