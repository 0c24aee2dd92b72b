"""Workspaces built once per content and shared by every server process, with the heavy work
in builder processes so no request ever waits for an import or a pipeline.

Two things live on disk in the app's cache dir, so any gunicorn worker can answer any request:
- the store: finished workspaces (pickled), keyed by content;
- the board: one status per build in flight — who builds it, how far it got ("pass 5 of 24:
  fold_constants"), a heartbeat — or why it failed.
A workspace's weights are not in the store: they stay in the model's files, and the large
tensors a build made are spilled to the cache dir's `tensors` folder; the pickle names them.

`get_or_start` answers at once: the workspace if it is built (this process's memory, else the
store), or the build's status after starting it unless someone already is.  A whole room
opening the same sample therefore builds it once.  Builders are fresh processes forked from a
clean single-threaded server process (multiprocessing's "forkserver"), never from a threaded web
server; a builder that dies is noticed by the process that started it (exit code) or, from any
other process, by its heartbeat going stale, and the next request builds again.  A builder
first loads the plugins this server process loaded (`serve --plugins`, entry points), so a
pipeline naming a plugin's pass builds there too.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from functools import lru_cache
from dataclasses import asdict, dataclass
from typing import Callable, Iterator

import diskcache

from compiler_core.errors import GraphLabError
from compiler_core.ir.spill import spilling_into
from compiler_core.plugins import load_sources, loaded_sources

from .cache_files import TENSORS, cache_folder, prune
from .messages import user_message

Progress = Callable[[int, int, str], None]

MEMORY_SLOTS = 8            # workspaces kept in each process's memory
STORE_BYTES = 4 << 30       # finished workspaces kept on disk (oldest go first)
HEARTBEAT_SECONDS = 1.0     # a builder says it is alive this often
STALE_SECONDS = 30.0        # a build silent for this long is presumed dead
OUTCOME_SECONDS = 60.0      # a finished build's outcome (done, or why it failed) stays this long
MAX_RUNNING = max(1, os.cpu_count() or 1)   # builds at once across all processes
GRACE_SECONDS = 0.4         # a build that finishes this fast is answered in the same request


@dataclass(frozen=True)
class BuildJob:
    """What to build: ``build(on_progress)`` must be picklable (it runs in a builder)."""

    key: str
    label: str
    build: Callable[[Progress | None], object]


@dataclass(frozen=True)
class BuildStatus:
    key: str
    label: str
    state: str              # 'queued', 'running', 'done', 'failed' or 'waiting' (no builder free)
    stage: str = ""
    step: int = 0
    total: int = 0
    message: str = ""
    updated: float = 0.0    # time of the last heartbeat or change

    def text(self) -> str:
        """One line for the page."""
        if self.state == "waiting":
            return f"{self.label}: waiting for a free builder ({self.message})"
        if self.state == "queued":
            return f"{self.label}: starting the build"
        if self.state == "failed":
            return f"{self.label}: {self.message}"
        return f"Building {self.label}: {self.stage}"

    @property
    def fresh(self) -> bool:
        """A build in flight whose builder was heard from lately."""
        return time.time() - self.updated < STALE_SECONDS

    @property
    def recent(self) -> bool:
        """An outcome young enough to be reported rather than retried."""
        return time.time() - self.updated < OUTCOME_SECONDS


class Builds:
    """The store, the board and the builders of one cache dir (module docstring)."""

    def __init__(self, directory: str, ttl_seconds: int):
        self.directory = directory
        self.ttl = ttl_seconds
        self.store = diskcache.Cache(os.path.join(directory, "workspaces"),
                                     size_limit=STORE_BYTES)
        self.board = diskcache.Cache(os.path.join(directory, "builds"))
        self.tensors = cache_folder(directory, TENSORS)
        prune(self.tensors, ttl_seconds)

    def get(self, job: BuildJob, on_progress: Progress | None = None):
        """The workspace, built in this process if nobody has built it (blocking)."""
        found = self.ready(job.key)
        if found is None:
            found = self.build(job, on_progress)
            self._keep(job.key, found)
        return found

    def build(self, job: BuildJob, on_progress: Progress | None = None):
        """Run the job; large tensors it makes go to the cache dir's `tensors` folder, where
        every process that unpickles the workspace finds them."""
        with spilling_into(self.tensors):
            return job.build(on_progress)

    def get_or_start(self, job: BuildJob, grace: float = GRACE_SECONDS):
        """The workspace if it is built, else the status of its build (started if need be).
        A failed build raises its error."""
        found = self.ready(job.key)
        if found is not None:
            return found
        status, claimed = self._claim(job)
        if claimed:
            _start_builder(self, job)
        deadline = time.monotonic() + grace
        while status.state in ("queued", "running", "done") and time.monotonic() < deadline:
            found = self.ready(job.key)
            if found is not None:
                return found
            time.sleep(0.02)
            status = self.status(job.key) or status
        if status.state == "failed":
            raise GraphLabError(status.text())
        return status

    def ready(self, key: str):
        """The finished workspace from memory or the store, or None."""
        found = _memory_get(key)
        if found is None:
            if key not in self.store:
                return None
            try:
                with _gc_paused():   # unpickling many small objects: the collector only slows it
                    found = self.store.get(key)
            except GraphLabError:    # a file it maps changed since (StoredTensorError)
                found = None
            if found is None:        # diskcache also says None when a file it maps is gone
                self.store.delete(key)   # so it is built again
            else:
                _memory_put(key, found)
        return found

    def status(self, key: str) -> BuildStatus | None:
        """The build's status as every process sees it (None: no build is known)."""
        record = self.board.get(key)
        return None if record is None else BuildStatus(**record)

    def _claim(self, job: BuildJob) -> tuple[BuildStatus, bool]:
        """(status, True) when this call registered itself as the job's builder; (the standing
        status, False) when a live build, a fresh outcome or busy builders stand in the way."""
        with self.board.transact():
            current = self.status(job.key)
            if current is not None and (
                    current.state in ("queued", "running") and current.fresh
                    or current.state == "failed" and current.recent
                    or current.state == "done" and current.recent and job.key in self.store):
                return current, False
            busy = self._running_count()
            if busy >= MAX_RUNNING:
                return BuildStatus(job.key, job.label, "waiting",
                                   message=f"{busy} build{'s' if busy != 1 else ''} running"), False
            return self.publish(BuildStatus(job.key, job.label, "queued")), True

    def _running_count(self) -> int:
        running = 0
        for key in list(self.board):
            record = self.board.get(key)
            if record and record["state"] in ("queued", "running") \
                    and time.time() - record["updated"] < STALE_SECONDS:
                running += 1
        return running

    def publish(self, status: BuildStatus, **changes) -> BuildStatus:
        """Write the status with ``changes`` and a fresh heartbeat; outcomes expire soon."""
        status = BuildStatus(**{**asdict(status), **changes, "updated": time.time()})
        finished = status.state in ("done", "failed")
        self.board.set(status.key, asdict(status),
                       expire=OUTCOME_SECONDS if finished else self.ttl)
        return status

    def _keep(self, key: str, workspace) -> None:
        _memory_put(key, workspace)
        self.store.set(key, workspace, expire=self.ttl)


