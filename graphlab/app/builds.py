"""Workspaces built once per content and shared by every server process, with the heavy work
in builder processes so no request ever waits for an import or a pipeline.

Two things live in the shared storage (`shared_storage`: the app's cache dir on one machine,
Redis in a cluster), so any server process can answer any request:
- the store: finished workspaces (pickled), keyed by content;
- the board: one status per build in flight — who builds it, how far it got ("pass 5 of 24:
  fold_constants"), a heartbeat — or why it failed.
On one machine a workspace's weights are not in the store: they stay in the model's files, and
the large tensors a build made are spilled to the cache dir's `tensors` folder; the pickle names
them.  In a cluster the pickle carries them (`Builds.save`): other machines have not got those
files.

`get_or_start` answers at once: the workspace if it is built (this process's memory, else the
store), or the build's status after starting it unless someone already is.  A whole room
(or a whole course, across machines) opening the same sample therefore builds it once.

Who runs a build is the launcher's one job (handed to `Builds` by whoever makes it:
`build_launchers.launcher_for` picks one for a storage); everything else — the claim, the progress, the
heartbeat, the time and memory limits, the failure message — is the same code (`run_build`) for both:
- one machine (`build_launchers.LocalLauncher`): fresh builder processes forked from a clean
  single-threaded server process (multiprocessing's "forkserver"), never from a threaded web
  server, at most one per core;
- a cluster (`cluster.CeleryLauncher`, `serve --redis URL`): Celery tasks run by any number
  of `graphlab worker` processes; a worker killed mid-build hands the task back to the queue
  and another worker runs it.
A build whose builder fell silent (killed, out of memory, its machine gone) is noticed by its
heartbeat going stale, and the next request builds again.  A builder first loads the plugins
the server process loaded (`serve --plugins`, entry points), so a pipeline naming a plugin's
pass builds there too.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Callable, Iterator, Protocol

try:
    import resource
except ImportError:  # pragma: no cover - Windows: no per-process memory limit
    resource = None

from compiler_core.errors import GraphLabError
from compiler_core.ir.collection import collector_paused
from compiler_core.ir.lazy_tensors import self_contained_pickles
from compiler_core.ir.spill import spilling_into
from compiler_core.plugins import load_sources

from .cache_files import TENSORS, cache_folder, prune
from .held_workspaces import held, hold
from .messages import log, user_message
from .shared_storage import SharedStorage

Progress = Callable[[int, int, str], None]

STORE_BYTES = 4 << 30       # finished workspaces kept on disk (oldest go first)
HEARTBEAT_SECONDS = 1.0     # a builder says it is alive this often
STALE_SECONDS = 30.0        # a build silent for this long is presumed dead
OUTCOME_SECONDS = 60.0      # a finished build's outcome (done, or why it failed) stays this long
MAX_RUNNING = max(1, os.cpu_count() or 1)   # builds at once on one machine
GRACE_SECONDS = 0.4         # a build that finishes this fast is answered in the same request
BUILD_SECONDS = 300         # a build running longer is stopped (`serve --build-seconds`)


def _half_the_memory_mb() -> int:
    """Half of this machine's memory: one build can never take the whole machine, and a big
    model still builds on a big machine."""
    try:
        return max(1024, (os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2) >> 20)
    except (AttributeError, ValueError, OSError):   # no sysconf (Windows): a fixed budget
        return 4096


BUILD_MEMORY_MB = _half_the_memory_mb()   # a build taking more is stopped (`--build-memory-mb`)


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
    claim: str = ""         # the claim this build runs under (a later claim takes over)
    builder: str = ""       # "pid 1234 on host": who runs it now (operators, fault tests)
    attempt: int = 0        # how many builders started it (a retry after a lost worker: 2)
    retry: bool = False     # failed, but not by its own doing (builder lost, queue away)

    def text(self) -> str:
        """One line for the page."""
        if self.state == "waiting":
            return f"{self.label}: waiting for a free builder ({self.message})"
        if self.state == "queued":
            return f"{self.label}: {self.stage or 'starting the build'}"
        if self.state == "failed":
            return f"{self.label}: {self.message}"
        again = f" (attempt {self.attempt}: a builder was lost)" if self.attempt > 1 else ""
        return f"Building {self.label}: {self.stage}{again}"

    @property
    def age(self) -> float:
        return time.time() - self.updated

    @property
    def fresh(self) -> bool:
        """A build in flight whose builder was heard from lately."""
        return self.age < STALE_SECONDS

    @property
    def recent(self) -> bool:
        """An outcome young enough to be reported rather than retried."""
        return self.age < OUTCOME_SECONDS


class BuildFailed(GraphLabError):
    """A build's failure as its status tells it.  ``retry``: the build did not fail by its
    own doing (its builder was lost, the queue was unreachable), so trying again may work;
    a pass's error or a limit reached fails the same way every time."""

    def __init__(self, status: BuildStatus):
        super().__init__(status.text())
        self.key = status.key
        self.retry = status.retry


