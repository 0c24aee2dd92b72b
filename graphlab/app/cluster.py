"""The cluster launcher: builds as Celery tasks on Redis, run by `graphlab worker` processes
on any number of machines (`serve --redis URL`).

The task's message is JSON and names a claim; the `BuildJob` a local builder would get waits in
Redis under that claim (pickled, like the workspaces the servers read back: Redis must be
private to the cluster either way), and the worker runs the same `builds.run_build`.  Faults:
- a worker process killed mid-build: the task is acknowledged only when it ends
  (``acks_late``) and handed back to the queue when its process is lost
  (``reject_on_worker_lost``), so another worker runs it; the board's record counts the
  attempts and a build that lost its worker twice fails with a message instead of killing
  workers forever;
- a whole worker machine gone: its builds' heartbeats go stale and the next request for the
  view queues the build again (the old task, if Redis ever delivers it, finds the build
  taken over and does nothing);
- the time limit: the builder stops itself (`builds.time_limit`); a build stuck in native
  code is killed by Celery's hard limit a little later, and the worker's main process writes
  the failure on the board;
- the memory limit: the builder's allocations past it fail and the build stops with a
  message (`builds.memory_limit`); the worker process lives on.
Workers announce themselves in Redis every few seconds, so a server can tell a user that no
worker runs rather than leave a build waiting in silence.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from functools import lru_cache

from celery import Celery, Task
from celery.exceptions import TimeLimitExceeded

from compiler_core.plugins import loaded_sources

from .builds import Builds, BuildJob, BuildStatus, run_build
from .redis_cache import PREFIX, client, reaching
from .shared_storage import SharedStorage

TASK = "graphlab.build"
JOBS = "jobs"             # the shared cache where queued jobs wait, by claim
QUEUE = "graphlab"
QUEUE_SECONDS = 900.0     # a build queued this long without a worker taking it is queued again
HARD_MARGIN = 30          # seconds past the time limit before Celery kills a stuck builder
MAX_ATTEMPTS = 2          # builders a build may lose (killed, out of memory) before it fails
ANNOUNCE_SECONDS = 3.0    # a worker says it is alive this often
WORKERS_KEY = f"{PREFIX}:workers"
SEND_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5}  # a fresh connection



class CeleryLauncher:
    queue_seconds = QUEUE_SECONDS

    def __init__(self, redis_url: str):
        self.redis_url = redis_url

    def busy(self, _builds: Builds) -> int:
        return 0   # the queue holds every build until a worker is free: nobody is turned away

    def start(self, builds: Builds, job: BuildJob, claim: str) -> None:
        """The job waits in Redis under its claim; the message names the claim only."""
        status = builds.status(job.key) or BuildStatus(job.key, job.label, "queued", claim=claim)
        builds.publish(status, stage="waiting in the queue for a free build worker")
        jobs = builds.storage.cache(JOBS)
        jobs.set(claim, (job, loaded_sources()),
                 expire=QUEUE_SECONDS + builds.time_limit + HARD_MARGIN)
        args = (builds.storage.directory, builds.storage.redis_url, builds.ttl,
                builds.time_limit, builds.memory_mb, claim)
        try:
            with reaching(self.redis_url):
                celery_app(self.redis_url).send_task(
                    TASK, args=args, queue=QUEUE, retry=True, retry_policy=SEND_RETRY,
                    time_limit=builds.time_limit + HARD_MARGIN)
        except Exception as err:  # noqa: BLE001 - kombu's errors: the build cannot be queued
            builds.publish(status, state="failed", retry=True,
                           message=f"the build could not be queued: {err}")


class BuildTask(Task):
    """`run_build` in a worker, and the failures only the worker's main process sees."""

    name = TASK

    def run(self, directory: str, redis_url: str, ttl: int, seconds: float, memory_mb: int,
            claim: str):
        builds = _builds(directory, redis_url, ttl, seconds, memory_mb)
        queued = builds.storage.cache(JOBS).get(claim)
        if queued is None:   # expired: the next request for the view queues it again
            return
        job, plugins = queued
        current = builds.status(job.key)
        if current is not None and current.claim == claim and current.state == "running" \
                and current.attempt >= MAX_ATTEMPTS:
            builds.publish(current, state="failed", retry=True, message=(
                f"the build lost its worker {current.attempt} times (killed, or out of "
                f"memory: {current.builder}) and was not tried again"))
            return
        run_build(builds, job, plugins, claim)

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """Celery's hard time limit killed the builder: say so on the board."""
        if not isinstance(exc, TimeLimitExceeded):
            return
        directory, redis_url, ttl, seconds, memory_mb, claim = args
        builds = _builds(directory, redis_url, ttl, seconds, memory_mb)
        queued = builds.storage.cache(JOBS).get(claim)
        current = None if queued is None else builds.status(queued[0].key)
        if current is not None and current.claim == claim:
            builds.publish(current, state="failed", message=(
                f"the build took longer than its {seconds:g} s limit and was stopped"))


def _builds(directory: str, redis_url: str, ttl: int, seconds: float,
            memory_mb: int) -> Builds:
    return Builds(SharedStorage(directory, redis_url), ttl, seconds, memory_mb,
                  launcher=CeleryLauncher(redis_url))


@lru_cache(maxsize=4)
def celery_app(redis_url: str) -> Celery:
    app = Celery("graphlab", broker=redis_url, set_as_current=False)
    app.conf.update(
        task_serializer="json", accept_content=["json"], task_ignore_result=True,
        task_acks_late=True, task_reject_on_worker_lost=True, worker_prefetch_multiplier=1,
        task_default_queue=QUEUE, broker_connection_timeout=2,
        broker_connection_retry_on_startup=True)
    app.register_task(BuildTask())
    return app


def run_worker(redis_url: str, concurrency: int) -> None:
    """`graphlab worker`: a Celery worker of the build queue (blocks until stopped)."""
    import compiler_core.passes  # noqa: F401 - imported once here, shared by the forked children

    app = celery_app(redis_url)
    name = f"graphlab-{os.getpid()}@{socket.gethostname()}"
    threading.Thread(target=_announce, args=(redis_url, name), daemon=True).start()
    app.worker_main(["worker", "--loglevel=INFO", f"--concurrency={concurrency}",
                     "--pool=prefork", f"--hostname={name}", f"--queues={QUEUE}",
                     "--without-gossip", "--without-mingle", "--without-heartbeat"])


def _announce(redis_url: str, name: str) -> None:
    """Say this worker is alive, every few seconds, for the servers' banner."""
    while True:
        try:
            client(redis_url).set(f"{WORKERS_KEY}:{name}", os.getpid(),
                                  ex=int(ANNOUNCE_SECONDS * 3))
        except Exception:  # noqa: BLE001 - Redis away: the worker's own reconnect logs it
            pass
        time.sleep(ANNOUNCE_SECONDS)


def live_workers(redis_url: str) -> list[str]:
    """The workers heard from in the last few seconds."""
    with reaching(redis_url):
        keys = list(client(redis_url).scan_iter(f"{WORKERS_KEY}:*"))
    return sorted(key.decode()[len(WORKERS_KEY) + 1:] for key in keys)