# ---- this process's memory -------------------------------------------------------------------

_memory: OrderedDict[str, object] = OrderedDict()
_memory_lock = threading.Lock()


def _memory_get(key: str):
    with _memory_lock:
        if key in _memory:
            _memory.move_to_end(key)
            return _memory[key]
    return None


def _memory_put(key: str, workspace) -> None:
    with _memory_lock:
        _memory[key] = workspace
        while len(_memory) > MEMORY_SLOTS:
            _memory.popitem(last=False)
    _settle_collector()   # not under the lock: the others may read meanwhile


def _settle_collector() -> None:
    """The workspaces held here are millions of long-lived objects (2.5 million for a
    10,000-node pipeline): a full collection walks them all, 1–2 s, and one falls due every
    so many steps through the passes, freezing that step.  Each time the set of workspaces
    changes, one collection frees what an evicted workspace left in cycles, and everything
    left is moved out of the collector's sight (`gc.freeze`)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


@contextmanager
def _gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ---- builder processes -----------------------------------------------------------------------

@lru_cache(maxsize=1)
def _context():
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload([__name__, "compiler_core.passes"])
    return context


def _start_builder(builds: Builds, job: BuildJob) -> None:
    """Start and watch the builder from a thread: the first start also starts the fork server,
    which takes a moment a request should not wait for."""
    threading.Thread(target=_run_builder, args=(builds, job), daemon=True,
                     name=f"graphlab-watch-{job.key}").start()


def _run_builder(builds: Builds, job: BuildJob) -> None:
    """Run the builder; if it dies without saying so (killed, out of memory), say it."""
    process = _context().Process(target=_build_in_child,
                                 args=(builds.directory, builds.ttl, job, loaded_sources()),
                                 name=f"graphlab-build-{job.key}")
    try:
        process.start()
    except Exception as err:  # noqa: BLE001 - e.g. no memory or processes left
        builds.publish(BuildStatus(job.key, job.label, "failed"),
                       message=f"cannot start a builder: {err}")
        return
    process.join()
    status = builds.status(job.key)
    if process.exitcode != 0 and status is not None and status.state in ("queued", "running"):
        code = process.exitcode
        how = f"was killed (signal {-code}; out of memory?)" if code < 0 else \
            f"stopped unexpectedly (exit code {code})"
        builds.publish(status, state="failed", message=f"the build {how}")
    process.close()


def _build_in_child(directory: str, ttl: int, job: BuildJob, plugins: list[str]) -> None:
    """A builder process: the server's plugins, heartbeat, progress and the result (or the
    failure) on disk."""
    builds = Builds(directory, ttl)
    status = BuildStatus(job.key, job.label, "running", stage="importing the model")
    lock = threading.Lock()
    done = threading.Event()

    def publish(**changes) -> None:
        nonlocal status
        with lock:
            status = builds.publish(status, **changes)

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            publish()

    def progress(index: int, total: int, name: str) -> None:
        publish(stage=f"pass {index + 1} of {total}: {name}", step=index + 1, total=total)

    publish()
    threading.Thread(target=heartbeat, daemon=True).start()
    try:
        load_sources(plugins)
        workspace = builds.build(job, progress)
        publish(stage="saving")
        builds.store.set(job.key, workspace, expire=ttl)
        done.set()
        publish(state="done", stage="done")
    except Exception as err:  # noqa: BLE001 - every failure becomes the build's message
        done.set()
        publish(state="failed", message=user_message(err))