class BuildTimeout(GraphLabError):
    """A build ran past its time limit (a hostile or huge model cannot hold a builder)."""


class BuildOutOfMemory(GraphLabError):
    """A build asked for more memory than its limit (rather than the machine's OOM killer
    picking a victim, maybe a web server)."""


class Launcher(Protocol):
    """Who runs builds: starts one, says how many run here, and how long one may stay
    queued before it is taken for lost."""

    queue_seconds: float

    def busy(self, builds: "Builds") -> int: ...

    def start(self, builds: "Builds", job: BuildJob, claim: str) -> None: ...


class Builds:
    """The store, the board and the launcher of one shared storage (module docstring)."""

    def __init__(self, storage: SharedStorage, ttl_seconds: int,
                 time_limit: float = BUILD_SECONDS, memory_mb: int = BUILD_MEMORY_MB, *,
                 launcher: Launcher):
        self.storage = storage
        self.launcher = launcher
        self.ttl = ttl_seconds
        self.time_limit = time_limit
        self.memory_mb = memory_mb
        self.store = storage.cache("workspaces", size_limit=STORE_BYTES)
        self.board = storage.cache("builds")
        self.tensors = cache_folder(storage.directory, TENSORS)
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
            self.launcher.start(self, job, status.claim)
        deadline = time.monotonic() + grace
        while status.state in ("queued", "running", "done") and time.monotonic() < deadline:
            found = self.ready(job.key)
            if found is not None:
                return found
            time.sleep(0.02)
            status = self.status(job.key) or status
        if status.state == "failed":
            raise BuildFailed(status)
        return status

    def forget_failure(self, key: str) -> None:
        """Drop a failed build's outcome (kept a minute so everyone waiting hears it), so the
        next request builds again at once: the user asked to try again."""
        with self.board.transact():
            status = self.status(key)
            if status is not None and status.state == "failed":
                self.board.delete(key)

    def save(self, key: str, workspace) -> None:
        """Store a finished workspace. In a cluster its pickle carries the weights and spilled
        tensors themselves: a server on another machine has not got the builder's files."""
        with self_contained_pickles(self.storage.clustered):
            self.store.set(key, workspace, expire=self.ttl)

    def ready(self, key: str):
        """The finished workspace from memory or the store, or None."""
        found = held(key)
        if found is None:
            if key not in self.store:
                return None
            try:
                with collector_paused():   # unpickling many small objects: the collector only slows it
                    found = self.store.get(key)
            except GraphLabError:    # a file it maps changed since (StoredTensorError)
                found = None
            if found is None:        # diskcache also says None when a file it maps is gone
                self.store.delete(key)   # so it is built again
            else:
                hold(key, found)
        return found

    def status(self, key: str) -> BuildStatus | None:
        """The build's status as every process sees it (None: no build is known)."""
        record = self.board.get(key)
        return None if record is None else BuildStatus(**record)

    def alive(self, status: BuildStatus) -> bool:
        """A build someone is still working on (or that still waits in the queue)."""
        if status.state == "queued":
            return status.age < self.launcher.queue_seconds
        return status.state == "running" and status.fresh

    def _claim(self, job: BuildJob) -> tuple[BuildStatus, bool]:
        """(status, True) when this call registered itself as the job's builder; (the standing
        status, False) when a live build, a fresh outcome or busy builders stand in the way."""
        with self.board.transact():
            current = self.status(job.key)
            if current is not None and (
                    self.alive(current)
                    or current.state == "failed" and current.recent
                    or current.state == "done" and current.recent and job.key in self.store):
                return current, False
            busy = self.launcher.busy(self)
            if busy >= MAX_RUNNING:
                return BuildStatus(job.key, job.label, "waiting",
                                   message=f"{busy} build{'s' if busy != 1 else ''} running"), False
            taken_over = current is not None and current.state in ("queued", "running")
            attempt = current.attempt if taken_over else 0   # counts builders lost on the way
            return self.publish(BuildStatus(job.key, job.label, "queued",
                                            claim=uuid.uuid4().hex, attempt=attempt)), True

    def publish(self, status: BuildStatus, **changes) -> BuildStatus:
        """Write the status with ``changes`` and a fresh heartbeat; outcomes expire soon."""
        status = BuildStatus(**{**asdict(status), **changes, "updated": time.time()})
        finished = status.state in ("done", "failed")
        self.board.set(status.key, asdict(status),
                       expire=OUTCOME_SECONDS if finished else self.ttl)
        return status

    def _keep(self, key: str, workspace) -> None:
        hold(key, workspace)
        self.save(key, workspace)


