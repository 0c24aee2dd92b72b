"""What every panel's callbacks share: the config, the workbench and the default view."""

from __future__ import annotations

import os
from dataclasses import dataclass

from compiler_core.passes import PRESETS

from .builds import BuildJob, BuildStatus
from .comparison import comparison_job
from .config import AppConfig
from .model_edits import edited_source
from .sessions import SessionStore
from .view_state import ViewState, from_query
from .workbench import Workbench, Workspace


@dataclass
class Services:
    config: AppConfig
    workbench: Workbench

    @classmethod
    def from_config(cls, config: AppConfig) -> "Services":
        sessions = SessionStore(config.storage, config.upload_ttl_seconds)
        return cls(config, Workbench(config, sessions))

    @property
    def default_state(self) -> ViewState:
        model = self.config.default_model
        if self.config.extra_model_path:
            model = os.path.basename(self.config.extra_model_path)
        return from_query(self.config.first_view, ViewState(model=model)).with_changes(
            model=model)

    def workspace(self, state: ViewState, upload: dict | str | None,
                  upload_b: dict | str | None = None) -> Workspace:
        """The built workspace of a view; ``upload`` is the browser's upload store (or its
        token) — only the browser that uploaded a model can name it; ``upload_b`` the store
        of its second upload, the model to compare with."""
        return self.workbench.built(self.workspace_job(state, upload, upload_b))

    def workspace_or_build(self, state: ViewState, upload: dict | str | None,
                           upload_b: dict | str | None = None) -> Workspace | BuildStatus:
        """For the navigation reducer: never waits for a build (see `builds`).  Unreadable
        bindings are refused here, before any build starts."""
        return self.workbench.built_or_building(self.workspace_job(state, upload, upload_b))

    def workspace_job(self, state: ViewState, upload, upload_b=None) -> BuildJob:
        """The build of the view's workspace (a comparison's, or a pipeline's)."""
        source = edited_source(self.workbench.source(state.model, _token(upload)), state.edits)
        sizes = state.bound.checked()
        if state.versus:
            return comparison_job(self.workbench, source, state.versus, _token(upload_b),
                                  state.pipeline, sizes, state.versus_after)
        return self.workbench.job(source, state.pipeline, sizes, state.target)

    def forget_failure(self, state: ViewState, upload: dict | str | None,
                       upload_b: dict | str | None = None) -> None:
        """The user asked to try the view's failed build again."""
        self.workbench.builds.forget_failure(self.workspace_job(state, upload, upload_b).key)

    def build_status(self, key: str) -> BuildStatus | None:
        return self.workbench.builds.status(key)

    def trouble(self) -> str | None:
        """What keeps this server from working for everyone right now (None: nothing)."""
        url = self.config.redis_url
        problem = self.config.storage.trouble()
        if problem or url is None:
            return problem
        from .cluster import live_workers

        if not live_workers(url):
            return ("no build worker is running: views not built yet wait until one starts "
                    "(`graphlab worker --redis URL`)")
        return None


def _token(upload: dict | str | None) -> str | None:
    return upload.get("token") if isinstance(upload, dict) else upload


def preset_names() -> list[str]:
    """Pipeline presets, in the order the catalog defines them."""
    return list(PRESETS)
