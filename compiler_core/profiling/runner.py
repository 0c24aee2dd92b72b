"""Profile graphs in onnxruntime, in a child process, and join its kernels to our node ids.

Each graph is exported with its node ids in the node names (`node_map.tagged_name`) and run
by onnxruntime's own profiler (``SessionOptions.enable_profiling``) at each asked level —
ORT_ENABLE_ALL, what users get, and ORT_DISABLE_ALL, the graph as we wrote it — warm-up runs
first, then repeated runs whose medians and spread are kept.  The graphs run in turns, one
run of each per round (up to `GROUP_BYTES` of models loaded at once), so a machine that gets
busier halfway slows them all alike.  The child also saves the graph
onnxruntime optimized, which the profile's node names refer to; `node_map` traces them back.
Kernels that work for several of our nodes at once (onnxruntime fused them) make one group;
a kernel traced only through its neighbours shares its time evenly among the groups it
serves.  A crash or a refusal in onnxruntime is a GraphLabError naming the model and level.
"""

from __future__ import annotations

import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from ..errors import GraphLabError
from ..ir import Graph
from ..ir.model_file import model_for_runtime
from ..records import record_field
from ..runtime_check import LEVELS, check_level, child_environment, level_names
from .node_map import KernelOwner, map_nodes, tagged_name
from .trace import Kernel, kernels_per_run

DEFAULT_LEVELS = ("all", "disabled")
DEFAULT_WARMUP = 2
DEFAULT_REPEATS = 10
DEFAULT_TIMEOUT_SECONDS = 900
POLL_SECONDS = 0.01
GROUP_BYTES = 1 << 30   # models loaded at once in the child, and run in turns


@dataclass
class ProfiledOp:
    """Our nodes one group of onnxruntime's kernels worked for, and their time per run."""

    ids: tuple[int, ...]
    names: tuple[str, ...] = record_field(omit=True)             # written joined, as `node`
    op_types: tuple[str, ...] = record_field(omit=True)          # written joined, as `op_type`
    kernels: tuple[str, ...]          # "name (op)" of each onnxruntime node in the group
    micros: tuple[float, ...] = record_field(omit=True)          # per timed run
    how: str = record_field(key="traced_by")   # how its kernels were traced (node_map)
    # read and written by its kernels per run (onnxruntime)
    bytes: float = record_field(key="measured_bytes", default=0.0)

    json_derived = ("node", "op_type", "measured_ms", ("measured_min_ms", "best_ms"),
                    ("measured_max_ms", "worst_ms"), "fused_by_onnxruntime", "note")
    json_order = ("node", "ids", "op_type", "measured_ms", "measured_min_ms", "measured_max_ms",
                  "measured_bytes", "kernels", "traced_by", "fused_by_onnxruntime", "note")

    @property
    def node(self) -> str:
        """Its nodes' names, as one label."""
        return " + ".join(self.names)

    @property
    def op_type(self) -> str:
        """Its nodes' op types, as one label."""
        return "+".join(self.op_types)

    @property
    def fused_by_onnxruntime(self) -> bool:
        """Several of our nodes ran as kernels onnxruntime made of them together."""
        return len(self.ids) > 1

    @property
    def measured_ms(self) -> float:
        return statistics.median(self.micros) / 1000

    @property
    def best_ms(self) -> float:
        """The fastest run: the one a busy machine delayed least."""
        return min(self.micros) / 1000

    @property
    def worst_ms(self) -> float:
        return max(self.micros) / 1000

    @property
    def note(self) -> str | None:
        """What onnxruntime made of the group, when it fused several of our nodes."""
        if not self.fused_by_onnxruntime:
            return None
        return (f"onnxruntime ran these {len(self.ids)} nodes as {len(self.kernels)} "
                f"kernel(s) of its own fusion")


