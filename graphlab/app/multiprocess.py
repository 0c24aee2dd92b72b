"""Running the app under gunicorn: one worker process with threads for one user, or several
worker processes for a room.

Each worker builds its own app from the same config; nothing per-user lives in a process (the
view is in the URL, uploads are on disk), so any worker can answer any request.

Why gunicorn even for one user: Flask's own server is a development server (it says so in red
on every start) and gunicorn is already what a room runs, so one server, with the same limits
and timeouts, serves every mode.  One worker gets threads (`gthread`): a page fires a dozen
callbacks at once, and a request that waits for a build must not hold the others up.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from gunicorn.app.base import BaseApplication

from .config import AppConfig

THREADS_OF_ONE_WORKER = 8
MAX_SOCKET_PATH = 100   # a Unix socket's path must fit in sun_path (108 bytes on Linux)


class _GraphLabServer(BaseApplication):
    def __init__(self, config: AppConfig, options: dict):
        self.app_config = config
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if key in self.cfg.settings:   # an older gunicorn lacks the newer settings
                self.cfg.set(key, value)

    def load(self):
        from .factory import create_app

        return create_app(self.app_config).server


def gunicorn_options(config: AppConfig, host: str, port: int, workers: int,
                     when_ready: Callable[[], None] | None = None,
                     in_each_worker: Callable[[], None] | None = None) -> dict:
    """The settings `serve_with_gunicorn` runs with (a function, so tests can read them)."""
    options = {
        "bind": f"{host}:{port}", "workers": workers,
        # Pipelines on big models take seconds; the timeout must allow the first one to finish.
        "timeout": 300, "preload_app": False,
        # A shared link carries the pattern editor's text: allow gunicorn's longest request line.
        "limit_request_line": 8190,
        # Its start-up lines repeat the address `graphlab serve` prints once it listens;
        # warnings and errors (a worker killed, a port in use) still show.
        "loglevel": "warning",
        **_control_socket(config.cache_dir, port),
    }
    if workers == 1:
        options.update(worker_class="gthread", threads=THREADS_OF_ONE_WORKER)
    if when_ready is not None:
        options["when_ready"] = lambda _arbiter: when_ready()
    if in_each_worker is not None:
        options["post_worker_init"] = lambda _worker: in_each_worker()
    return options


def _control_socket(cache_dir: str, port: int) -> dict:
    """gunicorn's control socket (for `gunicornc`) in this server's cache dir, one per port,
    instead of its default `~/.gunicorn/gunicorn.ctl` that every server of the user shares;
    no socket when that path is too long for one."""
    path = os.path.join(os.path.abspath(cache_dir), f"gunicorn-{port}.ctl")
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        return {"control_socket_disable": True}
    return {"control_socket": path}


def serve_with_gunicorn(config: AppConfig, host: str, port: int, workers: int,
                        when_ready: Callable[[], None] | None = None,
                        in_each_worker: Callable[[], None] | None = None) -> None:
    """Serve until stopped; ``when_ready`` runs once the address is bound, ``in_each_worker``
    in each worker process once it has started."""
    os.makedirs(config.cache_dir, exist_ok=True)
    _GraphLabServer(config, gunicorn_options(config, host, port, workers, when_ready,
                                             in_each_worker)).run()
