"""onnxruntime's profile (a Chrome trace) read into kernel times per run.

A ``model_run`` event spans one ``InferenceSession.run``; each ``<node name>_kernel_time``
event inside it is one kernel of the node onnxruntime ran (its node names are those of the
graph it optimized, not the model it was given: `node_map` maps them back).  Its arguments
say what the kernel read and wrote: ``activation_size`` (run-time inputs), ``parameter_size``
(weights) and ``output_size``, in bytes — the traffic as onnxruntime moved it.
"""

from __future__ import annotations

from dataclasses import dataclass

KERNEL_SUFFIX = "_kernel_time"


@dataclass(frozen=True)
class Kernel:
    """One node onnxruntime ran: its name in onnxruntime's graph, its op, its time in
    microseconds in each timed run, and the bytes it read and wrote per run."""

    name: str
    op_type: str
    micros: tuple[float, ...]
    bytes: int = 0


def kernels_per_run(events: list[dict], warmup: int) -> tuple[list[Kernel], list[float]]:
    """The kernels of the runs after the first ``warmup`` ones (in order of first appearance)
    and each of those runs' own duration in microseconds as the profiler saw it."""
    runs = sorted((e for e in events if e.get("cat") == "Session"
                   and e.get("name") == "model_run"), key=lambda e: e["ts"])[warmup:]
    times: dict[str, list[float]] = {}
    ops: dict[str, str] = {}
    moved: dict[str, int] = {}
    for index, run in enumerate(runs):
        start, end = run["ts"], run["ts"] + run["dur"]
        for event in events:
            if event.get("cat") != "Node" or not start <= event["ts"] <= end:
                continue
            name = event["name"][:-len(KERNEL_SUFFIX)]
            args = event.get("args", {})
            ops.setdefault(name, args.get("op_name", "?"))
            if index == 0:
                moved[name] = moved.get(name, 0) + sum(
                    int(args.get(key, 0)) for key in ("activation_size", "parameter_size",
                                                      "output_size"))
            per_run = times.setdefault(name, [0.0] * len(runs))
            per_run[index] += float(event["dur"])   # a node run twice in a run adds up
    kernels = [Kernel(name, ops[name], tuple(micros), moved.get(name, 0))
               for name, micros in times.items()]
    return kernels, [float(run["dur"]) for run in runs]