@dataclass
class LevelProfile:
    """One graph at one onnxruntime level: run times, and the time of each group of nodes."""

    level: str = record_field(omit=True)   # written as onnxruntime names it (level_name)
    # each timed run, as the caller's clock saw it
    wall_ms: list[float] = record_field(key="runs_ms")
    # each timed run, as onnxruntime's profiler saw it
    run_ms: list[float] = record_field(omit=True)
    ops: list[ProfiledOp] = field(default_factory=list)
    # kernels no node of ours explains
    untraced: list[str] = record_field(key="untraced_kernels", default_factory=list)

    json_derived = (("level", "level_name"), "total_ms", ("total_min_ms", "best_ms"),
                    ("total_max_ms", "worst_ms"), "profiled_run_ms", "kernel_ms",
                    ("measured_bytes", "bytes"))
    json_order = ("level", "total_ms", "total_min_ms", "total_max_ms", "runs_ms",
                  "profiled_run_ms", "kernel_ms", "measured_bytes", "ops", "untraced_kernels")

    @property
    def level_name(self) -> str:
        """The level as onnxruntime names it (ORT_ENABLE_ALL, ...)."""
        return LEVELS[self.level]

    @property
    def total_ms(self) -> float:
        return statistics.median(self.wall_ms)

    @property
    def best_ms(self) -> float:
        """The fastest timed run: the one a busy machine delayed least."""
        return min(self.wall_ms)

    @property
    def worst_ms(self) -> float:
        return max(self.wall_ms)

    @property
    def profiled_run_ms(self) -> float:
        return statistics.median(self.run_ms)

    @property
    def kernel_ms(self) -> float:
        """The kernels' own time (medians summed): the run without onnxruntime's gaps."""
        return sum(op.measured_ms for op in self.ops)

    @property
    def bytes(self) -> float:
        """Bytes the kernels read and wrote per run, as onnxruntime reports them."""
        return sum(op.bytes for op in self.ops)


def threads_shown(threads: int) -> int | str:
    """A thread count as records show it: 0 is onnxruntime's own default."""
    return threads or "onnxruntime default"


@dataclass
class ProfileSettings:
    """How the graphs are run: levels, warm-up and timed runs, threads, the inputs."""

    levels: tuple[str, ...] = record_field(convert=level_names, default=DEFAULT_LEVELS)
    warmup: int = DEFAULT_WARMUP
    repeats: int = DEFAULT_REPEATS
    # 0: onnxruntime's default (one per core)
    threads: int = record_field(convert=threads_shown, default=0)
    timeout: float = record_field(omit=True, default=DEFAULT_TIMEOUT_SECONDS)


def profile_graphs(graphs: list[Graph], inputs: dict[str, np.ndarray],
                   settings: ProfileSettings | None = None) -> list[dict[str, LevelProfile]]:
    """Each graph profiled at each level of ``settings`` on the same ``inputs``: one
    {level: LevelProfile} per graph, in order.  All of it runs in one child process."""
    settings = settings or ProfileSettings()
    for level in settings.levels:
        check_level(level)
    if settings.repeats < 1 or settings.warmup < 0:
        raise GraphLabError("profiling needs at least one timed run",
                            hint="give --repeats 1 or more and --warmup 0 or more")
    jobs = [(index, level) for index in range(len(graphs)) for level in settings.levels]
    with tempfile.TemporaryDirectory(prefix="graphlab-profile-") as scratch, ExitStack() as open_:
        folder = Path(scratch)
        files: dict[int, str] = {}
        for number, (index, level) in enumerate(jobs):
            if index not in files:
                files[index] = _model_file(graphs[index], folder, index, open_)
            spec = {"model": files[index], "inputs": inputs, "level": LEVELS[level],
                    "threads": settings.threads, "warmup": settings.warmup,
                    "repeats": settings.repeats}
            with open(folder / f"{number}.job.pkl", "wb") as handle:
                pickle.dump(spec, handle, protocol=pickle.HIGHEST_PROTOCOL)
        with open(folder / "groups.pkl", "wb") as handle:
            pickle.dump(_groups([files[index] for index, _ in jobs]), handle)
        answers = _run_child(folder, len(jobs), settings.timeout)
        profiles: list[dict[str, LevelProfile]] = [{} for _ in graphs]
        for number, ((index, level), answer) in enumerate(zip(jobs, answers)):
            graph = graphs[index]
            stage, error, events, wall = answer
            if stage != "ran":
                raise GraphLabError(f"onnxruntime could not {stage} the model at "
                                    f"{LEVELS[level]}: {error}", where=graph.name,
                                    hint="the model must load and run in onnxruntime")
            kernels, run_micros = kernels_per_run(events, settings.warmup)
            optimized = _optimized_graph(folder / f"{number}.optimized.onnx", kernels)
            profile = _join(graph, kernels, map_nodes(graph, optimized), level)
            profile.wall_ms = [w * 1000 for w in wall]
            profile.run_ms = [m / 1000 for m in run_micros]
            profiles[index][level] = profile
    return profiles


