"""Running the app under gunicorn with several worker processes.

Each worker builds its own app from the same config; nothing per-user lives in a process (the
view is in the URL, uploads are on disk), so any worker can answer any request.
"""

from __future__ import annotations

from gunicorn.app.base import BaseApplication

from .config import AppConfig


class _GraphLabServer(BaseApplication):
    def __init__(self, config: AppConfig, options: dict):
        self.app_config = config
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        from .factory import create_app

        return create_app(self.app_config).server


def serve_with_gunicorn(config: AppConfig, host: str, port: int, workers: int) -> None:
    # Pipelines on big models take seconds; the timeout must allow the first one to finish.
    # A shared link carries the pattern editor's text: allow gunicorn's longest request line.
    _GraphLabServer(config, {"bind": f"{host}:{port}", "workers": workers, "timeout": 300,
                             "preload_app": False, "limit_request_line": 8190}).run()
