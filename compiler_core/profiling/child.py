"""The child process of `runner`: profile models in onnxruntime, write the traces back.

Usage: ``python -m compiler_core.profiling.child FOLDER``.  ``groups.pkl`` lists groups of
job numbers; job i is described by ``i.job.pkl`` ({"model": path, "inputs": {name: array},
"level": onnxruntime's level name, "threads", "warmup", "repeats"}).  The jobs of a group are
loaded together and run in turns (one run of each, then the next round), so a machine that
gets busier halfway slows them all alike and their times stay comparable.  Job i's answer,
``i.answer.pkl``, is (stage, error, events, wall seconds per timed run), and onnxruntime's
optimized model is saved as ``i.optimized.onnx`` (what the profiled node names refer to).
Only onnxruntime and numpy are imported here.

Every model loaded here runs on one thread pool of the asked size (onnxruntime's global
pool), as a model loaded alone would: with a pool for each model, the pools of the models
that just ran keep spinning while the next one runs, and on a 2-core machine those spinning
threads took the cores from it (a 512x512 matmul run in turns with five others had a median
rate of 2-9 GFLOP/s on pools of their own and 10-17 on one shared pool, at load 10-16).
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from pathlib import Path

from compiler_core.ort_child import ort_message


def main(folder: str) -> None:
    import onnxruntime as ort

    where = Path(folder)
    with open(where / "groups.pkl", "rb") as handle:
        groups = pickle.load(handle)
    first = next((job for group in groups for job in group), None)
    if first is not None:   # every job asks for the same threads
        with open(where / f"{first}.job.pkl", "rb") as handle:
            ort.set_global_thread_pool_sizes(pickle.load(handle)["threads"], 1)
    for group in groups:
        specs = {}
        for job in group:
            with open(where / f"{job}.job.pkl", "rb") as handle:
                specs[job] = pickle.load(handle)
        for job, answer in profile_group(ort, specs, where).items():
            partial = where / f"{job}.answer.part"
            with open(partial, "wb") as handle:
                pickle.dump(answer, handle, protocol=pickle.HIGHEST_PROTOCOL)
            partial.rename(where / f"{job}.answer.pkl")


def profile_group(ort, specs: dict[int, dict], where: Path) -> dict[int, tuple]:
    """(stage, error, events, wall seconds of each timed run) for each job of one group."""
    answers: dict[int, tuple] = {}
    sessions = {}
    for job, spec in specs.items():
        try:
            sessions[job] = ort.InferenceSession(spec["model"], _options(ort, spec,
                                                                         where / str(job)),
                                                 providers=["CPUExecutionProvider"])
        except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
            answers[job] = ("load", ort_message(err), [], [])
    wall: dict[int, list[float]] = {job: [] for job in sessions}
    rounds = max((specs[job]["warmup"] + specs[job]["repeats"] for job in sessions), default=0)
    for turn in range(rounds):
        for job, session in list(sessions.items()):
            spec = specs[job]
            if turn >= spec["warmup"] + spec["repeats"]:
                continue
            feed = {i.name: spec["inputs"][i.name] for i in session.get_inputs()
                    if i.name in spec["inputs"]}
            start = time.perf_counter()
            try:
                session.run(None, feed)
            except Exception as err:  # noqa: BLE001
                session.end_profiling()
                del sessions[job]
                answers[job] = ("run", ort_message(err), [], [])
                continue
            if turn >= spec["warmup"]:
                wall[job].append(time.perf_counter() - start)
    for job, session in sessions.items():
        with open(session.end_profiling()) as handle:
            events = [e for e in json.load(handle) if _kept(e)]
        answers[job] = ("ran", "", events, wall[job])
    return answers


def _options(ort, spec: dict, stem: Path):
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, spec["level"])
    options.use_per_session_threads = False   # the global pool (module docstring)
    options.log_severity_level = 3
    options.enable_profiling = True
    options.profile_file_prefix = str(stem) + ".profile"
    options.optimized_model_filepath = str(stem) + ".optimized.onnx"
    # its weights beside it: the parent reads only the structure
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", stem.name + ".weights")
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    return options


def _kept(event: dict) -> bool:
    """The runs and the kernels: what the parent reads of the trace."""
    if event.get("cat") == "Session":
        return event.get("name") == "model_run"
    return event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time")


if __name__ == "__main__":
    main(sys.argv[1])