def _optimized_graph(path: Path, kernels: list[Kernel]) -> onnx.GraphProto:
    """The graph onnxruntime optimized, as it saved it; when it could not save it, its kernels
    by name alone (then only the names that carry an id are traced)."""
    if path.exists():
        return onnx.load(str(path), load_external_data=False).graph
    return onnx.GraphProto(node=[onnx.NodeProto(name=k.name, op_type=k.op_type)
                                 for k in kernels])


def _model_file(graph: Graph, folder: Path, number: int, open_: ExitStack) -> str:
    """The graph, its nodes named with their ids, as a file onnxruntime can load."""
    tagged = graph.copy()
    for node in tagged.nodes:
        node.name = tagged_name(node.id, node.name)
    model = open_.enter_context(model_for_runtime(tagged))
    if isinstance(model, Path):
        return str(model)
    path = folder / f"model{number}.onnx"
    path.write_bytes(model)
    return str(path)


def _groups(models: list[str]) -> list[list[int]]:
    """Consecutive jobs whose model files add up to at most GROUP_BYTES (one job at least)."""
    groups: list[list[int]] = []
    size = 0
    for number, model in enumerate(models):
        grows = Path(model).stat().st_size
        if not groups or size + grows > GROUP_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(number)
        size += grows
    return groups


def _run_child(folder: Path, count: int, timeout: float) -> list[tuple]:
    command = [sys.executable, "-m", "compiler_core.profiling.child", str(folder)]
    log = folder / "child.stderr"
    with open(log, "w") as stderr:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr,
                                 env=child_environment())
    answers: list[tuple] = []
    last = time.monotonic()
    while len(answers) < count:
        path = folder / f"{len(answers)}.answer.pkl"
        if path.exists():
            with open(path, "rb") as handle:
                answers.append(pickle.load(handle))
            last = time.monotonic()
            continue
        if child.poll() is not None and not path.exists():
            lines = log.read_text(errors="replace").strip().splitlines()
            raise GraphLabError(f"onnxruntime died while profiling (status {child.returncode})"
                                + (f": {lines[-1][:300]}" if lines else ""),
                                hint="the model crashes onnxruntime; try "
                                     "`graphlab compile --runtime-check final` to see where")
        if time.monotonic() - last > timeout:
            child.kill()
            child.wait()
            raise GraphLabError(f"profiling gave up after {timeout:g} s on one model",
                                hint="fewer --repeats, or smaller sizes with --bind")
        time.sleep(POLL_SECONDS)
    child.wait()
    return answers


def _join(graph: Graph, kernels: list[Kernel], owners: dict[str, KernelOwner],
          level: str) -> LevelProfile:
    """Group the kernels by the nodes they work for (module docstring)."""
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        while parent.setdefault(i, i) != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for kernel in kernels:
        owner = owners.get(kernel.name)
        if owner is not None and owner.how != "neighbours":
            first, *rest = sorted(owner.ids)
            for other in rest:
                parent[find(other)] = find(first)
            find(first)
    runs = len(kernels[0].micros) if kernels else 0
    groups: dict[int, dict] = {}
    untraced = []
    for kernel in kernels:
        owner = owners.get(kernel.name)
        if owner is None:
            untraced.append(f"{kernel.name} ({kernel.op_type})")
            continue
        roots = sorted({find(i) for i in owner.ids})
        for root in roots:
            group = groups.setdefault(root, {"micros": [0.0] * runs, "kernels": [],
                                             "how": set(), "bytes": 0.0})
            for run, micros in enumerate(kernel.micros):
                group["micros"][run] += micros / len(roots)
            group["bytes"] += kernel.bytes / len(roots)
            group["kernels"].append(f"{kernel.name} ({kernel.op_type})")
            group["how"].add(owner.how)
    members: dict[int, list[int]] = {}
    for i in list(parent):
        members.setdefault(find(i), []).append(i)
    by_id = {node.id: node for node in graph.nodes}
    ops = []
    for root, group in groups.items():
        ids = tuple(sorted(members.get(root, [root])))
        nodes = [by_id[i] for i in ids]
        ops.append(ProfiledOp(ids, tuple(n.name or f"#{n.id}" for n in nodes),
                              tuple(n.op_type for n in nodes), tuple(group["kernels"]),
                              tuple(group["micros"]), "+".join(sorted(group["how"])),
                              group["bytes"]))
    order = {node.id: index for index, node in enumerate(graph.nodes)}
    ops.sort(key=lambda op: order[op.ids[0]])
    return LevelProfile(level, [], [], ops, untraced)
