"""The one-machine launcher: each build in a fresh builder process of this machine; and the
choice of launcher for a storage (`launcher_for`).

Builders are forked from a clean single-threaded server process (multiprocessing's
"forkserver"), never from a threaded web server.  A thread watches each one; a builder that
dies without saying so (killed, out of memory) is reported by its exit code at once.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from functools import lru_cache

from compiler_core.plugins import loaded_sources

from .builds import STALE_SECONDS, Builds, BuildJob, BuildStatus, run_build
from .shared_storage import SharedStorage


def launcher_for(storage: SharedStorage):
    """Celery workers for a cluster's storage (`serve --redis`), else builder processes of
    this machine."""
    if storage.clustered:
        from .cluster import CeleryLauncher   # celery: installed with the cluster extra only

        return CeleryLauncher(storage.redis_url)
    return LocalLauncher()


class LocalLauncher:
    queue_seconds = STALE_SECONDS   # a queued build starts within moments here

    def busy(self, builds: Builds) -> int:
        """Builds running on this machine (the board is this machine's)."""
        running = 0
        for key in list(builds.board):
            record = builds.board.get(key)
            if record and record["state"] in ("queued", "running") \
                    and time.time() - record["updated"] < STALE_SECONDS:
                running += 1
        return running

    def start(self, builds: Builds, job: BuildJob, claim: str) -> None:
        """Start and watch the builder from a thread: the first start also starts the fork
        server, which takes a moment a request should not wait for."""
        threading.Thread(target=_run_builder, args=(builds, job, claim), daemon=True,
                         name=f"graphlab-watch-{job.key}").start()


@lru_cache(maxsize=1)
def _context():
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload(["graphlab.app.builds", "compiler_core.passes"])
    return context


def _run_builder(builds: Builds, job: BuildJob, claim: str) -> None:
    """Run the builder; if it dies without saying so (killed, out of memory), say it."""
    process = _context().Process(
        target=_build_in_child,
        args=(builds.storage, builds.ttl, builds.time_limit, builds.memory_mb, job,
              loaded_sources(), claim),
        name=f"graphlab-build-{job.key}")
    try:
        process.start()
    except Exception as err:  # noqa: BLE001 - e.g. no memory or processes left
        builds.publish(BuildStatus(job.key, job.label, "failed", retry=True),
                       message=f"cannot start a builder: {err}")
        return
    process.join()
    status = builds.status(job.key)
    if process.exitcode != 0 and status is not None and status.state in ("queued", "running"):
        code = process.exitcode
        how = f"was killed (signal {-code}; out of memory?)" if code < 0 else \
            f"stopped unexpectedly (exit code {code})"
        builds.publish(status, state="failed", message=f"the build {how}", retry=True)
    process.close()


def _build_in_child(storage: SharedStorage, ttl: int, seconds: float, memory_mb: int,
                    job: BuildJob, plugins: list[str], claim: str) -> None:
    run_build(Builds(storage, ttl, seconds, memory_mb, launcher=LocalLauncher()), job, plugins,
              claim)