# ---- what a builder does, wherever it runs -----------------------------------------------------

def run_build(builds: Builds, job: BuildJob, plugins: list[str], claim: str) -> None:
    """Build ``job`` under ``claim`` in this (builder) process: the server's plugins, heartbeat,
    progress, the time limit, and the result (or the failure) in the shared storage.  A claim
    someone has since taken over, or a workspace already built, is left alone — a task the
    queue delivers twice builds once."""
    current = builds.status(job.key)
    if job.key in builds.store or current is not None and current.claim != claim \
            and builds.alive(current):
        return
    status = BuildStatus(job.key, job.label, "running", stage="importing the model",
                         claim=claim, builder=f"pid {os.getpid()} on {socket.gethostname()}",
                         attempt=(current.attempt if current is not None else 0) + 1)
    lock = threading.Lock()
    done = threading.Event()

    def publish(**changes) -> None:
        nonlocal status
        with lock:
            status = builds.publish(status, **changes)

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            try:
                publish()
            except (GraphLabError, MemoryError):   # storage away, memory at its limit: later
                pass

    def progress(index: int, total: int, name: str) -> None:
        publish(stage=f"pass {index + 1} of {total}: {name}", step=index + 1, total=total)

    publish()
    threading.Thread(target=heartbeat, daemon=True).start()
    started = time.monotonic()
    try:
        with time_limit(builds.time_limit), memory_limit(builds.memory_mb):
            load_sources(plugins)
            workspace = builds.build(job, progress)
        publish(stage="saving")
        builds.save(job.key, workspace)
        done.set()
        publish(state="done", stage="done")
        log.info("graphlab build done: %s (%s) in %.1f s, attempt %d, %s", job.label,
                 job.key[:12], time.monotonic() - started, status.attempt, status.builder)
    except Exception as err:  # noqa: BLE001 - every failure becomes the build's message
        done.set()
        publish(state="failed", message=user_message(err))
        log.info("graphlab build failed: %s (%s) after %.1f s, %s: %s", job.label, job.key[:12],
                 time.monotonic() - started, status.builder, status.message)


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise BuildTimeout in this thread after ``seconds`` (a builder's main thread; elsewhere,
    e.g. in a test's thread, the launcher's own limit is the only one)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(_signum, _frame):
        raise BuildTimeout(f"the build took longer than its {seconds:g} s limit and was "
                           f"stopped", hint="pick a smaller model or fewer passes, or ask the "
                                            "operator for a longer --build-seconds")

    previous = signal.signal(signal.SIGALRM, stop)
    # Again every half second: code that swallows exceptions broadly cannot outlive the limit.
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.5)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def memory_limit(megabytes: int) -> Iterator[None]:
    """Allocations that would take this process more than ``megabytes`` past its data size now
    fail (the data limit, RLIMIT_DATA: memory the process allocates, not the model files it maps
    read-only, so a big model's mapped weights do not count until a pass computes with them) and
    the build stops with BuildOutOfMemory.
    Only in a builder's main thread (the limit is the whole process's), on systems that have
    it; 0: no limit."""
    size = _data_size() if resource is not None else None
    if megabytes <= 0 or size is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = resource.getrlimit(resource.RLIMIT_DATA)
    ceiling = size + (megabytes << 20)
    if previous[1] != resource.RLIM_INFINITY:
        ceiling = min(ceiling, previous[1])
    resource.setrlimit(resource.RLIMIT_DATA, (ceiling, previous[1]))
    exceeded = False
    try:
        yield
    except MemoryError:
        exceeded = True
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, previous)
    if exceeded:
        raise BuildOutOfMemory(f"the build needed more than its {megabytes:,} MB memory limit "
                               f"and was stopped",
                               hint="pick a smaller model or fewer passes, or ask the operator "
                                    "for a larger --build-memory-mb")


def _data_size() -> int | None:
    """This process's data size in bytes (what RLIMIT_DATA counts); None: not Linux."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[5]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None
